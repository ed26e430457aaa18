"""Positions and moves as text (RULES.md "Positions and moves as text").

The position's text format is the board's (``_TEXT_FORMATS``): on the rhombus
``rows/separated/by/slashes side [ply]``, one character per cell (``.`` empty, ``x`` player 0,
``o`` player 1), rows from ``r = 0`` to ``r = n - 1``; on the star COMPACT121 (below). Every
reader here raises :class:`NotationError` with a message that says what is wrong; none of them
changes any state.

Every number that comes from outside (a position's ply, a move's cells, the engine protocol's
``go nodes``, the command line's counts, what the browser interface is sent) is read by
:func:`parse_int` (a ply by :func:`parse_ply`) or :func:`parse_positive_float`: ASCII digits
only (``str.isdigit`` and ``int`` accept ``'²'`` or Arabic-Indic digits), a ``-`` only to be
judged by the range, and a range. Error messages show at most a short :func:`excerpt` of what
they were given.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .rules import PASS, Rules

__all__ = [
    "NotationError",
    "Position",
    "excerpt",
    "format_compact121",
    "format_position",
    "format_star_path",
    "parse_compact121",
    "parse_int",
    "parse_move",
    "parse_move_path",
    "parse_ply",
    "parse_position",
    "parse_positive_float",
    "parse_star_path",
    "start_position",
]

_CELL_CHARS = {".": -1, "x": 0, "o": 1}
_CHAR_OF = {-1: ".", 0: "x", 1: "o"}
_SIDE = {"x": 0, "o": 1}
_EXCERPT = 40
# 19 digits hold every int64; a longer string is refused before int() sees it (int() of thousands
# of digits is slow, and above 4300 digits it raises).
_INTEGER = re.compile(r"-?[0-9]{1,19}")
_FLOAT = re.compile(r"(?:[0-9]{1,15}(?:\.[0-9]{0,15})?|\.[0-9]{1,15})(?:[eE][-+]?[0-9]{1,3})?")


class NotationError(ValueError):
    """Malformed or impossible text for a position or a move."""


@dataclass(frozen=True)
class Position:
    """A board, the side to move and the number of plies played."""

    board: tuple[int, ...]
    to_move: int = 0
    ply: int = 0


def excerpt(value: object, limit: int = _EXCERPT) -> str:
    """``repr`` of ``value`` cut to about ``limit`` characters (with the full length when cut),
    so that an error message never echoes a huge input back."""
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else f"{value[:limit]!r}... ({len(value)} characters)"
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[:limit]}..."


def parse_int(text: str, what: str, *, minimum: int = 0, maximum: int) -> int:
    """An integer from outside, within ``minimum..maximum``: the one reader of every integer that
    a person, a referee, a file or a browser hands to hopzero.

    Only ASCII digits and an optional leading ``-`` (no ``+``, spaces, underscores or other
    scripts' digits), at most 19 digits, so ``int()`` never sees a huge string; a negative number
    where ``minimum`` is not is refused by the range, so the message says "must be at least 0".
    Raises :class:`NotationError` naming ``what`` and the valid range, quoting at most a short
    :func:`excerpt` of ``text``.
    """
    if not isinstance(text, str) or not _INTEGER.fullmatch(text):
        raise NotationError(f"{what} {excerpt(text)} is not an integer in {minimum}..{maximum}".lstrip())
    value = int(text)
    if value < minimum:
        raise NotationError(f"{what} {value} must be at least {minimum}".lstrip())
    if value > maximum:
        raise NotationError(f"{what} {value} must be at most {maximum}".lstrip())
    return value


def parse_positive_float(text: str, what: str, *, maximum: float) -> float:
    """A number from outside in ``(0, maximum]``: ASCII digits, an optional fraction and exponent,
    no sign (so no ``nan``, ``inf`` or ``1_000``). Raises :class:`NotationError` naming ``what``."""
    if not isinstance(text, str) or not _FLOAT.fullmatch(text):
        shown = excerpt(text)
        raise NotationError(f"{what} {shown} is not a positive number (ASCII digits, at most {maximum:g})".lstrip())
    value = float(text)
    if not 0 < value <= maximum:
        raise NotationError(f"{what} {text} must be more than 0 and at most {maximum:g}".lstrip())
    return value


def parse_ply(rules: Rules, text: str, what: str = "ply count") -> int:
    """A position's ply count from outside: :func:`parse_int` within ``0..rules.max_plies`` (a
    game ends at ``max_plies``, so no position of these rules has more)."""
    return parse_int(text, what, maximum=rules.max_plies)


def start_position(rules: Rules) -> Position:
    """The start position of ``rules``: every home full, player 0 to move."""
    return Position(rules.geometry.start_board(), 0, 0)


def parse_position(rules: Rules, text: str) -> Position:
    """Read a position of ``rules`` from text in its board's format; raises ``NotationError``
    naming the problem."""
    return _TEXT_FORMATS[rules.board][0](rules, text)


def format_position(rules: Rules, position: Position) -> str:
    """Write a position as text in its board's format (the inverse of :func:`parse_position`)."""
    return _TEXT_FORMATS[rules.board][1](rules, position)


def _parse_rows(rules: Rules, text: str) -> Position:
    """Read a rhombus position ``rows/separated/by/slashes side [ply]``."""
    n = rules.n
    parts = text.split()
    if len(parts) not in (2, 3):
        raise NotationError(
            f"position {excerpt(text)} must be '<rows> <side> [ply]', "
            f"e.g. '{format_position(rules, start_position(rules))}'"
        )
    rows = parts[0].split("/")
    if len(rows) != n:
        raise NotationError(f"position has {len(rows)} rows separated by '/', the {rules.name} board needs {n}")
    board: list[int] = []
    for r, row in enumerate(rows):
        if len(row) != n:
            raise NotationError(f"row {r} {excerpt(row)} has {len(row)} cells, needs {n}")
        for c, ch in enumerate(row):
            if ch not in _CELL_CHARS:
                raise NotationError(f"row {r} column {c}: {ch!r} is not a cell; valid: '.', 'x', 'o'")
            board.append(_CELL_CHARS[ch])
    if parts[1] not in _SIDE:
        raise NotationError(f"side to move {excerpt(parts[1])} must be 'x' or 'o'")
    ply = parse_ply(rules, parts[2]) if len(parts) == 3 else 0
    for p, ch in ((0, "x"), (1, "o")):
        count = board.count(p)
        if count != rules.k:
            raise NotationError(f"position has {count} '{ch}' pieces, the {rules.name} rules need exactly {rules.k}")
    return Position(tuple(board), _SIDE[parts[1]], ply)


def _format_rows(rules: Rules, position: Position) -> str:
    """Write a rhombus position (the inverse of :func:`_parse_rows`)."""
    n = rules.n
    rows = ["".join(_CHAR_OF[v] for v in position.board[r * n : (r + 1) * n]) for r in range(n)]
    return f"{'/'.join(rows)} {'xo'[position.to_move]} {position.ply}"


def parse_move(rules: Rules, value: object) -> tuple[int, int]:
    """Read a move given as ``[s, e]`` (JSON), ``(s, e)`` or the text ``"s-e"`` / ``"s e"``.

    Only the form is checked here (two cells on the board, or the pass ``[-1, -1]``); whether
    the move is legal is the state's business.
    """
    if isinstance(value, str):
        text = value.strip()
        if text == "pass":
            return PASS
        # at most 9 ASCII digits a cell (no board has more cells); the board's range is checked below
        m = re.fullmatch(r"([0-9]{1,9})[ \t]*[- \t][ \t]*([0-9]{1,9})", text)
        if not m:
            raise NotationError(f"move {excerpt(value)} must be two cell indices like '45-38', or 'pass'")
        value = [parse_int(m.group(i), f"move {excerpt(value)}: cell", maximum=10**9) for i in (1, 2)]
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise NotationError(f"move {excerpt(value)} must be a pair of cell indices [s, e]")
    s, e = int(value[0]), int(value[1])
    if (s, e) == PASS:
        return PASS
    for name, cell in (("start", s), ("end", e)):
        if not 0 <= cell < rules.cells:
            raise NotationError(f"move {[s, e]}: {name} cell {cell} is off the board (valid 0..{rules.cells - 1})")
    return s, e


def parse_move_path(rules: Rules, text: str) -> tuple[int, ...]:
    """Read a move as the engine protocol writes it, on any board: ``s-e``, a hop chain's witness
    path ``s-a-...-e``, or ``pass`` (``(-1, -1)``): the cells in order.

    Only the form is checked (two to ``rules.cells`` cell indices on the board, ASCII digits);
    the move is ``(path[0], path[-1])``, and whether it and its path are legal is the state's
    business (:func:`ccengine.reference.is_witness_path`). Errors quote a short excerpt.
    """
    text = text.strip()
    if text == "pass":
        return PASS
    fields = text.split("-")
    if not 2 <= len(fields) <= rules.cells:
        raise NotationError(
            f"move {excerpt(text)} must be cell indices joined by '-' like '3-14' or '1-12-25', or 'pass'"
        )
    return tuple(parse_int(f, f"move {excerpt(text)}: cell", maximum=rules.cells - 1) for f in fields)


# ---------------------------------------------------------------------------------------------
# The 121-hole star: COMPACT121 positions and s-a-...-e moves (RULES.md "Text and the engine
# protocol"). A separate block on purpose: it shares Position, NotationError and the number
# readers with the rhombus's text format above.
# ---------------------------------------------------------------------------------------------

_STAR_CELL_CHARS = ".012345"


def _star_rules(rules: Rules) -> None:
    """Refuse a rhombus: COMPACT121 is the star's format only."""
    if not rules.is_star:
        raise NotationError(f"COMPACT121 text is for the star (board='star'); the {rules.name} rules are a rhombus")


def parse_compact121(rules: Rules, text: str) -> Position:
    """Read a star position ``<COMPACT121> <player> [ply]``; raises ``NotationError`` naming the problem.

    COMPACT121 is one character per cell in cell order (``.`` empty, ``0``..``5`` the player's
    number); the player to move is one digit. Each player must have exactly ``rules.k`` pieces.
    """
    _star_rules(rules)
    parts = text.split(" ")
    if len(parts) not in (2, 3):
        raise NotationError(
            f"star position {excerpt(text)} must be '<COMPACT121> <player> [ply]' separated by single spaces, "
            f"e.g. '{format_compact121(rules, start_position(rules))}'"
        )
    cells, player_text = parts[0], parts[1]
    if len(cells) != rules.cells:
        raise NotationError(f"COMPACT121 board has {len(cells)} characters, the star needs {rules.cells}")
    players = rules.geometry.players
    board: list[int] = []
    for i, ch in enumerate(cells):
        if ch not in _STAR_CELL_CHARS:
            raise NotationError(f"COMPACT121 cell {i}: {ch!r} is not '.' or a player digit 0-5")
        owner = -1 if ch == "." else int(ch)
        if owner >= players:
            raise NotationError(f"COMPACT121 cell {i} holds player {owner}, but the game has {players} players")
        board.append(owner)
    if not (len(player_text) == 1 and player_text in _STAR_CELL_CHARS[1:] and int(player_text) < players):
        raise NotationError(f"player to move {excerpt(player_text)} is unknown; valid: 0..{players - 1}")
    ply = parse_ply(rules, parts[2]) if len(parts) == 3 else 0
    for p in range(players):
        count = board.count(p)
        if count != rules.k:
            raise NotationError(f"COMPACT121 board has {count} pieces of player {p}, the star needs exactly {rules.k}")
    return Position(tuple(board), int(player_text), ply)


def format_compact121(rules: Rules, position: Position) -> str:
    """Write a star position as ``<COMPACT121> <player> <ply>`` (the inverse of :func:`parse_compact121`)."""
    _star_rules(rules)
    cells = "".join("." if v == -1 else str(v) for v in position.board)
    return f"{cells} {position.to_move} {position.ply}"


def parse_star_path(rules: Rules, text: str) -> tuple[int, ...]:
    """Read a star move ``s-e`` or a hop chain's witness path ``s-a-b-e``: the cells in order
    (:func:`parse_move_path` without the pass, which the star does not have).

    Only the form is checked (at least two cells, each on the board); the move it stands for is
    ``(path[0], path[-1])``, and whether it is legal is the state's business.
    """
    _star_rules(rules)
    path = parse_move_path(rules, text)
    if path == PASS:
        raise NotationError("the star has no pass: a move is cell indices joined by '-', like '3-14' or '1-12-25'")
    return path


def format_star_path(path: tuple[int, ...] | list[int]) -> str:
    """Write a star move or witness path as ``s-a-...-e``."""
    return "-".join(str(int(c)) for c in path)


#: Each board's position text: ``(parse, format)``. The formats differ by board: the rhombus's
#: rows of ``x`` and ``o``, the star's COMPACT121 (any number of players, RULES.md).
_TEXT_FORMATS: dict[str, tuple[Callable[[Rules, str], Position], Callable[[Rules, Position], str]]] = {
    "rhombus": (_parse_rows, _format_rows),
    "star": (parse_compact121, format_compact121),
}
