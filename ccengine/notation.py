"""Positions and moves as text (RULES.md "Positions and moves as text").

A position is ``rows/separated/by/slashes side [ply]``, one character per cell (``.`` empty,
``x`` player 0, ``o`` player 1), rows from ``r = 0`` to ``r = n - 1``. Every reader here raises
:class:`NotationError` with a message that says what is wrong; none of them changes any state.

Every number that comes from outside (a position's ply, a move's cells, the engine protocol's
``go nodes``, the command line's counts) is read by :func:`parse_int` or
:func:`parse_positive_float`: ASCII digits only (``str.isdigit`` and ``int`` accept ``'²'`` or
Arabic-Indic digits), a ``-`` only to be judged by the range, and a range. Error messages show
at most a short :func:`excerpt` of what they were given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .rules import PASS, Rules

__all__ = [
    "NotationError",
    "Position",
    "excerpt",
    "format_position",
    "parse_int",
    "parse_move",
    "parse_position",
    "parse_positive_float",
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
    """An integer from outside, within ``minimum..maximum``.

    Only ASCII digits and an optional leading ``-`` (no ``+``, spaces, underscores or other
    scripts' digits); a negative number where ``minimum`` is not is refused by the range, so the
    message says "must be at least 0". Raises :class:`NotationError` naming ``what`` and the
    valid range.
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


def start_position(rules: Rules) -> Position:
    """The start position of ``rules``: both homes full, player 0 to move."""
    return Position(rules.geometry.start_board(), 0, 0)


def parse_position(rules: Rules, text: str) -> Position:
    """Read a position of ``rules`` from text; raises ``NotationError`` naming the problem."""
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
    # a game ends at max_plies, so no position of these rules has a larger ply count
    ply = parse_int(parts[2], "ply count", maximum=rules.max_plies) if len(parts) == 3 else 0
    for p, ch in ((0, "x"), (1, "o")):
        count = board.count(p)
        if count != rules.k:
            raise NotationError(f"position has {count} '{ch}' pieces, the {rules.name} rules need exactly {rules.k}")
    return Position(tuple(board), _SIDE[parts[1]], ply)


def format_position(rules: Rules, position: Position) -> str:
    """Write a position as text (the inverse of :func:`parse_position`)."""
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
        # ASCII digits, few enough for int() to be cheap; the board's range is checked below
        m = re.fullmatch(r"([0-9]{1,9})[ \t]*[- \t][ \t]*([0-9]{1,9})", text)
        if not m:
            raise NotationError(f"move {excerpt(value)} must be two cell indices like '45-38', or 'pass'")
        value = [int(m.group(1)), int(m.group(2))]
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
