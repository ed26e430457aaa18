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

**The star** (``rules.is_star``) is drawn as the star, north (cell 0, player 0's home) at the
top, one text row per axial ``r``, a cell ``(q, r)`` at ``2q + r`` half-cells; its cells have no
names but their indices (RULES.md's numbering), which :func:`render_board` can draw as a second
star beside the board.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from .notation import NotationError, Position, excerpt, parse_int, parse_move
from .rules import PASS, Rules

__all__ = [
    "cell_name",
    "format_move",
    "parse_cell",
    "parse_human_move",
    "render_board",
    "render_position",
    "use_color",
]

Move = tuple[int, int]

_PIECE = {-1: ".", 0: "x", 1: "o", 2: "2", 3: "3", 4: "4", 5: "5"}  # the star seats up to 6
_ANSI = {0: "\x1b[1;31m", 1: "\x1b[1;34m", 2: "\x1b[1;32m", 3: "\x1b[1;33m", 4: "\x1b[1;35m", 5: "\x1b[1;36m",
         -1: "\x1b[2m"}  # x red, o blue, empty dim
_REVERSE, _RESET = "\x1b[7m", "\x1b[0m"
_CELL_TOKEN = r"\d+(?:\.\d+)?"
_MOVE_RE = re.compile(rf"({_CELL_TOKEN})\s*(?:->|-|\s)\s*({_CELL_TOKEN})")


# ---------------------------------------------------------------------------------------------
# Cell names and moves
# ---------------------------------------------------------------------------------------------


def _row_cells(rules: Rules, row: int) -> list[int]:
    """Cells of diamond row ``row`` (1-based, top first), left to right."""
    n, d = rules.n, row - rules.n  # d = r - c
    return [(c + d) * n + c for c in range(max(0, -d), min(n, n - d))]


def cell_name(rules: Rules, cell: int) -> str:
    """Human name ``"R.P"`` of a cell index (on the star: the index itself)."""
    if not 0 <= cell < rules.cells:
        raise NotationError(f"cell {cell} is off the board (valid 0..{rules.cells - 1})")
    if rules.is_star:
        return str(cell)
    r, c = divmod(cell, rules.n)
    return f"{r - c + rules.n}.{min(r, c) + 1}"


def parse_cell(rules: Rules, text: str) -> int:
    """Cell index of a human name ``"R.P"`` or of a plain index ``"45"``."""
    text = text.strip()
    rows = 2 * rules.n - 1
    if re.fullmatch(r"[0-9]{1,9}", text):  # ASCII digits only: int() also reads '٣' and chokes on 5000 digits
        cell = parse_int(text, "cell", maximum=10**9)
        if cell >= rules.cells:
            raise NotationError(f"cell {cell} is off the board (valid 0..{rules.cells - 1})")
        return cell
    m = re.fullmatch(r"([0-9]{1,9})\.([0-9]{1,9})", text)
    if rules.is_star:
        valid = f"0..{rules.cells - 1}"
        raise NotationError(f"cell {excerpt(text)} must be a cell index {valid} (the star's cells are numbered)")
    if not m:
        raise NotationError(f"cell {excerpt(text)} must be 'row.position' like '{rows}.1' or a cell index like '0'")
    row, pos = (parse_int(m.group(i), "cell", maximum=10**9) for i in (1, 2))
    if not 1 <= row <= rows:
        raise NotationError(f"cell {text!r}: row {row} is off the board (rows 1..{rows}, 1 at the top)")
    cells = _row_cells(rules, row)
    if not 1 <= pos <= len(cells):
        raise NotationError(
            f"cell {text!r}: row {row} has {len(cells)} cell{'s' if len(cells) > 1 else ''} "
            f"(positions 1..{len(cells)} from the left)"
        )
    return cells[pos - 1]


def format_move(rules: Rules, move: Move | Sequence[int], style: str = "human") -> str:
    """Write a move as ``"R.P-R.P"`` (``style="human"``) or ``"s-e"`` (``"index"``); ``"pass"``.
    The star's cells have no other names: both styles write ``"s-e"`` there."""
    s, e = int(move[0]), int(move[1])
    if (s, e) == PASS:
        return "pass"
    if style == "human":
        return f"{cell_name(rules, s)}-{cell_name(rules, e)}"
    if style == "index":
        for cell in (s, e):
            if not 0 <= cell < rules.cells:
                raise NotationError(f"cell {cell} is off the board (valid 0..{rules.cells - 1})")
        return f"{s}-{e}"
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
    if not m and rules.is_star:
        raise NotationError(f"move {excerpt(value)} must be cell indices 'from-to' (e.g. '3-14'), or 'pass'")
    if not m:
        rows = 2 * rules.n - 1
        raise NotationError(
            f"move {excerpt(value)} must be 'row.pos-row.pos' (e.g. '{rows - 1}.1-{rows - 3}.1'), "
            f"cell indices 'from-to' (e.g. '{rules.cells - 2 * rules.n}-{rules.cells - 4 * rules.n}'), or 'pass'"
        )
    return parse_cell(rules, m.group(1)), parse_cell(rules, m.group(2))


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------


def use_color(stream: TextIO | None = None) -> bool:
    """Whether to colour output for ``stream`` (stdout by default): a TTY and no ``NO_COLOR``."""
    stream = sys.stdout if stream is None else stream
    return hasattr(stream, "isatty") and stream.isatty() and "NO_COLOR" not in os.environ


def _diamond(rules: Rules, field: Callable[[int], str], width: int) -> list[str]:
    """Rows of the diamond; ``field(cell)`` is a ``width``-wide text (ANSI codes allowed)."""
    half = (width + 2) // 2  # half-cell step in characters: a cell step leaves >= 1 blank
    gap = " " * (2 * half - width)
    lines = []
    for row in range(1, 2 * rules.n):
        indent = abs(row - rules.n) * half
        lines.append(" " * indent + gap.join(field(i) for i in _row_cells(rules, row)))
    return lines


def _star(rules: Rules, field: Callable[[int], str], width: int) -> list[str]:
    """Rows of the star, north at the top; ``field(cell)`` is a ``width``-wide text (ANSI allowed)."""
    geo = rules.geometry
    half = (width + 2) // 2
    gap = " " * (2 * half - width)
    left = min(2 * q + r for q, r in geo.coords)  # the westmost half-cell column
    rows: dict[int, list[int]] = {}
    for cell, (q, r) in enumerate(geo.coords):  # cells run by r, then q: rows come out in order
        rows.setdefault(r, []).append(cell)
    lines = []
    for cells in rows.values():  # every row of the star is a contiguous run of q
        q, r = geo.coords[cells[0]]
        lines.append(" " * ((2 * q + r - left) * half) + gap.join(field(i) for i in cells))
    return lines


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
        text = _PIECE[owner]
        if not color:
            if i in marks:
                text = text.upper() if i == moved_to and owner != -1 else "*"
            return text
        return f"{_REVERSE if i in marks else ''}{_ANSI[owner]}{text}{_RESET}"

    shape = _star if rules.is_star else _diamond
    lines = shape(rules, piece, 1)
    # Pad by visible width (ANSI codes take no room on screen) so the margins line up.
    visible = shape(rules, lambda i: ".", 1)
    board_width = max(map(len, visible))
    lines = [line + " " * (board_width - len(v)) for line, v in zip(lines, visible)]
    if labels:
        width = len(str(rules.cells - 1))
        index_lines = shape(rules, lambda i: str(i).rjust(width), width)
        sep = " " * (4 if rules.is_star else 5)  # the star fits 80 columns with its index star
        lines = [f"{a}{sep}{b}".rstrip() for a, b in zip(lines, index_lines)]
    if row_numbers and not rules.is_star:
        digits = len(str(2 * rules.n - 1))
        lines = [f"{j + 1:>{digits}}  {line}" for j, line in enumerate(lines)]
    return "\n".join(line.rstrip() for line in lines)


def render_position(rules: Rules, position: Position, **options: object) -> str:
    """:func:`render_board` under a header line naming the side to move and the ply."""
    side = f"{_PIECE[position.to_move]} (player {position.to_move})"
    header = f"{rules.name}: {side} to move, ply {position.ply}"
    return header + "\n" + render_board(rules, position.board, **options)  # type: ignore[arg-type]
