"""The analysis board's engine: any position of a game searched on request, and the evaluations
the server keeps of every position.

``/ws/analysis/{id}`` takes ``analyze`` (a position of the game by its ply, a number of
simulations, a request number) and ``stop``, and answers ``analysis`` messages as the search
grows (``final`` on the last one) with the request number, the ply and the game's line, so that
the page drops answers to a question it no longer asks. A page has one analysis at a time: a new
``analyze`` stops the running one and takes over its place. A page without a running analysis
takes a place among ``Limits.max_searches`` when its request is accepted, or is refused with a
message (never queued). The search is the game's analysis engine (one per game, whatever the
simulations asked). An analysis at least as deep as the stored evaluation of its position
replaces it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from fastapi import APIRouter, WebSocket

from .analysis import evaluation
from .limits import ChoiceError
from .messages import AnalysisMessage, StopMessage, analysis_message
from .rooms import Room
from .routes_games import guard
from .server import Server
from .sockets import PageSocket
from .thinking import Thought, think
from .turns import PROGRESS_EVERY_S, move_seed

__all__ = ["router"]


class _Session:
    """One page's analysis socket: its running search and its place among the searches."""

    def __init__(self, server: Server, page: PageSocket) -> None:
        self.server = server
        self.room_id = str(page.websocket.path_params["room_id"])
        self.page = page
        self.out = page.out
        self.running: asyncio.Task[None] | None = None
        self.stop = threading.Event()
        self.has_slot = False
        #: A new analysis is taking the running one's place (which then keeps the slot).
        self.handing_over = False

    def error(self, text: str, req: int | None = None) -> None:
        self.page.say(text, req=req)

    async def handle(self, msg: AnalysisMessage | StopMessage) -> None:
        if isinstance(msg, StopMessage):
            self.stop.set()
            return
        try:
            room = self.server.hall.get(self.room_id)
            if msg.sims > self.server.limits.max_simulations:
                raise ChoiceError(f"sims={msg.sims}: this server allows at most {self.server.limits.max_simulations}")
            if msg.line != room.line or msg.ply > room.game.plies:
                raise ChoiceError("that position is no longer in the game (moves were taken back): reload")
        except (LookupError, ChoiceError) as exc:
            self.error(str(exc.args[0]), msg.req)
            return
        if self.running is not None and not self.running.done():
            self.handing_over = True
            self.stop.set()  # the running search ends at its next chunk; its place passes on
            await asyncio.gather(self.running, return_exceptions=True)
            self.handing_over = False
        elif not self.has_slot:
            slots = self.server.pools.slots
            if not slots.take():
                self.error(f"the server is busy: {slots.used} analyses are running (at most {slots.limit}); "
                           "try again in a moment", msg.req)
                return
            self.has_slot = True
        self.stop = threading.Event()
        self.running = self.page.tasks.start(self._analyse(room, msg, self.stop))

    async def _analyse(self, room: Room, msg: AnalysisMessage, stop: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        base = {"type": "analysis", "id": room.id, "req": msg.req, "ply": msg.ply, "line": msg.line}
        last = [0.0]

        def progress(thought: Thought) -> None:  # on the search thread
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_S:
                last[0] = now
                loop.call_soon_threadsafe(self.out.send, {**base, "final": False, "thought": thought.to_dict()})

        try:
            state = room.game.state_at(msg.ply)
            if state.is_terminal():
                scores = [float(x) for x in state.scores()]
                self.out.send({**base, "final": True, "thought": {
                    "move": None, "mover": int(state.to_move), "simulations": 0, "shares": scores,
                    "prior_shares": None, "top": [], "stopped": False, "exact": True}})
                return
            thinker = await self.server.engines.thinker(room.analyst, room.rules, move_seed(room.id, msg.ply, "analysis"))
            thought = await loop.run_in_executor(
                self.server.pools.analysis,
                lambda: think(thinker, state, simulations=msg.sims, progress=progress, stop=stop.is_set))
            self.out.send({**base, "final": True, "thought": thought.to_dict()})
            self._keep(room, msg, thought)
        except ChoiceError as exc:
            self.error(str(exc), msg.req)
        except (RuntimeError, ValueError, OSError, MemoryError) as exc:
            self.error(f"the analysis failed: {exc}", msg.req)
        finally:
            if not self.handing_over:
                self.release()

    def _keep(self, room: Room, msg: AnalysisMessage, thought: Thought) -> None:
        """A finished analysis at least as deep as the stored evaluation replaces it."""
        if thought.stopped or room.line != msg.line or msg.ply > room.game.plies:
            return
        stored = room.evals.get(msg.ply)
        record = evaluation(thought, room.analyst.label)
        if record is not None and (stored is None or (not stored["exact"] and stored["sims"] <= thought.simulations)):
            self.server.hall.evaluated(room, msg.ply, record)

    def release(self) -> None:
        """Give the place among the searches back (once)."""
        if self.has_slot:
            self.has_slot = False
            self.server.pools.slots.give_back()

    def close(self) -> None:
        self.stop.set()
        self.release()


def router(server: Server) -> APIRouter:
    """The analysis routes over ``server``."""
    api = APIRouter()
    hall = server.hall

    @api.get("/api/games/{room_id}/evals/{ply}")
    async def one_evaluation(room_id: str, ply: int) -> Any:
        def run() -> dict[str, Any]:
            room = hall.get(room_id)
            found = server.store.evaluation(room.id, ply) if ply in room.evals else None
            return {"id": room.id, "line": room.line, "ply": ply, "eval": found}

        return guard(run)

    @api.websocket("/ws/analysis/{room_id}")
    async def analysis_feed(websocket: WebSocket, room_id: str) -> None:
        await websocket.accept()
        page = PageSocket(websocket, server.limits.max_body_bytes, id=room_id)
        session = _Session(server, page)

        try:
            await page.serve(analysis_message, session.handle)
        finally:
            session.close()

    return api

