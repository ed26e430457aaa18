"""The board as the page draws it, and one game between a person and a player.

**Coordinates.** Every cell gets a point ``(x, y)`` in units of one neighbour step (y grows
downwards), taken from the engine's geometry so one drawing code serves both boards:

- the rhombus cell ``(r, c)`` sits at ``((r + c) / 2, (r - c) * sqrt(3) / 2)``: the diamond of
  ``ccengine.render``, player 1's home at the top, player 0's at the bottom;
- the star's axial cell ``(q, r)`` sits at ``(q + r / 2, r * sqrt(3) / 2)``: north (player 0's
  home) at the top.

A :class:`Game` holds the engine state, the moves played with their hop paths (from
``ccengine.reference.move_path``), the person's side and a resignation. Every change is checked
first and either happens whole or raises :class:`GameError` with the reason, changing nothing.
"""

from __future__ import annotations

import math
from typing import Any

from ccengine import PASS, Rules
from ccengine.engines import new_state
from ccengine.notation import NotationError, Position, format_position, parse_position
from ccengine.reference import move_path

__all__ = ["Game", "GameError", "cell_points"]

Move = tuple[int, int]
_ROOT3_2 = math.sqrt(3) / 2


class GameError(ValueError):
    """A request the game cannot honour (illegal move, nothing to undo, game over): nothing changed."""


def cell_points(rules: Rules) -> list[tuple[float, float]]:
    """``(x, y)`` of every cell, in cell order (see the module docstring)."""
    geo = rules.geometry
    if geo.kind == "star":
        return [(q + r / 2, r * _ROOT3_2) for q, r in geo.coords]
    n = rules.n
    return [((r + c) / 2, (r - c) * _ROOT3_2) for r, c in (divmod(i, n) for i in range(rules.cells))]


def _result_text(result: int, resigned: int | None) -> str:
    if resigned is not None:
        return f"{'xo'[resigned]} resigned: {'xo'[1 - resigned]} wins"
    return "draw" if result == 0 else f"{'x' if result > 0 else 'o'} wins"


class Game:
    """One game: a person on side ``human`` (0 = x, 1 = o) against a player described by ``opponent``."""

    def __init__(self, rules: Rules, human: int, opponent: dict[str, Any], position: Position | None = None) -> None:
        self.rules = rules
        self.human = human
        #: The opponent choice as the client gave it (validated), for the page and the download.
        self.opponent = opponent
        self.start = position if position is not None else Position(rules.geometry.start_board(), 0, 0)
        self.state: Any = new_state(rules, self.start)
        self.moves: list[Move] = []
        self.paths: list[list[int]] = []
        self.resigned: int | None = None
        #: Bumped at every change: a search started on an older version may not play its move.
        self.version = 0

    # -- reading ----------------------------------------------------------------------------------

    @property
    def over(self) -> bool:
        """Whether the game has ended (by the rules or by a resignation)."""
        return self.resigned is not None or bool(self.state.is_terminal())

    @property
    def result(self) -> int | None:
        """+1 / 0 / -1 from x's side once the game is over, else None."""
        if self.resigned is not None:
            return -1 if self.resigned == 0 else 1
        return int(self.state.result()) if self.state.is_terminal() else None

    @property
    def engine_to_move(self) -> bool:
        """Whether it is the opponent's turn in a game still going."""
        return not self.over and self.state.to_move != self.human

    def position_text(self) -> str:
        """The current position in the rules' text form (COMPACT121 on the star)."""
        return format_position(self.rules, Position(tuple(self.state.board), self.state.to_move, self.state.ply))

    def legal_by_start(self) -> dict[int, list[int]]:
        """The legal moves of the side to move, as destinations by start cell (no pass)."""
        out: dict[int, list[int]] = {}
        if self.over:
            return out
        for s, e in self.state.legal_moves():
            if (s, e) != PASS:
                out.setdefault(int(s), []).append(int(e))
        return out

    def snapshot(self) -> dict[str, Any]:
        """Everything the page needs to draw the game now (JSON-ready)."""
        result = self.result
        legal = [] if self.over else self.state.legal_moves()
        return {
            "preset": self.rules.name,
            "board": [int(v) for v in self.state.board],
            "to_move": int(self.state.to_move),
            "ply": int(self.state.ply),
            "human": self.human,
            "opponent": self.opponent,
            "legal": {str(s): ends for s, ends in self.legal_by_start().items()},
            "must_pass": legal == [PASS],
            "over": self.over,
            "result": result,
            "result_text": None if result is None else _result_text(result, self.resigned),
            "moves": [f"{s}-{e}" if (s, e) != PASS else "pass" for s, e in self.moves],
            "last_path": self.paths[-1] if self.paths else None,
            "position": self.position_text(),
            "version": self.version,
        }

    def export(self) -> dict[str, Any]:
        """The whole game for the download: rules, start position, moves with their paths, result."""
        start = format_position(self.rules, self.start)
        return {
            "format": "hopzero-game",
            "version": 1,
            "preset": self.rules.name,
            "rules": self.rules.to_dict(),
            "start": start,
            "human": "xo"[self.human],
            "opponent": self.opponent,
            "moves": self.snapshot()["moves"],
            "paths": self.paths,
            "result": self.result,
            "resigned": None if self.resigned is None else "xo"[self.resigned],
            "position": self.position_text(),
        }

    # -- changing ---------------------------------------------------------------------------------

    def _changed(self) -> None:
        self.version += 1

    def check_move(self, move: Move) -> list[int]:
        """The hop path of ``move`` if it is legal now (else :class:`GameError` with the reason)."""
        if self.over:
            raise GameError(f"the game is over ({_result_text(self.result or 0, self.resigned)})")
        legal = self.state.legal_moves()
        if move == PASS:
            if legal != [PASS]:
                raise GameError("a pass is legal only when the side to move has no other move")
            return []
        if move not in legal:
            s, e = move
            board = self.state.board
            if board[s] == -1:
                why = f"cell {s} is empty"
            elif board[s] != self.state.to_move:
                why = f"the piece on cell {s} is not the side to move's"
            elif board[e] != -1:
                why = f"cell {e} is occupied"
            else:
                why = f"no step or chain of hops the rules allow leads from {s} to {e}"
            raise GameError(f"move {s}-{e} is not legal: {why}")
        return [int(c) for c in move_path(self.rules, self.state.board, move)]

    def play(self, move: Move) -> list[int]:
        """Play a legal move for the side to move; returns its path (``[]`` for a pass)."""
        path = self.check_move(move)
        self.state.play(move)
        self.moves.append(move)
        self.paths.append(path)
        self._changed()
        return path

    def undo(self) -> int:
        """Take back the last move and any opponent moves before it, back to the person's turn
        (or to the start); returns how many moves were taken back."""
        if not self.moves:
            raise GameError("there is no move to undo")
        self.resigned = None
        taken = 0
        while self.moves and (taken == 0 or self.state.to_move != self.human):
            self.state.undo()
            self.moves.pop()
            self.paths.pop()
            taken += 1
        self._changed()
        return taken

    def resign(self) -> None:
        """The person gives up the game."""
        if self.over:
            raise GameError("the game is already over")
        self.resigned = self.human
        self._changed()

    def swap(self) -> None:
        """The person takes the other side (the opponent then plays the side the person had)."""
        self.human = 1 - self.human
        self._changed()

    def restart(self, text: str | None = None) -> None:
        """A new game from the start, or from the position ``text`` (the rules' text form)."""
        try:
            position = parse_position(self.rules, text) if text is not None else None
        except NotationError as exc:
            raise GameError(f"position: {exc}") from None
        state = new_state(self.rules, position if position is not None else Position(
            self.rules.geometry.start_board(), 0, 0))
        if position is not None and state.is_terminal():
            raise GameError("position: the game is already over in it; load a position with moves left")
        self.start = position if position is not None else Position(self.rules.geometry.start_board(), 0, 0)
        self.state = state
        self.moves.clear()
        self.paths.clear()
        self.resigned = None
        self._changed()
