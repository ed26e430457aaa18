"""The server plays the engine seats and keeps the turn timers, for every room someone watches.

After every change of a room (and when its first page opens or its last closes) :meth:`Turns.kick`
looks at whose turn it is. An engine seat gets a job: wait the room's pace, build the engine
(loading its model off the event loop the first time), think on the engine pool with the thinking
sent to every page as it grows, and play the move if the room has not changed meanwhile. A person
seat with a timer gets a job that plays greedy's move for it when the time runs out. A job belongs
to one version of the room: any change stops it (a search stops at its next chunk) and a new one
starts for the new version. A room nobody watches waits: its jobs stop and start again when a page
opens it.

The browser never asks for an engine's move, so no page can be left waiting for one: a server
restart, a reload or a dropped connection only pauses the room until a page is back.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from learner.players import make_player

from .engines import Engines
from .limits import ChoiceError
from .rooms import Room
from .seats import ENGINE, PERSON
from .thinking import Thought, think

__all__ = ["PROGRESS_EVERY_S", "Turns", "move_seed"]

log = logging.getLogger(__name__)
#: Least time between two thinking messages of one search (seconds).
PROGRESS_EVERY_S = 0.2
#: Who plays a person's move when the timer runs out.
TIMEOUT_PLAYER = "greedy"


def move_seed(room_id: str, ply: int, salt: str = "") -> int:
    """A seed for the engine move at ``ply`` of a room: the same on every server run, so a game
    continued after a restart plays as it would have."""
    digest = hashlib.sha256(f"{room_id}:{ply}:{salt}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


@dataclass
class _Job:
    version: int
    task: asyncio.Task[None]
    stop: threading.Event

    def cancel(self) -> None:
        self.stop.set()
        self.task.cancel()


class Turns:
    """The engine and timer jobs of the rooms in memory."""

    def __init__(self, engines: Engines, pool: ThreadPoolExecutor,
                 play: Callable[[Room, tuple[int, int], str], None],
                 broadcast: Callable[[Room, dict[str, Any]], None],
                 failed: Callable[[Room], None]) -> None:
        self.engines = engines
        self.pool = pool
        self._play = play
        self._broadcast = broadcast
        self._failed = failed
        self._jobs: dict[str, _Job] = {}

    def forget(self, room: Room) -> None:
        """Stop the room's job (the room leaves memory)."""
        job = self._jobs.pop(room.id, None)
        if job is not None:
            job.cancel()
        room.deadline = None

    def busy(self, room: Room) -> bool:
        """Whether a job of the room runs now (an engine thinking, a timer ticking)."""
        job = self._jobs.get(room.id)
        return job is not None and not job.task.done()

    def kick(self, room: Room) -> None:
        """Start what the room's current version needs (see the module docstring); synchronous
        up to the job's start, so that a timer's deadline is set when the caller sends the room."""
        job = self._jobs.get(room.id)
        if job is not None and job.version == room.version and not job.task.done():
            return
        if job is not None:
            if job.task is not asyncio.current_task():  # a job that just played its move ends by itself
                job.cancel()
            del self._jobs[room.id]
        room.deadline = None
        game = room.game
        if game.over or not room.watchers or room.engine_error is not None:
            return
        seat = room.seats[game.to_move]
        stop = threading.Event()
        if seat.kind == ENGINE:
            task = asyncio.get_running_loop().create_task(self._engine_move(room, room.version, stop))
        elif seat.kind == PERSON and room.settings.timer_s:
            room.deadline = time.time() + room.settings.timer_s
            task = asyncio.get_running_loop().create_task(self._timeout(room, room.version))
        else:
            return
        self._jobs[room.id] = _Job(room.version, task, stop)

    async def _timeout(self, room: Room, version: int) -> None:
        assert room.deadline is not None
        await asyncio.sleep(max(0.0, room.deadline - time.time()))
        if room.version != version or room.game.over:
            return
        player = make_player(TIMEOUT_PLAYER, room.rules, move_seed(room.id, room.game.plies, "timeout"))
        self._play(room, tuple(player.select(room.game.state.copy())), "timeout")  # type: ignore[arg-type]

    async def _engine_move(self, room: Room, version: int, stop: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        seat = room.game.to_move
        engine = room.seats[seat].engine
        assert engine is not None
        last = [0.0]

        def progress(thought: Thought) -> None:  # on the search thread
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_S:
                last[0] = now
                message = {"type": "thinking", "id": room.id, "version": version, "seat": seat,
                           "engine": engine.label, "thought": thought.to_dict()}
                loop.call_soon_threadsafe(self._broadcast, room, message)

        try:
            await asyncio.sleep(room.settings.pace_ms / 1000)
            thinker = await self.engines.thinker(engine, room.rules, move_seed(room.id, room.game.plies))
            if room.version != version:
                return
            state = room.game.state.copy()
            room.thinking = True
            thought = await loop.run_in_executor(
                self.pool, lambda: think(thinker, state, progress=progress, stop=stop.is_set))
        except ChoiceError as exc:
            self._fail(room, version, str(exc))
            return
        except (RuntimeError, ValueError, OSError, MemoryError) as exc:  # a model that fails: tell the pages
            log.warning("engine %s failed in room %s: %s", engine.spec, room.id, exc)
            self._fail(room, version, f"{engine.label} failed: {exc}")
            return
        finally:
            room.thinking = False
        if room.version == version and not stop.is_set():
            self._play(room, thought.move, engine.spec)

    def _fail(self, room: Room, version: int, why: str) -> None:
        if room.version == version:
            room.engine_error = why
            self._failed(room)
