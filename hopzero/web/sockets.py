"""What every websocket of the server shares (:class:`PageSocket`): a bounded outbox, reading a
frame safely, and tasks that end with it.

- :class:`Outbox`: the messages waiting to go to the page, at most ``OUTBOX_MESSAGES``; a page
  that cannot keep up is disconnected (it reconnects and gets the state afresh), so a slow page
  never makes the server hold an ever longer backlog.
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
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect
from pydantic import ValidationError

from .messages import validation_text

__all__ = ["HARD_FRAME_BYTES", "OUTBOX_MESSAGES", "Outbox", "PageSocket", "SocketTasks", "next_text", "sender"]

#: Largest frame the transport reads at all (uvicorn's ``ws_max_size``); the server answers
#: anything between its message limit and this with an error message.
HARD_FRAME_BYTES = 1 << 20
#: Messages a page may have waiting before it is disconnected as too slow.
OUTBOX_MESSAGES = 512


class Outbox:
    """A page's outgoing messages (see the module docstring); None ends its socket."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(maxsize=OUTBOX_MESSAGES)
        self.dropped = False

    def send(self, message: dict[str, Any] | None) -> None:
        if self.dropped:
            return
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:  # too slow: end its socket; it reconnects to a fresh state
            self.dropped = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(None)


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



class PageSocket:
    """An accepted websocket with its outbox and tasks: :meth:`serve` sends the outbox, hands
    each good text frame to a handler, and ends every task when the socket closes."""

    def __init__(self, websocket: WebSocket, limit: int, out: Outbox | None = None, **error_fields: Any) -> None:
        self.websocket = websocket
        self.limit = limit
        self.out = out if out is not None else Outbox()
        self.tasks = SocketTasks()
        self._fields = error_fields

    def say(self, text: str, **extra: Any) -> None:
        """An ``error`` message to the page."""
        self.out.send({"type": "error", **self._fields, **extra, "error": text})

    async def serve(self, parse: Callable[[str], Any], handle: Callable[[Any], Awaitable[None]]) -> None:
        """Until the page goes: send what the outbox gets, and ``await handle(parse(text))`` for
        each frame (a frame ``parse`` refuses is answered with what is wrong with it)."""
        self.tasks.start(sender(self.websocket, self.out.queue))
        try:
            while (text := await next_text(self.websocket, self.limit, self.say)) is not None:
                try:
                    message = parse(text)
                except ValidationError as exc:
                    self.say(f"invalid message: {validation_text(exc)}")
                    continue
                await handle(message)
        except (RuntimeError, OSError):  # the transport went away mid-read
            pass
        finally:
            await self.tasks.close()
