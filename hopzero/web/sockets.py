"""What every websocket of the server shares: reading a frame safely, and tasks that end with it.

- :func:`next_text`: the next text frame, or an ``error`` message to the page for a binary
  frame or one over the size limit (the connection stays open: a page that sends a wrong frame
  is told, not dropped). Frames beyond the transport's hard cap (``HARD_FRAME_BYTES``) are
  refused by uvicorn itself with close code 1009.
- :class:`SocketTasks`: the tasks a socket starts (its sender, its searches, its polling),
  counted server-wide in :attr:`SocketTasks.live` and all cancelled and awaited when the socket
  ends, so nothing a socket started outlives it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect

__all__ = ["HARD_FRAME_BYTES", "SocketTasks", "next_text", "sender"]

#: Largest frame the transport reads at all (uvicorn's ``ws_max_size``); the server answers
#: anything between its message limit and this with an error message.
HARD_FRAME_BYTES = 1 << 20


class SocketTasks:
    """The tasks of one socket; :attr:`live` counts those of every socket of the process."""

    live: set[asyncio.Task[Any]] = set()

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()

    def start(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        SocketTasks.live.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        SocketTasks.live.discard(task)

    async def close(self) -> None:
        """Cancel every task of the socket and wait until they have ended."""
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def next_text(websocket: WebSocket, limit: int, say: Any) -> str | None:
    """The next text frame of ``websocket``; None when it closed. A binary frame, or a text over
    ``limit`` bytes, is answered through ``say(error_text)`` and skipped."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return None
        text = message.get("text")
        if text is None:
            say("binary frames are not accepted: send JSON text")
            continue
        if len(text.encode("utf-8")) > limit:
            say(f"message too large: at most {limit} bytes")
            continue
        return text


async def sender(websocket: WebSocket, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
    """Send the queue's messages until a None (the socket is to close) or a send fails."""
    while (message := await queue.get()) is not None:
        try:
            await websocket.send_json(message)
        except (WebSocketDisconnect, RuntimeError, OSError):
            return
    try:
        await websocket.close()
    except (RuntimeError, OSError):
        pass

