"""The evaluation of every position of the games people watch, for the win-chance graph and the
marked mistakes (:mod:`hopzero.web.analysis`).

One worker task takes one position at a time from the rooms that need one and have a page open:
the newest position of a room first (so the win bar follows the game), then the older positions
it lacks, newest first (a finished game opened as a replay fills its graph from the end). It
searches on the single ``evals`` thread with the room's analysis engine (at
``engines.ANALYSIS_SIMS``); a finished position's evaluation is its result. A result for a line
of the game that was rewritten meanwhile (an undo) is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .analysis import evaluation, exact_evaluation
from .engines import Engines
from .limits import ChoiceError
from .rooms import Room
from .thinking import think
from .turns import move_seed

__all__ = ["Evaluations"]

log = logging.getLogger(__name__)


class Evaluations:
    """The worker and the rooms waiting for it."""

    def __init__(self, engines: Engines, pool: ThreadPoolExecutor,
                 done: Callable[[Room, int, dict[str, Any]], None]) -> None:
        self.engines = engines
        self.pool = pool
        self._done = done
        self._rooms: dict[str, Room] = {}
        self._wake = asyncio.Event()

    def want(self, room: Room) -> None:
        """The room may lack evaluations (a move was played, a page opened it)."""
        self._rooms[room.id] = room
        self._wake.set()

    def forget(self, room: Room) -> None:
        self._rooms.pop(room.id, None)

    def _next(self) -> tuple[Room, int] | None:
        for room_id, room in list(self._rooms.items()):
            if not room.watchers:
                continue  # kept: evaluated when a page opens it again
            plies = room.game.plies
            missing = next((p for p in range(plies, -1, -1) if p not in room.evals), None)
            if missing is None:
                del self._rooms[room_id]
                continue
            # round robin: the room goes to the back of the queue
            del self._rooms[room_id]
            self._rooms[room_id] = room
            return room, missing
        return None

    async def run(self) -> None:
        """The worker (runs until cancelled)."""
        while True:
            job = self._next()
            if job is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            room, ply = job
            try:
                await self._evaluate(room, ply)
            except ChoiceError as exc:  # the analysis model cannot load: this room gets no graph
                log.warning("no evaluations for room %s: %s", room.id, exc)
                self.forget(room)
            except (RuntimeError, ValueError, OSError, MemoryError) as exc:
                log.warning("evaluating ply %s of room %s failed: %s", ply, room.id, exc)
                self.forget(room)

    async def _evaluate(self, room: Room, ply: int) -> None:
        line, game = room.line, room.game
        state = game.state_at(ply)
        if state.is_terminal():
            record = exact_evaluation([float(x) for x in state.scores()], int(state.to_move))
        else:
            thinker = await self.engines.thinker(room.analyst, room.rules, move_seed(room.id, ply, "eval"))
            thought = await asyncio.get_running_loop().run_in_executor(self.pool, lambda: think(thinker, state))
            found = evaluation(thought, room.analyst.label)
            if found is None:
                raise ValueError(f"the analysis engine {room.analyst.label} gave no evaluation")
            record = found
        if room.line == line and room.game is game and ply <= game.plies and ply not in room.evals:
            self._done(room, ply, record)
