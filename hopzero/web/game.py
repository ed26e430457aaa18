"""One game of two to six seats as the server keeps it: the engine state, every move with its hop
path, who played it, and the result as a score vector with its finishing order.

Every change is checked first and either happens whole or raises :class:`GameError` with the
reason, changing nothing. The result of every game, two seats or six, comes from
``State.scores()`` (one entry per seat, summing to 1: the winners share the point, a draw splits
it), never from the two-player ``State.result()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ccengine import PASS, Rules
from ccengine.engines import new_state
from ccengine.notation import NotationError, Position, format_position, parse_position, start_position
from ccengine.reference import move_path

from .palette import seat_name

__all__ = ["END_WORDS", "Game", "GameError", "MoveRecord", "move_text"]

Move = tuple[int, int]

#: What each of the engine's ``end_reason`` words means, as the page says it.
END_WORDS = {
    "all_home": "all ten home",
    "anti_block": "goal filled (anti-block rule)",
    "goal": "goal filled",
    "both_home": "both home in the same round",
    "equal_turn": "the equal-turn rule",
    "repetition": "the third repetition of a position",
    "max_plies": "the move limit",
    "no_move": "no legal move",
    "progress_limit": "no progress",
    "resigned": "resignation",
}


class GameError(ValueError):
    """A request the game cannot honour (illegal move, nothing to undo, game over): nothing changed."""


@dataclass(frozen=True)
class MoveRecord:
    """A move as it was played: ``move`` ``(s, e)`` (``PASS`` for a pass), its hop ``path``, the
    ``seat`` that played it, ``by`` whom (``person``, an engine's label, ``timeout``), ``wall``
    (Unix seconds)."""

    move: Move
    path: tuple[int, ...]
    seat: int
    by: str
    wall: float


def move_text(move: Move) -> str:
    """``"s-e"``, or ``"pass"``: the move list's and the text download's notation."""
    return "pass" if tuple(move) == PASS else f"{move[0]}-{move[1]}"


class Game:
    """A game of ``rules`` from ``start`` (the rules' start position by default)."""

    def __init__(self, rules: Rules, start: Position | None = None) -> None:
        self.rules = rules
        self.start = start if start is not None else start_position(rules)
        self.state: Any = new_state(rules, self.start)
        self.records: list[MoveRecord] = []
        #: The seat that resigned (two seats only), None otherwise.
        self.resigned: int | None = None

    @classmethod
    def from_text(cls, rules: Rules, text: str | None) -> Game:
        """A game from the position ``text`` in the rules' text form (None: the start); a game
        that would be over before its first move is refused."""
        if text is None:
            return cls(rules)
        try:
            position = parse_position(rules, text)
        except NotationError as exc:
            raise GameError(f"position: {exc}") from None
        game = cls(rules, position)
        if game.state.is_terminal():
            raise GameError("position: the game is already over in it; give a position with moves left")
        return game

    # -- reading ----------------------------------------------------------------------------------

    @property
    def players(self) -> int:
        return int(self.rules.players)

    @property
    def over(self) -> bool:
        """Whether the game has ended (by the rules or by a resignation)."""
        return self.resigned is not None or bool(self.state.is_terminal())

    @property
    def to_move(self) -> int:
        return int(self.state.to_move)

    @property
    def plies(self) -> int:
        """Moves played in this game (the position's own ply count may start higher)."""
        return len(self.records)

    def scores(self) -> list[float] | None:
        """The result vector (one entry per seat, summing to 1) once over, else None."""
        if self.resigned is not None:
            return [0.0 if p == self.resigned else 1.0 for p in range(self.players)]
        scores = self.state.scores()
        return None if scores is None else [float(x) for x in scores]

    def home_counts(self) -> list[int]:
        """Each seat's pieces standing in its goal."""
        board, geo = self.state.board, self.rules.geometry
        return [sum(1 for c in geo.goal(p) if board[c] == p) for p in range(self.players)]

    def result(self) -> dict[str, Any] | None:
        """The result once over: ``scores``, ``winners`` (empty for a draw), ``reason`` (an
        ``END_WORDS`` key), ``order`` (seats by score, then by pieces home), ``home`` and a
        ``text`` naming the seats by colour; None while the game goes on."""
        scores = self.scores()
        if scores is None:
            return None
        home = self.home_counts()
        reason = "resigned" if self.resigned is not None else str(self.state.end_reason)
        top = max(scores)
        draw = max(scores) - min(scores) < 1e-9
        winners = [] if draw else [p for p in range(self.players) if abs(scores[p] - top) < 1e-9]
        order = sorted(range(self.players), key=lambda p: (-round(scores[p], 9), -home[p], p))
        names = [seat_name(p) for p in winners]
        if self.resigned is not None:
            text = f"{seat_name(self.resigned)} resigned: {' and '.join(names)} wins"
        elif draw:
            text = f"draw by {END_WORDS.get(reason, reason)}"
        elif len(winners) == 1:
            text = f"{names[0]} wins ({END_WORDS.get(reason, reason)})"
        else:
            text = f"{', '.join(names[:-1])} and {names[-1]} share the win ({END_WORDS.get(reason, reason)})"
        return {"scores": scores, "winners": winners, "reason": reason, "order": order, "home": home, "text": text}

    def position_text(self) -> str:
        """The current position in the rules' text form (COMPACT121 on the star)."""
        return format_position(self.rules, Position(tuple(self.state.board), self.to_move, int(self.state.ply)))

    def start_text(self) -> str:
        return format_position(self.rules, self.start)

    def legal_by_start(self) -> dict[int, list[int]]:
        """The legal moves of the seat to move, as destinations by start cell (no pass)."""
        out: dict[int, list[int]] = {}
        if self.over:
            return out
        for s, e in self.state.legal_moves():
            if (s, e) != PASS:
                out.setdefault(int(s), []).append(int(e))
        return out

    def must_pass(self) -> bool:
        """Whether the seat to move has the pass as its only move (the rhombus; never the star)."""
        return not self.over and self.state.legal_moves() == [PASS]

    def state_at(self, ply: int) -> Any:
        """A copy of the state after the first ``ply`` moves (``0 <= ply <= plies``)."""
        if not 0 <= ply <= self.plies:
            raise GameError(f"ply {ply}: this game has positions 0..{self.plies}")
        state = self.state.copy()
        for _ in range(self.plies - ply):
            state.undo()
        return state

    # -- changing ---------------------------------------------------------------------------------

    def check_move(self, move: Move) -> list[int]:
        """The hop path of ``move`` if it is legal now (else :class:`GameError` with the reason)."""
        if self.over:
            raise GameError(f"the game is over ({self.result()['text']})")  # type: ignore[index]
        legal = self.state.legal_moves()
        if move == PASS:
            if legal != [PASS]:
                raise GameError("a pass is legal only when the seat to move has no other move")
            return []
        s, e = move
        if not all(0 <= c < self.rules.cells for c in move):
            raise GameError(f"move {s}-{e}: cells are 0..{self.rules.cells - 1}")
        if move not in legal:
            board = self.state.board
            if board[s] == -1:
                why = f"cell {s} is empty"
            elif board[s] != self.to_move:
                why = f"the piece on cell {s} is {seat_name(board[s])}'s, and {seat_name(self.to_move)} is to move"
            elif board[e] != -1:
                why = f"cell {e} is occupied"
            else:
                why = f"no step or chain of hops the rules allow leads from {s} to {e}"
            raise GameError(f"move {s}-{e} is not legal: {why}")
        return [int(c) for c in move_path(self.rules, self.state.board, move)]

    def play(self, move: Move, *, by: str, wall: float) -> MoveRecord:
        """Play a legal move for the seat to move; returns its record."""
        path = self.check_move(move)
        record = MoveRecord(move=(int(move[0]), int(move[1])), path=tuple(path), seat=self.to_move, by=by, wall=wall)
        self.state.play(record.move)
        self.records.append(record)
        return record

    def truncate(self, plies: int) -> None:
        """Take back every move after the first ``plies`` (and any resignation)."""
        if not 0 <= plies <= self.plies:
            raise GameError(f"ply {plies}: this game has positions 0..{self.plies}")
        while self.plies > plies:
            self.state.undo()
            self.records.pop()
        self.resigned = None

    def resign(self, seat: int) -> None:
        """``seat`` gives up: the other seat wins. Two seats only: with more, a seat that leaves
        is played on by an engine (the room hands it over), since the star has no passing."""
        if self.players != 2:
            raise GameError(f"resigning ends a game of two; with {self.players} seats, hand your seat to an engine")
        if self.over:
            raise GameError("the game is already over")
        self.resigned = seat
