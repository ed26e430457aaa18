"""The FastAPI application behind ``hopzero serve``, and ``serve`` itself (docs/WEB.md).

The application is one router per view (:mod:`~hopzero.web.routes_games`: rooms and games;
:mod:`~hopzero.web.routes_analysis`: the analysis board's engine; :mod:`~hopzero.web.routes_runs`;
:mod:`~hopzero.web.routes_tables`) over one :class:`~hopzero.web.server.Server`, plus the pages,
the static files, what every page asks first (``/api/info``, ``/api/presets/{name}``) and two
guards in front of everything: the ``Host``/``Origin`` check (:mod:`hopzero.web.security`) and
the size limit of request bodies (a game file may be larger than other requests).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from ccengine import PRESET_NAMES

from . import routes_analysis, routes_games, routes_runs, routes_tables
from .engines import ANALYSIS_SIMS, LEVELS, RACE_PLAN_LEVELS
from .gamefile import MAX_FILE_BYTES
from .geometry import board_info
from .limits import ChoiceError, Limits
from .messages import validation_text
from .routes_games import error, guard
from .server import Server, rules_of
from .sockets import HARD_FRAME_BYTES

__all__ = ["PRESETS", "create_app", "default_data_dir", "serve"]

#: Presets offered in the page's list (any ``small-N-k`` is accepted too).
PRESETS = tuple(p for p in PRESET_NAMES if p != "small-N-k") + ("small-4-3", "small-5-3", "small-6-6")
#: Requests whose body may be a whole game file.
_LARGE_BODIES = ("/api/games/import",)

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def default_data_dir() -> Path:
    """Where games are kept without ``--data``: ``$XDG_DATA_HOME/hopzero``, else
    ``~/.local/share/hopzero``."""
    import os

    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hopzero"


class _Guard:
    """ASGI middleware: the ``Host``/``Origin`` check for requests and websockets, and the body
    size limit (``Content-Length`` required for a body; larger ones get 413)."""

    def __init__(self, app: Any, server: Server) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        why = self.server.hosts.refusal(headers.get("host"), headers.get("origin"))
        if why is None and scope["type"] == "http":
            why_size = self._size(scope, headers)
            if why_size is not None:
                await error(why_size[0], why_size[1])(scope, receive, send)
                return
        if why is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": why[:120]})
        else:
            await error(403, why)(scope, receive, send)

    def _size(self, scope: dict[str, Any], headers: dict[str, str]) -> tuple[int, str] | None:
        limit = MAX_FILE_BYTES if scope["path"] in _LARGE_BODIES else self.server.limits.max_body_bytes
        size = headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > limit):
            return 413, f"request body too large: at most {limit} bytes"
        if scope["method"] in ("POST", "PUT") and size is None and headers.get("transfer-encoding"):
            # a streamed body of unknown length would have to be read before it could be judged
            return 411, "a request body needs a Content-Length (streamed bodies are not accepted)"
        return None


def _static_dir() -> Path:
    return Path(str(resources.files("hopzero.web").joinpath("static")))


def create_app(
    *,
    data_dir: str | Path,
    run_dirs: list[str | Path] | tuple[()] = (),
    limits: Limits | None = None,
    results: list[str | Path] | tuple[()] = (),
    allowed_hosts: list[str] | tuple[str, ...] = (),
) -> FastAPI:
    """The application: games kept in ``data_dir``, ``run_dirs`` shown (by index), ``limits``,
    ``results`` (match result files or tournament directories) in the Tables view, and the
    ``Host`` names ``allowed_hosts`` accepted besides localhost and IP addresses."""
    limits = limits or Limits()
    server = Server.build(data_dir=data_dir, limits=limits, run_dirs=list(run_dirs), results=list(results),
                          allowed_hosts=list(allowed_hosts))

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        server.hall.expire()
        server.hall.start()
        try:
            yield
        finally:
            await server.close()

    app = FastAPI(title="hopzero", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.server = server
    static = _static_dir()

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error(422, f"invalid request: {validation_text(exc)}")

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(static / "index.html")

    @app.get("/g/{room_id}", include_in_schema=False)
    async def room_page(room_id: str) -> FileResponse:
        return FileResponse(static / "index.html")

    app.mount("/static", StaticFiles(directory=static), name="static")

    @app.get("/api/info")
    async def info() -> dict[str, Any]:
        return {
            "presets": list(PRESETS),
            "limits": {"max_simulations": limits.max_simulations, "max_depth": limits.max_depth,
                       "max_searches": limits.max_searches, "max_rooms": limits.max_rooms,
                       "keep_days": limits.keep_days},
            "levels": {**{kind: {"unit": unit, "numbers": list(numbers)} for kind, (unit, numbers) in LEVELS.items()},
                       "alphabeta-race-plan": {"unit": RACE_PLAN_LEVELS[0], "numbers": list(RACE_PLAN_LEVELS[1])}},
            "analysis_sims": ANALYSIS_SIMS,
            "runs": [{"index": i, "name": p.name, "preset": server.runs.preset(i)}
                     for i, p in enumerate(server.runs.paths)],
            "results": len(server.tables.paths),
            "models": server.library.loaded(),
        }

    @app.get("/api/presets/{name}")
    async def preset_info(name: str) -> Any:
        def run() -> dict[str, Any]:
            if len(name) > 16:
                raise ChoiceError("preset name too long")
            rules = rules_of(name)
            return {"board": board_info(rules), "engines": server.engines.catalogue(rules),
                    "default_engine": server.hall.default_engine(rules).model_dump(),
                    "analyst": server.engines.analyst(rules).label}

        return guard(run)

    for view in (routes_games, routes_analysis, routes_runs, routes_tables):
        app.include_router(view.router(server))
    app.add_middleware(_Guard, server=server)
    return app


_BACKLOG = 2048
"""Connections the listening socket queues (uvicorn's default)."""


def serve(
    host: str, port: int, *, data_dir: str | Path, limits: Limits, out: TextIO,
    run_dirs: list[str | Path] | tuple[()] = (), results: list[str | Path] | tuple[()] = (),
    allowed_hosts: list[str] | tuple[str, ...] = (),
) -> int:
    """Run the server until Ctrl-C: bind ``host:port`` (port 0: a free one), print the address
    to ``out``, serve. Returns the exit status."""
    import ipaddress
    import socket

    import uvicorn

    # a bad --run-dir, --results or --data fails before anything listens
    app = create_app(data_dir=data_dir, run_dirs=run_dirs, limits=limits, results=results,
                     allowed_hosts=allowed_hosts)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        # Listening before the address is printed: a browser (or a script) that opens it at once
        # would otherwise be refused until uvicorn has started up.
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        raise ChoiceError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    out.write(f"hopzero serve: open http://{shown}:{bound}/ (Ctrl-C stops)\n")
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        out.write(f"hopzero serve: listening on {host}: anyone who can reach this address can use the server "
                  "(names other than IP addresses and localhost need --allow-host)\n")
    out.write(f"hopzero serve: games kept in {app.state.server.store.path}\n")
    out.flush()
    # open websockets (a page left open) must not hold a Ctrl-C or a SIGTERM up for long
    config = uvicorn.Config(app, log_level="warning", ws_max_size=HARD_FRAME_BYTES, lifespan="on",
                            timeout_graceful_shutdown=3, backlog=_BACKLOG)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
