"""The rooms of one server: those in memory, the database behind them, the pages watching them.

:class:`Hall` creates rooms, loads a room from the database when someone opens it (a room in
progress or a finished game, after a restart too), and unloads the least recently used room
nobody watches beyond ``Limits.max_rooms``. Every change of a room goes through
:meth:`Hall.commit` in one order: write it to the database, start what the new version needs
(:class:`hopzero.web.turns.Turns`), send it to every page on the room, ask for the evaluations
it lacks (:class:`hopzero.web.evals.Evaluations`).

A page on a room is a :class:`Watcher`: the outbox of its socket
(:class:`hopzero.web.sockets.Outbox`) and the seats its secrets hold.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ccengine import preset
from ccengine.rules import Rules, RulesError

from .analysis import brief
from .engines import EngineChoice, Engines
from .evals import Evaluations
from .game import Game, GameError, MoveRecord
from .gamefile import LoadedGame
from .limits import ChoiceError, Limits
from .rooms import Room, RoomSettings
from .searches import Pools
from .seats import ENGINE, PERSON, Seat, new_token, token_hash
from .sockets import Outbox
from .store import GameRow, Store
from .turns import Turns

__all__ = ["EXPIRE_EVERY_S", "Hall", "Watcher"]

#: How often old games are deleted (seconds).
EXPIRE_EVERY_S = 3600.0
#: A room's id: random bytes (URL-safe text), unguessable.
ROOM_ID_BYTES = 12


def new_room_id() -> str:
    """A new room's id: ``ROOM_ID_BYTES`` random bytes as URL-safe text."""
    return secrets.token_urlsafe(ROOM_ID_BYTES)


class Watcher(Outbox):
    """One page's socket on a room: its outbox, its secrets and the seats they hold now."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: dict[int, str] = {}
        self.seats: set[int] = set()


class Hall:
    """Rooms in memory and in the database (see the module docstring)."""

    def __init__(self, store: Store, engines: Engines, limits: Limits, pools: Pools,
                 room_ids: Callable[[], str] | None = None) -> None:
        self.store = store
        # engines seed their moves from the room id (turns.move_seed): a benchmark passes its own
        # ids to replay the same games; the server's are unguessable
        self.new_id = room_ids or new_room_id
        self.engines = engines
        self.limits = limits
        self.pools = pools
        self.rooms: OrderedDict[str, Room] = OrderedDict()
        self.turns = Turns(engines, pools.engine, self._engine_played, self.broadcast, self._engine_failed)
        self.evals = Evaluations(engines, pools.evals, self.evaluated)
        self._tasks: list[asyncio.Task[None]] = []

    # -- life ---------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the evaluation worker and the hourly expiry (on the running loop)."""
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self.evals.run()), loop.create_task(self._expire_often())]

    async def close(self) -> None:
        for room in list(self.rooms.values()):
            self.turns.forget(room)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def expire(self) -> int:
        """Delete the games older than ``keep_days`` (not those in memory)."""
        if self.limits.keep_days <= 0:
            return 0
        return self.store.expire(time.time() - self.limits.keep_days * 86400)

    async def _expire_often(self) -> None:
        while True:
            self.expire()
            await asyncio.sleep(EXPIRE_EVERY_S)

    # -- finding and making rooms -----------------------------------------------------------------

    def get(self, room_id: str) -> Room:
        """The room ``room_id``, loaded from the database if it is not in memory."""
        room = self.rooms.get(room_id)
        if room is not None:
            self.rooms.move_to_end(room_id)
            return room
        row = self.store.load(room_id) if len(room_id) <= 64 else None
        if row is None:
            raise LookupError(f"no game {room_id!r} on this server (a wrong link, or it expired)")
        room = self._from_row(row)
        self._admit(room)
        return room

    def _admit(self, room: Room) -> None:
        self.rooms[room.id] = room
        while len(self.rooms) > self.limits.max_rooms:
            idle = next((r for r in self.rooms.values() if not r.watchers and r is not room), None)
            if idle is None:
                del self.rooms[room.id]
                raise ChoiceError(f"the server holds {self.limits.max_rooms} games that people are watching: "
                                  "try again in a while")
            self.turns.forget(idle)
            self.evals.forget(idle)
            del self.rooms[idle.id]

    def _seat_of(self, stored: dict[str, Any], rules: Rules) -> Seat:
        if stored["kind"] == ENGINE:
            try:
                return Seat(kind=ENGINE, engine=self.engines.resolve(EngineChoice(**stored["engine"]), rules))
            except (ChoiceError, ValueError):
                return Seat(kind=PERSON)  # an engine this server no longer offers: the seat is free for people
        return Seat(kind=PERSON, holder=stored.get("holder"), name=stored.get("name"))

    def _from_row(self, row: GameRow) -> Room:
        try:
            rules = preset(row.preset)
            if rules != Rules.from_dict(row.rules):
                raise RulesError(f"the rules of {row.preset} changed since this game was played")
            game = Game.from_text(rules, row.start)
            for record in row.moves:
                game.play(record.move, by=record.by, wall=record.wall)
            if row.resigned is not None:
                game.resign(row.resigned)
        except (RulesError, GameError, KeyError, TypeError) as exc:
            raise ChoiceError(f"game {row.id} cannot be loaded: {exc}") from None
        seats = [self._seat_of(s, rules) for s in row.seats]
        room = Room(id=row.id, game=game, seats=seats, settings=RoomSettings(**row.settings), creator=row.creator,
                    analyst=self.engines.analyst(rules), created=row.created, updated=row.updated,
                    finished=row.finished, line=row.line, evals={p: brief(e) for p, e in row.evals.items()},
                    version=row.version)
        return room

    def create(self, rules: Rules, seats: list[Seat], settings: RoomSettings, take: list[int], name: str | None,
               position: str | None) -> tuple[Room, str, dict[int, str]]:
        """A new room; returns it with the creator's token and the tokens of the seats it took."""
        game = Game.from_text(rules, position)
        creator = new_token()
        now = time.time()
        room = Room(id=self.new_id(), game=game, seats=seats, settings=settings,
                    creator=token_hash(creator), analyst=self.engines.analyst(rules), created=now, updated=now)
        tokens = {}
        for seat in take:
            tokens[seat] = new_token()
            room.take(seat, tokens[seat], name)
        self._admit(room)
        self.store.insert(room.row())
        return room, creator, tokens

    def adopt(self, loaded: LoadedGame) -> tuple[Room, str, dict[int, str]]:
        """A new room of a game file loaded back, stored with its moves and evaluations; returns
        it with the creator's token and, for a game still going, the tokens of its person seats
        (the loader holds them all). An engine this server does not offer becomes a person's seat
        named after it."""
        rules = loaded.game.rules
        seats = []
        for entry in loaded.seats:
            if entry.kind == ENGINE and entry.engine is not None:
                try:
                    seats.append(Seat(kind=ENGINE, engine=self.engines.resolve(entry.engine, rules)))
                    continue
                except ChoiceError:
                    pass
            seats.append(Seat(kind=PERSON, name=(entry.name or entry.label or "")[:24] or None))
        creator, now = new_token(), time.time()
        room = Room(id=self.new_id(), game=loaded.game, seats=seats, settings=RoomSettings(),
                    creator=token_hash(creator), analyst=self.engines.analyst(rules), created=loaded.created or now,
                    updated=now, finished=now if loaded.game.over else None,
                    evals={p: brief(e) for p, e in loaded.evals.items()})
        tokens = {}
        if not loaded.game.over:
            for i, seat in enumerate(seats):
                if seat.kind == PERSON:
                    tokens[i] = new_token()
                    room.take(i, tokens[i], seat.name)
        self._admit(room)
        row = room.row()
        row.moves = list(room.game.records)
        row.evals = dict(loaded.evals)
        self.store.insert(row)
        return room, creator, tokens

    # -- changes --------------------------------------------------------------------------------------

    def commit(self, room: Room, *, moved: MoveRecord | None = None, rewritten: bool = False) -> None:
        """A change of ``room`` happened (``moved``: a move was played; ``rewritten``: moves were
        taken back or the game started again): store it, start what it needs, tell every page."""
        row = room.row()
        if moved is not None:
            self.store.add_move(row, room.game.plies - 1, moved)
        elif rewritten:
            self.store.rewrite(row, keep_evals=bool(room.evals))
        else:
            self.store.update(row)
        self.turns.kick(room)
        self.broadcast(room, room.moved(moved) if moved is not None else self.room_message(room))
        if moved is None:
            self._held(room)  # seats change hands only by changes other than moves
        self.evals.want(room)

    def room_message(self, room: Room) -> dict[str, Any]:
        return {"type": "room", "id": room.id, "version": room.version, "room": room.snapshot()}

    def broadcast(self, room: Room, message: dict[str, Any]) -> None:
        for watcher in list(room.watchers):
            watcher.send(message)

    def _engine_played(self, room: Room, move: tuple[int, int], by: str) -> None:
        try:
            record = room.play(move, by)
        except GameError as exc:  # cannot happen with a legal engine; said rather than hidden
            room.engine_error = f"the engine's move {move} was refused: {exc}"
            self._engine_failed(room)
            return
        self.commit(room, moved=record)

    def _engine_failed(self, room: Room) -> None:
        room.version += 1
        self.store.update(room.row())
        self.broadcast(room, self.room_message(room))

    def evaluated(self, room: Room, ply: int, record: dict[str, Any]) -> None:
        """Position ``ply`` of the room got an evaluation: kept whole, sent whole, held brief."""
        room.evals[ply] = brief(record)
        self.store.put_eval(room.id, ply, record)
        self.broadcast(room, {"type": "eval", "id": room.id, "line": room.line, "ply": ply, "eval": record,
                              "marks": room.marks()})

    # -- pages ----------------------------------------------------------------------------------------

    def watch(self, room: Room, watcher: Watcher) -> None:
        if len(room.watchers) >= self.limits.max_watchers:
            raise ChoiceError(f"this game has {self.limits.max_watchers} pages open on it, the most it takes")
        room.watchers.add(watcher)
        watcher.send(self.room_message(room))
        self.turns.kick(room)
        self.evals.want(room)
        self._clock(room)

    def claim(self, room: Room, watcher: Watcher, tokens: dict[int, str]) -> None:
        """A page's secrets: the seats they hold are the page's (``held``), and its players are
        here (``presence``; a seat whose player is away is idle)."""
        watcher.tokens = dict(tokens)
        watcher.seats = set()
        self._held(room, watcher)

    def _held(self, room: Room, only: Watcher | None = None) -> None:
        """Tell each page (or ``only`` one) which seats it holds, where that changed."""
        changed = False
        for watcher in [only] if only is not None else list(room.watchers):
            seats = room.held_by(watcher.tokens)
            if seats != watcher.seats or only is not None:
                watcher.seats = seats
                watcher.send({"type": "held", "id": room.id, "seats": sorted(seats)})
                changed = True
        if changed:
            self.presence(room)

    def unwatch(self, room: Room, watcher: Watcher) -> None:
        room.watchers.discard(watcher)
        self.turns.kick(room)  # nobody left: the engine and the timer stop
        if watcher.seats:
            self.presence(room)

    def presence(self, room: Room) -> None:
        self.broadcast(room, {"type": "presence", "id": room.id, "connected": sorted(room.connected())})

    def _clock(self, room: Room) -> None:
        self.broadcast(room, {"type": "clock", "id": room.id, "version": room.version,
                              "deadline_in": None if room.deadline is None else round(room.deadline - time.time(), 2)})

    # -- defaults ---------------------------------------------------------------------------------------

    def default_seats(self, rules: Rules) -> list[Seat]:
        """A person in seat 0 and the preset's default engine in the others (the ``&play`` link)."""
        engine = self.engines.resolve(self.default_engine(rules), rules)
        return [Seat(kind=PERSON)] + [Seat(kind=ENGINE, engine=engine) for _ in range(rules.players - 1)]

    def default_engine(self, rules: Rules) -> EngineChoice:
        """hopzero's model at Club where one ships for the preset, else alpha-beta at Club."""
        return EngineChoice(kind="model" if self.engines.has_model(rules) else "alphabeta", level="club")

