"""A room: one game with its seats, its settings and its evaluations, and who may change what.

Every change is checked first (the rules, the seat's secret) and raises :class:`RoomError` with
the reason, changing nothing; a change that happens bumps :attr:`Room.version`. Browsers get the
room as :meth:`Room.snapshot` and, after each move, :meth:`Room.moved` (small: the move and the
position after it); a message whose version does not follow the one a browser has tells it to
fetch the room again. :attr:`Room.line` counts the times the game's history was rewritten (an
undo, a new start), so that an evaluation of a position that is no longer in the game is dropped.

Who may do what, by the secrets a request carries (:mod:`hopzero.web.seats`):

- a move: the token of the person seat to move;
- an undo (back to before the requester's last move) and a new start position: the tokens of
  every person seat that has been taken, so no other player's moves are taken back behind their
  back (one person against engines, or people sharing a device: hot-seat);
- a resignation (two seats only): the token of the seat;
- handing a seat to an engine: the seat's own token, or the creator's token when nobody holds the
  seat or its holder has no page open on the room (an idle seat); giving an engine seat back to
  people, and the room's settings: the creator's token.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ccengine import Rules

from .analysis import briefs, marks
from .engines import Engine
from .game import Game, GameError, MoveRecord, move_text
from .geometry import board_info
from .palette import seat_name
from .seats import ENGINE, PERSON, Seat, token_hash, token_matches
from .store import GameRow

__all__ = ["Room", "RoomError", "RoomSettings"]

Move = tuple[int, int]


class RoomError(GameError):
    """A change the room refuses (not your seat, not your turn, an illegal move): nothing changed."""


class RoomSettings(BaseModel):
    """A room's options: ``timer_s`` seconds for each person's move (0: no timer; when it runs out
    the server plays greedy's move for the seat), ``pace_ms``: the least time between two engine
    moves, so that people can follow an engines' game."""

    model_config = ConfigDict(extra="forbid")

    timer_s: int = Field(0, ge=0, le=3600, description="seconds a person has for a move (0: no timer)")
    pace_ms: int = Field(600, ge=0, le=5000, description="least milliseconds between two engine moves")


@dataclass
class Room:
    """One game and everything around it (see the module docstring)."""

    id: str
    game: Game
    seats: list[Seat]
    settings: RoomSettings
    creator: str
    """The creator's token hash."""
    analyst: Engine
    """The engine that evaluates every position of this game and answers its analyses."""
    created: float
    updated: float
    finished: float | None = None
    """When the game ended (Unix seconds); None while it goes on."""
    line: int = 0
    evals: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The briefs of the positions' evaluations by ply (``analysis.brief``; whole in the database)."""
    version: int = 0
    #: The open websockets on this room (:class:`hopzero.web.hall.Watcher`).
    watchers: set[Any] = field(default_factory=set)
    #: The engine seat to move is thinking (its job is running).
    thinking: bool = False
    #: Why the last engine move failed (a model that would not load); cleared by a retry.
    engine_error: str | None = None
    #: When the person to move runs out of time (Unix seconds); None: no timer running.
    deadline: float | None = None

    @property
    def rules(self) -> Rules:
        return self.game.rules

    # -- who holds what ---------------------------------------------------------------------------

    def connected(self) -> set[int]:
        """The seats held by a page open on the room now."""
        return {s for w in self.watchers for s in w.seats}

    def check_seat(self, seat: int) -> Seat:
        if not 0 <= seat < len(self.seats):
            raise RoomError(f"seat {seat}: this game has seats 0..{len(self.seats) - 1}")
        return self.seats[seat]

    def holds(self, seat: int, token: str | None) -> bool:
        """Whether ``token`` holds the person seat ``seat``."""
        return 0 <= seat < len(self.seats) and token_matches(token, self.seats[seat].holder)

    def held_by(self, tokens: dict[int, str]) -> set[int]:
        """The seats the tokens hold (tokens that hold nothing are ignored)."""
        return {s for s, t in tokens.items() if self.holds(s, t)}

    def is_creator(self, token: str | None) -> bool:
        return token_matches(token, self.creator)

    def _check_every_person(self, tokens: dict[int, str], what: str) -> set[int]:
        held = self.held_by(tokens)
        others = [s for s, seat in enumerate(self.seats) if seat.kind == PERSON and seat.holder and s not in held]
        if not held:
            raise RoomError(f"{what}: you hold no seat of this game")
        if others:
            raise RoomError(f"{what} needs every player's agreement: {', '.join(seat_name(s) for s in others)} "
                            "also play here (undo and new positions are for one person or people on one device)")
        return held

    # -- changes ----------------------------------------------------------------------------------

    def _changed(self) -> None:
        self.version += 1
        self.updated = time.time()
        if not self.game.over:
            self.finished = None
        elif self.finished is None:
            self.finished = self.updated

    def play(self, move: Move, by: str) -> MoveRecord:
        """Play ``move`` for the seat to move (the caller checked who may)."""
        record = self.game.play(move, by=by, wall=time.time())
        self.deadline = None
        self._changed()
        return record

    def person_move(self, seat: int, token: str | None, move: Move, version: int | None) -> MoveRecord:
        """A person's move: the seat must be the one to move, and the token its holder's."""
        game = self.game
        if version is not None and version != self.version:
            raise RoomError(f"the game changed since that move was chosen (version {self.version}, not {version})")
        if game.over:
            raise RoomError(f"the game is over ({game.result()['text']})")  # type: ignore[index]
        if seat != game.to_move:
            raise RoomError(f"it is {seat_name(game.to_move)}'s turn, not {seat_name(seat)}'s")
        target = self.check_seat(seat)
        if target.kind != PERSON:
            raise RoomError(f"{seat_name(seat)} is played by an engine")
        if not self.holds(seat, token):
            raise RoomError(f"you do not hold {seat_name(seat)}'s seat (take a free seat, or watch)")
        game.check_move(move)
        return self.play(move, "person")

    def undo(self, tokens: dict[int, str]) -> int:
        """Back to before the requester's last move (the moves after it go too); returns how
        many moves were taken back."""
        held = self._check_every_person(tokens, "undo")
        mine = [i for i, r in enumerate(self.game.records) if r.seat in held and r.by == "person"]
        if not mine:
            raise RoomError("there is no move of yours to undo")
        taken = self.game.plies - mine[-1]
        self._rewind(mine[-1])
        return taken

    def _rewind(self, plies: int) -> None:
        self.game.truncate(plies)
        self.evals = {p: e for p, e in self.evals.items() if p <= plies}
        self.line += 1
        self.engine_error = None
        self.deadline = None
        self._changed()

    def new_start(self, tokens: dict[int, str], text: str | None) -> None:
        """The game starts again from the position ``text`` (None: the rules' start)."""
        self._check_every_person(tokens, "a new start position")
        game = Game.from_text(self.rules, text)
        self.game = game
        self.evals = {}
        self.line += 1
        self.engine_error = None
        self.deadline = None
        self._changed()

    def resign(self, seat: int, token: str | None) -> None:
        if not self.holds(seat, token):
            raise RoomError(f"you do not hold {seat_name(seat)}'s seat")
        self.game.resign(seat)
        self.deadline = None
        self._changed()

    def take(self, seat: int, token: str, name: str | None) -> None:
        """A browser takes the free person seat ``seat`` with its new ``token``."""
        target = self.check_seat(seat)
        if target.kind != PERSON:
            raise RoomError(f"{seat_name(seat)} is played by an engine (the creator may give it to people)")
        if target.holder is not None:
            raise RoomError(f"{seat_name(seat)}'s seat is taken")
        if self.game.over:
            raise RoomError("the game is over: there is no seat to take")
        target.holder = token_hash(token)
        target.name = name
        self._changed()

    def to_engine(self, seat: int, token: str | None, engine: Engine) -> None:
        """Hand ``seat`` to ``engine``: by its holder, or by the creator when it is idle."""
        target = self.check_seat(seat)
        if target.kind == ENGINE:
            if not self.is_creator(token):
                raise RoomError("only the room's creator changes an engine seat")
        elif not self.holds(seat, token):
            if not self.is_creator(token):
                raise RoomError(f"only {seat_name(seat)}'s player, or the room's creator, hands the seat to an engine")
            if target.holder is not None and seat in self.connected():
                raise RoomError(f"{seat_name(seat)}'s player is here: only an idle seat is handed over")
        if self.game.over:
            raise RoomError("the game is over")
        self.seats[seat] = Seat(kind=ENGINE, engine=engine)
        if seat == self.game.to_move:
            self.deadline = None
            self.engine_error = None  # a new engine gets its own try
        self._changed()

    def to_person(self, seat: int, token: str | None) -> None:
        """The creator gives an engine seat to people: a free person seat."""
        if not self.is_creator(token):
            raise RoomError("only the room's creator gives a seat to people")
        if self.check_seat(seat).kind != ENGINE:
            raise RoomError(f"{seat_name(seat)} is already a person's seat")
        if self.game.over:
            raise RoomError("the game is over")
        self.seats[seat] = Seat(kind=PERSON)
        if seat == self.game.to_move:
            self.engine_error = None
        self._changed()

    def configure(self, token: str | None, settings: RoomSettings) -> None:
        if not self.is_creator(token):
            raise RoomError("only the room's creator changes its settings")
        self.settings = settings
        self.deadline = None
        self._changed()

    def retry(self) -> None:
        """Try the engine seat to move again after it failed."""
        if self.engine_error is None:
            raise RoomError("no engine move failed")
        self.engine_error = None
        self._changed()

    # -- what the browsers get --------------------------------------------------------------------

    def _position(self) -> dict[str, Any]:
        """The position now: board, seat to move, legal moves, result, the timer."""
        game = self.game
        return {
            "board": [int(v) for v in game.state.board],
            "to_move": game.to_move,
            "ply": int(game.state.ply),
            "plies": game.plies,
            "legal": {str(s): ends for s, ends in game.legal_by_start().items()},
            "must_pass": game.must_pass(),
            "over": game.over,
            "result": game.result(),
            "position": game.position_text(),
            "home": game.home_counts(),
            "deadline_in": None if self.deadline is None else max(0.0, round(self.deadline - time.time(), 2)),
            "thinking": self.thinking,
            "engine_error": self.engine_error,
        }

    def marks(self) -> dict[str, str]:
        return marks(self.evals, [r.seat for r in self.game.records], self.game.players)

    def snapshot(self) -> dict[str, Any]:
        """Everything a browser needs to show the room (JSON-ready)."""
        connected = self.connected()
        records = self.game.records
        return {
            "id": self.id, "version": self.version, "line": self.line, "preset": self.rules.name,
            "board_info": board_info(self.rules),
            "seats": [s.public(i, i in connected) for i, s in enumerate(self.seats)],
            "settings": self.settings.model_dump(), "created": self.created, "analyst": self.analyst.label,
            "start": self.game.start_text(), "start_board": [int(v) for v in self.game.start.board],
            "moves": [list(r.move) for r in records], "paths": [list(r.path) for r in records],
            "movers": [r.seat for r in records], "by": [r.by for r in records],
            "evals": briefs(self.evals), "marks": self.marks(),
            **self._position(),
        }

    def moved(self, record: MoveRecord) -> dict[str, Any]:
        """The message every browser gets after a move."""
        return {"type": "moved", "id": self.id, "version": self.version, "line": self.line,
                "record": {"move": list(record.move), "path": list(record.path), "seat": record.seat,
                           "by": record.by, "text": move_text(record.move)},
                **self._position()}

    def summary(self) -> dict[str, Any]:
        """One line of a list of games."""
        result = self.game.result()
        return {"id": self.id, "preset": self.rules.name, "seats": [s.public(i, False) for i, s in enumerate(self.seats)],
                "created": self.created, "updated": self.updated, "plies": self.game.plies,
                "finished": self.finished, "result": result}

    def row(self) -> GameRow:
        """The room as the database keeps it (moves and evaluations apart)."""
        result = self.game.result()
        return GameRow(
            id=self.id, preset=self.rules.name, rules=self.rules.to_dict(), start=self.game.start_text(),
            seats=[s.stored() for s in self.seats], settings=self.settings.model_dump(), creator=self.creator,
            created=self.created, updated=self.updated, finished=self.finished, result=result,
            resigned=self.game.resigned, line=self.line, plies=self.game.plies, version=self.version,
        )
