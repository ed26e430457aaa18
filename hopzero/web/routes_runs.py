"""The run view: a training run's evaluations, gates, promotions, ratings and kept games, and its
live feed (the run's files are looked at every ``RUN_POLL_S`` and sent again when they change)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, WebSocket
from fastapi import Path as FastApiPath

from .geometry import board_info
from .limits import ChoiceError
from .routes_games import guard
from .runs import run_game, run_stamp, run_summary
from .server import Server
from .sockets import PageSocket

__all__ = ["RUN_POLL_S", "router"]

#: How often the run view looks at a run's files for changes (seconds).
RUN_POLL_S = 2.0


def router(server: Server) -> APIRouter:
    """The run view's routes over ``server``."""
    api = APIRouter()

    @api.get("/api/runs/{index}")
    async def run_view(index: int) -> Any:
        return guard(lambda: run_summary(index, server.runs.get(index)))

    @api.get("/api/runs/{index}/games/{game_id}")
    async def run_game_view(index: int, game_id: Annotated[int, FastApiPath(ge=0, le=2**53)]) -> Any:
        def run() -> dict[str, Any]:
            game = run_game(server.runs.get(index), game_id)
            return {**game, "board": board_info(game.pop("rules"))}

        return guard(run)

    @api.websocket("/ws/runs/{index}")
    async def run_feed(websocket: WebSocket, index: int) -> None:
        await websocket.accept()
        page = PageSocket(websocket, server.limits.max_body_bytes)

        async def poll() -> None:
            try:
                path = server.runs.get(index)
            except ChoiceError as exc:
                page.say(str(exc))
                return
            stamp = None
            while True:
                now = await asyncio.to_thread(run_stamp, path)
                if now != stamp:
                    stamp = now
                    page.out.send({"type": "run", "run": await asyncio.to_thread(run_summary, index, path)})
                await asyncio.sleep(RUN_POLL_S)

        async def handle(_: str) -> None:  # the page sends nothing; a stray frame is answered
            page.say("the run feed takes no messages")

        page.tasks.start(poll())
        await page.serve(str, handle)

    return api
