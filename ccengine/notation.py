"""Positions and moves as text (RULES.md "Positions and moves as text").

A position is ``rows/separated/by/slashes side [ply]``, one character per cell (``.`` empty,
``x`` player 0, ``o`` player 1), rows from ``r = 0`` to ``r = n - 1``. Every reader here raises
:class:`NotationError` with a message that says what is wrong; none of them changes any state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .rules import PASS, Rules

__all__ = ["NotationError", "Position", "format_position", "parse_move", "parse_position", "start_position"]

_CELL_CHARS = {".": -1, "x": 0, "o": 1}
_CHAR_OF = {-1: ".", 0: "x", 1: "o"}
_SIDE = {"x": 0, "o": 1}


class NotationError(ValueError):
    """Malformed or impossible text for a position or a move."""


@dataclass(frozen=True)
class Position:
    """A board, the side to move and the number of plies played."""

    board: tuple[int, ...]
    to_move: int = 0
    ply: int = 0


def start_position(rules: Rules) -> Position:
    """The start position of ``rules``: both homes full, player 0 to move."""
    return Position(rules.geometry.start_board(), 0, 0)


def parse_position(rules: Rules, text: str) -> Position:
    """Read a position of ``rules`` from text; raises ``NotationError`` naming the problem."""
    n = rules.n
    parts = text.split()
    if len(parts) not in (2, 3):
        raise NotationError(
            f"position {text!r} must be '<rows> <side> [ply]', e.g. '{format_position(rules, start_position(rules))}'"
        )
    rows = parts[0].split("/")
    if len(rows) != n:
        raise NotationError(f"position has {len(rows)} rows separated by '/', the {rules.name} board needs {n}")
    board: list[int] = []
    for r, row in enumerate(rows):
        if len(row) != n:
            raise NotationError(f"row {r} {row!r} has {len(row)} cells, needs {n}")
        for c, ch in enumerate(row):
            if ch not in _CELL_CHARS:
                raise NotationError(f"row {r} column {c}: {ch!r} is not a cell; valid: '.', 'x', 'o'")
            board.append(_CELL_CHARS[ch])
    if parts[1] not in _SIDE:
        raise NotationError(f"side to move {parts[1]!r} must be 'x' or 'o'")
    ply = 0
    if len(parts) == 3:
        if not parts[2].isdigit():
            raise NotationError(f"ply count {parts[2]!r} must be a non-negative integer")
        ply = int(parts[2])
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
        m = re.fullmatch(r"(\d+)\s*[-\s]\s*(\d+)", text)
        if not m:
            raise NotationError(f"move {value!r} must be two cell indices like '45-38', or 'pass'")
        value = [int(m.group(1)), int(m.group(2))]
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise NotationError(f"move {value!r} must be a pair of cell indices [s, e]")
    s, e = int(value[0]), int(value[1])
    if (s, e) == PASS:
        return PASS
    for name, cell in (("start", s), ("end", e)):
        if not 0 <= cell < rules.cells:
            raise NotationError(f"move {[s, e]}: {name} cell {cell} is off the board (valid 0..{rules.cells - 1})")
    return s, e
