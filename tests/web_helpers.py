"""``hopzero serve``'s application run for real in the test process: uvicorn on a free loopback
port in a thread, HTTP through httpx and websockets through the ``websockets`` client, each read
with a timeout (a missing message fails the test instead of hanging it)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from websockets.sync.client import ClientConnection, connect

from hopzero.web.app import create_app
from hopzero.web.limits import Limits

WAIT_S = 60.0


class LiveServer:
    """The app of ``data_dir`` served on 127.0.0.1 until :meth:`stop`."""

    def __init__(self, data_dir: Path, limits: Limits | None = None, **options: Any) -> None:
        self.app = create_app(data_dir=data_dir, limits=limits or Limits(), **options)
        self.server = self.app.state.server
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.uvicorn = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="on",
                                                     ws_max_size=1 << 20, timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.uvicorn.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + WAIT_S
        while not self.uvicorn.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        self.http = httpx.Client(base_url=self.base, timeout=WAIT_S)

    def stop(self) -> None:
        self.http.close()
        self.uvicorn.should_exit = True
        self.thread.join(timeout=WAIT_S)
        self.sock.close()

    # -- HTTP ---------------------------------------------------------------------------------------

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.http.get(path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        return self.http.post(path, json=body if body is not None else {}, **kw)

    def ok(self, path: str, body: Any = None) -> dict[str, Any]:
        """POST that must succeed; its JSON."""
        r = self.post(path, body)
        assert r.status_code == 200, r.text
        return r.json()

    def new_room(self, preset: str = "small-4-3", seats: list[dict[str, Any]] | None = None, **extra: Any) -> dict:
        body: dict[str, Any] = {"preset": preset, "settings": {"pace_ms": 0}, **extra}
        if seats is not None:
            body["seats"] = seats
        return self.ok("/api/games", body)

    def room(self, room_id: str) -> dict[str, Any]:
        r = self.get(f"/api/games/{room_id}")
        assert r.status_code == 200, r.text
        return r.json()["room"]

    # -- websockets ---------------------------------------------------------------------------------

    def socket(self, path: str, host: str = "127.0.0.1", **kw: Any) -> Feed:
        """A websocket on ``path``; ``host``: the name in its URL (and so its Host header), the
        connection going to this server whatever the name (as after a DNS rebinding)."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT_S)
        return Feed(connect(f"ws://{host}:{self.port}{path}", sock=sock, open_timeout=WAIT_S, max_size=None, **kw))


class Feed:
    """A websocket whose messages are read with a timeout."""

    def __init__(self, opening: Any) -> None:
        self._opening = opening
        self.ws: ClientConnection = opening.__enter__()

    def send(self, message: dict[str, Any] | str | bytes) -> None:
        self.ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))

    def next(self, timeout: float = WAIT_S) -> dict[str, Any]:
        return json.loads(self.ws.recv(timeout=timeout))

    def until(self, want: Callable[[dict[str, Any]], bool], timeout: float = WAIT_S) -> dict[str, Any]:
        """The first message ``want`` accepts (the others are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.next(max(0.01, deadline - time.monotonic()))
            if want(message):
                return message

    def close(self) -> None:
        self._opening.__exit__(None, None, None)

    def __enter__(self) -> Feed:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def person() -> dict[str, Any]:
    return {"kind": "person"}


def engine(kind: str = "greedy", **choice: Any) -> dict[str, Any]:
    return {"kind": "engine", "engine": {"kind": kind, **choice}}


def first_legal(room: dict[str, Any]) -> list[int]:
    s, ends = next(iter(room["legal"].items()))
    return [int(s), ends[0]]
