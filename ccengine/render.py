"""The board as people see it, and moves in a notation people can type.

**The diamond.** The ``n x n`` rhombus is drawn as the real board: one text row per value of
``r - c`` (``2n - 1`` rows, widths ``1, 2, .., n, .., 2, 1``), player 1's home (``o``) at the
top, player 0's (``x``) at the bottom. Within a row, cells run left to right by increasing ``c``
(and ``r``); a cell's horizontal place is ``r + c`` half-cells, so the six hex neighbours of a
cell are the two beside it in its row and the two above and two below it.

**Human cell names** ``"R.P"``: ``R`` is the diamond row, 1 (top, player 1's home tip) to
``2n - 1`` (bottom, player 0's tip), ``P`` the position within the row from the left, from 1.
For cell ``(r, c)``: ``R = r - c + n`` and ``P = min(r, c) + 1``. This is the seed paper's
code's own human coordinate (``np_index_to_human_coord``), so its printed games read the same.
On cc49 player 0's tip ``(6, 0)`` is ``13.1`` and player 1's tip ``(0, 6)`` is ``1.1``.

**Moves** are written ``"R.P-R.P"`` (e.g. ``"12.1-10.1"``); :func:`parse_human_move` also takes
cell indices ``"s-e"`` (``"41-27"``), either separated by ``-``, ``->`` or spaces, and ``"pass"``.

**The star** is drawn as the star, north (cell 0, player 0's home) at the top, one text row per
axial ``r``, a cell ``(q, r)`` at ``2q + r`` half-cells; its cells have no names but their
indices (RULES.md's numbering), which :func:`render_board` can draw as a second star beside the
board. Both boards are drawn from their geometry's ``drawn`` places by the same code.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, TextIO

from .notation import NotationError, Position, excerpt, parse_int, parse_move
from .rules import PASS, Rules

__all__ = [
    "PIECE_MARKS",
    "cell_name",
    "format_move",
    "move_forms",
    "parse_cell",
    "parse_human_move",
    "parse_human_path",
    "render_board",
    "render_position",
    "use_color",
]

Move = tuple[int, int]

#: How the board shows each player's pieces (``-1``: an empty cell); the star seats up to 6.
PIECE_MARKS = {-1: ".", 0: "x", 1: "o", 2: "2", 3: "3", 4: "4", 5: "5"}
_ANSI = {0: "\x1b[1;31m", 1: "\x1b[1;34m", 2: "\x1b[1;32m", 3: "\x1b[1;33m", 4: "\x1b[1;35m", 5: "\x1b[1;36m",
         -1: "\x1b[2m"}  # x red, o blue, empty dim
_REVERSE, _RESET = "\x1b[7m", "\x1b[0m"
_CELL_TOKEN = r"\d+(?:\.\d+)?"
_MOVE_RE = re.compile(rf"({_CELL_TOKEN})\s*(?:->|-|\s)\s*({_CELL_TOKEN})")
_BETWEEN_CELLS = re.compile(r"\s*(?:->|-|\s)\s*")
#: The widest line the board and its numbers beside it should take (a terminal's).
_COLUMNS = 80


# ---------------------------------------------------------------------------------------------
# Cell names and moves
# ---------------------------------------------------------------------------------------------


def _has_names(rules: Rules) -> bool:
    """Whether the cells have names ``"R.P"`` besides their indices: the notation differs by board
    (the rhombus's diamond rows, the seed paper's code's; the star has its indices only, RULES.md)."""
    return not rules.is_star


@lru_cache(maxsize=32)
def _rows(geometry: Any) -> tuple[tuple[int, ...], ...]:
    """The cells by drawn row (the geometry's ``drawn``), the top row first, each left to right."""
    rows: dict[int, list[int]] = {}
    for cell in sorted(range(geometry.cells), key=lambda i: geometry.drawn[i]):
        rows.setdefault(geometry.drawn[cell][0], []).append(cell)
    return tuple(tuple(cells) for _, cells in sorted(rows.items()))


@lru_cache(maxsize=32)
def _names(geometry: Any) -> tuple[str, ...]:
    """``"R.P"`` of every cell: its drawn row from the top and its place in the row, from 1."""
    names = [""] * geometry.cells
    for row, cells in enumerate(_rows(geometry), 1):
        for place, cell in enumerate(cells, 1):
            names[cell] = f"{row}.{place}"
    return tuple(names)


def cell_name(rules: Rules, cell: int) -> str:
    """Human name ``"R.P"`` of a cell index (on the star: the index itself)."""
    if not 0 <= cell < rules.cells:
        raise NotationError(f"cell {cell} is off the board (valid 0..{rules.cells - 1})")
    return _names(rules.geometry)[cell] if _has_names(rules) else str(cell)


def parse_cell(rules: Rules, text: str) -> int:
    """Cell index of a human name ``"R.P"`` or of a plain index ``"45"``."""
    text = text.strip()
    rows = _rows(rules.geometry)
    if re.fullmatch(r"[0-9]{1,9}", text):  # ASCII digits only: int() also reads '٣' and chokes on 5000 digits
        cell = parse_int(text, "cell", maximum=10**9)
        if cell >= rules.cells:
            raise NotationError(f"cell {cell} is off the board (valid 0..{rules.cells - 1})")
        return cell
    m = re.fullmatch(r"([0-9]{1,9})\.([0-9]{1,9})", text)
    if not _has_names(rules):
        valid = f"0..{rules.cells - 1}"
        raise NotationError(f"cell {excerpt(text)} must be a cell index {valid} (the star's cells are numbered)")
    if not m:
        raise NotationError(
            f"cell {excerpt(text)} must be 'row.position' like '{len(rows)}.1' or a cell index like '0'"
        )
    row, pos = (parse_int(m.group(i), "cell", maximum=10**9) for i in (1, 2))
    if not 1 <= row <= len(rows):
        raise NotationError(f"cell {text!r}: row {row} is off the board (rows 1..{len(rows)}, 1 at the top)")
    cells = rows[row - 1]
    if not 1 <= pos <= len(cells):
        raise NotationError(
            f"cell {text!r}: row {row} has {len(cells)} cell{'s' if len(cells) > 1 else ''} "
            f"(positions 1..{len(cells)} from the left)"
        )
    return cells[pos - 1]


def move_forms(rules: Rules) -> str:
    """How a person writes a move on this board, for help texts."""
    if _has_names(rules):
        return "'R.P-R.P' (diamond row.position) or 's-e' (cell indices, numbered on the right)"
    return "'s-e' (the cell numbers of the star on the right)"


def format_move(rules: Rules, move: Move | Sequence[int], style: str = "human") -> str:
    """Write a move ``(s, e)``, or a hop chain's path ``(s, a, ..., e)``, as its cells joined by
    ``-``: ``"R.P-R.P"`` (``style="human"``) or ``"s-e"`` (``"index"``); the pass as ``"pass"``.
    The star's cells have no other names: both styles write indices there."""
    cells = [int(c) for c in move]
    if tuple(cells) == PASS:
        return "pass"
    if style == "human":
        return "-".join(cell_name(rules, cell) for cell in cells)
    if style == "index":
        for cell in cells:
            if not 0 <= cell < rules.cells:
                raise NotationError(f"cell {cell} is off the board (valid 0..{rules.cells - 1})")
        return "-".join(map(str, cells))
    raise ValueError(f"style {style!r} is unknown; valid: human, index")


def parse_human_move(rules: Rules, value: object) -> Move:
    """Read a move: ``"R.P-R.P"``, ``"s-e"`` (or mixed, ``->`` or spaces between), ``"pass"``.

    Non-strings (``[s, e]``, ``(s, e)``) go to :func:`ccengine.notation.parse_move`. Only the
    form is checked (two cells on the board); legality is the state's business. Malformed input
    raises :class:`~ccengine.notation.NotationError` saying what is wrong.
    """
    if not isinstance(value, str):
        return parse_move(rules, value)
    text = value.strip()
    if text.lower() == "pass":
        return PASS
    m = _MOVE_RE.fullmatch(text)
    if not m and not _has_names(rules):
        raise NotationError(f"move {excerpt(value)} must be cell indices 'from-to' (e.g. '3-14'), or 'pass'")
    if not m:
        rows = 2 * rules.n - 1
        raise NotationError(
            f"move {excerpt(value)} must be 'row.pos-row.pos' (e.g. '{rows - 1}.1-{rows - 3}.1'), "
            f"cell indices 'from-to' (e.g. '{rules.cells - 2 * rules.n}-{rules.cells - 4 * rules.n}'), or 'pass'"
        )
    return parse_cell(rules, m.group(1)), parse_cell(rules, m.group(2))


def parse_human_path(rules: Rules, text: str) -> tuple[int, ...]:
    """Read a move as a person types it: its two ends, or a hop chain's whole path, each cell a
    name ``"R.P"`` or an index, joined by ``-``, ``->`` or spaces; or ``"pass"`` (``(-1, -1)``).

    Only the form is checked (two to ``cells`` cells on the board); the move is
    ``(path[0], path[-1])``, and whether it and its path are legal is the state's business.
    """
    text = text.strip()
    if text.lower() == "pass":
        return PASS
    fields = _BETWEEN_CELLS.split(text)
    if not 2 <= len(fields) <= rules.cells:
        raise NotationError(f"move {excerpt(text)} must be {move_forms(rules)}, or a hop chain's path 's-a-b-e'")
    try:
        return tuple(parse_cell(rules, field) for field in fields)
    except NotationError as exc:
        raise NotationError(f"move {excerpt(text)}: {exc}") from None


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------


def use_color(stream: TextIO | None = None) -> bool:
    """Whether to colour output for ``stream`` (stdout by default): a TTY and no ``NO_COLOR``."""
    stream = sys.stdout if stream is None else stream
    return hasattr(stream, "isatty") and stream.isatty() and "NO_COLOR" not in os.environ


def _draw(rules: Rules, field: Callable[[int], str], width: int) -> list[str]:
    """Rows of the board as drawn (the geometry's ``drawn``); ``field(cell)`` is a ``width``-wide
    text (ANSI codes allowed)."""
    drawn = rules.geometry.drawn
    half = (width + 2) // 2  # half-cell step in characters: a cell step leaves >= 1 blank
    gap = " " * (2 * half - width)
    left = min(column for _, column in drawn)  # the leftmost half-cell column
    # within a row the cells lie two half-cells apart
    rows = _rows(rules.geometry)
    return [" " * ((drawn[cells[0]][1] - left) * half) + gap.join(field(i) for i in cells) for cells in rows]


def render_board(
    rules: Rules,
    board: Sequence[int],
    *,
    last_move: Move | Sequence[int] | None = None,
    labels: bool = False,
    row_numbers: bool = True,
    color: bool | None = False,
) -> str:
    """The board as a diamond of text, player 1 (``o``) at the top, player 0 (``x``) at the bottom;
    the star as a star, player 0 (``x``) at the top (north), player 1 (``o``) at the bottom.

    - ``last_move``: its start cell is shown ``*`` and the moved piece in capitals (``X``/``O``);
      with colour, both in reverse video instead.
    - ``labels``: a second diamond to the right gives every cell's index (for ``"s-e"`` moves).
    - ``row_numbers``: the diamond row ``R`` of the human notation ``"R.P"`` in the left margin
      (the star has no rows in its notation: none there).
    - ``color``: ANSI colours (``x`` red, ``o`` blue); off by default, ``None`` = :func:`use_color`.
    """
    if len(board) != rules.cells:
        raise ValueError(f"board has {len(board)} cells, the rules need {rules.cells}")
    color = use_color() if color is None else color
    marks = set() if last_move is None or tuple(last_move) == PASS else {int(last_move[0]), int(last_move[1])}
    moved_to = int(last_move[1]) if marks else -1

    def piece(i: int) -> str:
        owner = int(board[i])
        text = PIECE_MARKS[owner]
        if not color:
            if i in marks:
                text = text.upper() if i == moved_to and owner != -1 else "*"
            return text
        return f"{_REVERSE if i in marks else ''}{_ANSI[owner]}{text}{_RESET}"

    lines = _draw(rules, piece, 1)
    # Pad by visible width (ANSI codes take no room on screen) so the margins line up.
    visible = _draw(rules, lambda i: ".", 1)
    board_width = max(map(len, visible))
    lines = [line + " " * (board_width - len(v)) for line, v in zip(lines, visible)]
    margin = len(str(len(lines))) + 2 if row_numbers and _has_names(rules) else 0
    if labels:
        width = len(str(rules.cells - 1))
        index_lines = _draw(rules, lambda i: str(i).rjust(width), width)
        # five blanks between, fewer where that keeps the lines within a terminal's width (the star)
        room = _COLUMNS - margin - board_width - max(map(len, index_lines))
        sep = " " * max(1, min(5, room))
        lines = [f"{a}{sep}{b}".rstrip() for a, b in zip(lines, index_lines)]
    if margin:  # the row numbers of the "R.P" names
        lines = [f"{j + 1:>{margin - 2}}  {line}" for j, line in enumerate(lines)]
    return "\n".join(line.rstrip() for line in lines)


def render_position(rules: Rules, position: Position, **options: object) -> str:
    """:func:`render_board` under a header line naming the side to move and the ply."""
    side = f"{PIECE_MARKS[position.to_move]} (player {position.to_move})"
    header = f"{rules.name}: {side} to move, ply {position.ply}"
    return header + "\n" + render_board(rules, position.board, **options)  # type: ignore[arg-type]
