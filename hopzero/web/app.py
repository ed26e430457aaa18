"""The FastAPI application behind ``hopzero serve`` (docs/WEB.md lists its routes and messages).

HTTP changes a game (move, undo, resign, swap sides, new game, load a position) and reads the
runs; a websocket per page carries what takes time: the opponent's reply and the analysis of a
position, their statistics sent as the search grows. Searches run on a thread pool, at most
``Limits.max_searches`` at once over all clients (one more is refused with a message, not
queued), and stop at their next chunk when their client sends ``stop`` or goes away.

Every request body and websocket message is a pydantic model with bounded fields, and at most
``Limits.max_body_bytes`` long; a bad one gets ``{"error": "..."}`` (HTTP 4xx, or an ``error``
message on the websocket) and changes nothing. A client names games by their random id and runs
by their index among the ``--run-dir`` options: never a path.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, TextIO

from fastapi import FastAPI, Query, Request, WebSocket, WebSocketDisconnect
from fastapi import Path as FastApiPath
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ccengine import PASS, Rules, preset
from ccengine.players import Player
from ccengine.rules import RulesError

from .board import Game, GameError, cell_points
from .opponents import SEARCH_KINDS, ChoiceError, Limits, OpponentChoice, Opponents, RunDirs
from .runs import run_game, run_stamp, run_summary
from .tables import Tables
from .thinking import Thought, think

__all__ = ["create_app", "serve"]

#: Presets offered in the page's list (any ``small-N-k`` is accepted too).
PRESETS = ("cc49", "paper", "cc81", "star2", "small-4-3", "small-5-3", "small-6-6")
#: How often the run view looks at a run's files for changes (seconds).
RUN_POLL_S = 2.0
#: Least time between two progress messages of one search (seconds).
PROGRESS_EVERY_S = 0.15


# ---------------------------------------------------------------------------------------------
# Messages from the browser
# ---------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewGame(_Strict):
    preset: str = Field("cc49", min_length=1, max_length=16, pattern=r"^[a-z0-9-]+$")
    side: Literal["x", "o"] = "x"
    opponent: OpponentChoice = OpponentChoice()


class MoveRequest(_Strict):
    move: tuple[int, int] = Field(description="[start cell, end cell]; [-1, -1] is a pass")
    version: int | None = Field(None, ge=0, description="the game version the move was chosen in")


class PositionRequest(_Strict):
    text: str = Field(min_length=1, max_length=400)


class ReplyMessage(_Strict):
    type: Literal["reply"]


class AnalyzeMessage(_Strict):
    type: Literal["analyze"]
    sims: int = Field(400, ge=1, le=1_000_000)
    engine: OpponentChoice | None = None


class StopMessage(_Strict):
    type: Literal["stop"]


_SOCKET_MESSAGE: TypeAdapter[Any] = TypeAdapter(
    Annotated[ReplyMessage | AnalyzeMessage | StopMessage, Field(discriminator="type")]
)


def _validation_text(exc: ValidationError | RequestValidationError) -> str:
    """One line per problem: where it is and what is wrong."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "message"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts[:5])


# ---------------------------------------------------------------------------------------------
# The server's state
# ---------------------------------------------------------------------------------------------


@dataclass
class _Entry:
    """A game with its opponent and the engines that analysed it."""

    game: Game
    player: Player
    seed: int
    analyzers: dict[str, Player] = field(default_factory=dict)
    busy: bool = False


class _Server:
    def __init__(self, runs: RunDirs, limits: Limits, tables: Tables) -> None:
        self.limits = limits
        self.runs = runs
        self.tables = tables
        self.opponents = Opponents(runs, limits)
        self.games: OrderedDict[str, _Entry] = OrderedDict()
        self.searching = 0
        self.executor = ThreadPoolExecutor(max_workers=limits.max_searches, thread_name_prefix="hopzero-search")

    def entry(self, game_id: str) -> _Entry:
        entry = self.games.get(game_id)
        if entry is None:
            raise LookupError(f"no game {game_id!r} (games are kept in memory; the server may have restarted)")
        self.games.move_to_end(game_id)
        return entry

    def add(self, entry: _Entry) -> str:
        game_id = secrets.token_hex(8)
        self.games[game_id] = entry
        while len(self.games) > self.limits.max_games:
            oldest = next(k for k, e in self.games.items() if not e.busy)
            del self.games[oldest]
        return game_id

    def analyzer(self, entry: _Entry, choice: OpponentChoice | None) -> Player:
        """The search player that analyses a game: the one asked for, else its opponent when that
        is a search, else the preset's shipped model when there is one, else greedy playouts."""
        game = entry.game
        if choice is None:
            opponent = OpponentChoice(**game.opponent)
            if opponent.kind in SEARCH_KINDS:
                return entry.player
            choice = OpponentChoice(kind="mcts-rollout", sims=200)
            for item in self.opponents.catalogue(game.rules):
                if item["choice"].get("model") == "shipped":
                    choice = OpponentChoice(**item["choice"])
        if choice.kind not in SEARCH_KINDS:
            raise ChoiceError(f"analysis needs a search (kind {' or '.join(SEARCH_KINDS)}), not {choice.kind!r}")
        spec = self.opponents.spec(choice, game.rules)
        if spec not in entry.analyzers:
            entry.analyzers[spec] = self.opponents.build(choice, game.rules, entry.seed)
        return entry.analyzers[spec]


def _rules_of(name: str) -> Rules:
    try:
        return preset(name)
    except RulesError as exc:
        raise ChoiceError(str(exc)) from None


def _board_info(rules: Rules) -> dict[str, Any]:
    """What the page needs to draw the empty board: cell points, homes, the cell count."""
    geo = rules.geometry
    return {
        "preset": rules.name,
        "kind": geo.kind,
        "cells": rules.cells,
        "points": [[round(x, 4), round(y, 4)] for x, y in cell_points(rules)],
        "homes": [sorted(int(c) for c in geo.home[p]) for p in range(rules.players)],
        "max_plies": rules.max_plies,
    }


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


# ---------------------------------------------------------------------------------------------
# The application
# ---------------------------------------------------------------------------------------------


def _static_dir() -> Path:
    return Path(str(resources.files("hopzero.web").joinpath("static")))


def create_app(
    run_dirs: list[str | Path] | None = None, limits: Limits | None = None, results: list[str | Path] | None = None
) -> FastAPI:
    """The application: ``run_dirs`` are the runs it shows (by index), ``limits`` its caps,
    ``results`` the match result files of its tables."""
    server = _Server(RunDirs(list(run_dirs or [])), limits or Limits(), Tables(list(results or [])))
    app = FastAPI(title="hopzero", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.server = server
    static = _static_dir()

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > server.limits.max_body_bytes):
            return _error(413, f"request body too large: at most {server.limits.max_body_bytes} bytes")
        if request.method in ("POST", "PUT") and size is None and request.headers.get("transfer-encoding"):
            # a streamed body of unknown length would have to be read before it could be judged
            return _error(411, "a request body needs a Content-Length (streamed bodies are not accepted)")
        return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, f"invalid request: {_validation_text(exc)}")

    def _guard(fn: Callable[[], dict[str, Any]]) -> Any:
        try:
            return fn()
        except LookupError as exc:
            return _error(404, str(exc.args[0]))
        except (GameError, ChoiceError) as exc:
            return _error(400, str(exc))

    def _idle(entry: _Entry) -> _Entry:
        if entry.busy:
            raise GameError("the engine is thinking about this game: wait for its move or stop it")
        return entry

    def _game_reply(game_id: str, entry: _Entry, **extra: Any) -> dict[str, Any]:
        return {"id": game_id, "game": entry.game.snapshot(), **extra}

    # -- pages and fixed data -----------------------------------------------------------------

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(static / "index.html")

    app.mount("/static", StaticFiles(directory=static), name="static")

    @app.get("/api/info")
    async def info() -> dict[str, Any]:
        return {
            "presets": list(PRESETS),
            "limits": {"max_simulations": server.limits.max_simulations, "max_depth": server.limits.max_depth,
                       "max_searches": server.limits.max_searches},
            "runs": [{"index": i, "name": p.name, "preset": server.runs.preset(i)}
                     for i, p in enumerate(server.runs.paths)],
            "results": len(server.tables.paths),
        }

    @app.get("/api/presets/{name}")
    async def preset_info(name: str) -> Any:
        def run() -> dict[str, Any]:
            if len(name) > 16:
                raise ChoiceError("preset name too long")
            rules = _rules_of(name)
            return {"board": _board_info(rules), "opponents": server.opponents.catalogue(rules)}

        return _guard(run)

    # -- games ------------------------------------------------------------------------------

    @app.post("/api/games")
    async def new_game(body: NewGame) -> Any:
        def run() -> dict[str, Any]:
            rules = _rules_of(body.preset)
            seed = secrets.randbits(32)
            player = server.opponents.build(body.opponent, rules, seed)
            game = Game(rules, "xo".index(body.side), body.opponent.model_dump())
            entry = _Entry(game, player, seed)
            game_id = server.add(entry)
            return _game_reply(game_id, entry, board=_board_info(rules),
                               opponent=server.opponents.spec(body.opponent, rules))

        return _guard(run)

    @app.get("/api/games/{game_id}")
    async def get_game(game_id: str) -> Any:
        def run() -> dict[str, Any]:
            entry = server.entry(game_id)
            return _game_reply(game_id, entry, board=_board_info(entry.game.rules))

        return _guard(run)

    @app.post("/api/games/{game_id}/move")
    async def move(game_id: str, body: MoveRequest) -> Any:
        def run() -> dict[str, Any]:
            entry = _idle(server.entry(game_id))
            game = entry.game
            if body.version is not None and body.version != game.version:
                raise GameError(f"the game changed since that move was chosen (version {game.version}, "
                                f"not {body.version}): reload it")
            if game.engine_to_move:
                raise GameError("it is the engine's turn, not yours")
            mv = (int(body.move[0]), int(body.move[1]))
            if mv != PASS and not all(0 <= c < game.rules.cells for c in mv):
                raise GameError(f"move {mv[0]}-{mv[1]}: cells are 0..{game.rules.cells - 1}")
            path = game.play(mv)
            return _game_reply(game_id, entry, path=path)

        return _guard(run)

    def _action(game_id: str, act: Callable[[Game], Any]) -> Any:
        def run() -> dict[str, Any]:
            entry = _idle(server.entry(game_id))
            act(entry.game)
            return _game_reply(game_id, entry)

        return _guard(run)

    @app.post("/api/games/{game_id}/undo")
    async def undo(game_id: str) -> Any:
        return _action(game_id, lambda g: g.undo())

    @app.post("/api/games/{game_id}/resign")
    async def resign(game_id: str) -> Any:
        return _action(game_id, lambda g: g.resign())

    @app.post("/api/games/{game_id}/swap")
    async def swap(game_id: str) -> Any:
        return _action(game_id, lambda g: g.swap())

    @app.post("/api/games/{game_id}/restart")
    async def restart(game_id: str) -> Any:
        return _action(game_id, lambda g: g.restart())

    @app.post("/api/games/{game_id}/position")
    async def load_position(game_id: str, body: PositionRequest) -> Any:
        return _action(game_id, lambda g: g.restart(body.text))

    @app.get("/api/games/{game_id}/download")
    async def download(game_id: str, format: Literal["json", "moves"] = "json") -> Any:
        entry = server.games.get(game_id)
        if entry is None:
            return _error(404, f"no game {game_id!r}")
        data = entry.game.export()
        name = f"hopzero-{entry.game.rules.name}-{game_id[:6]}"
        if format == "moves":
            return PlainTextResponse(" ".join(data["moves"]) + "\n",
                                     headers={"Content-Disposition": f'attachment; filename="{name}.txt"'})
        return JSONResponse(data, headers={"Content-Disposition": f'attachment; filename="{name}.json"'})

    # -- runs -------------------------------------------------------------------------------

    @app.get("/api/runs/{index}")
    async def run_view(index: int) -> Any:
        return _guard(lambda: run_summary(index, server.runs.get(index)))

    @app.get("/api/runs/{index}/games/{game_id}")
    async def run_game_view(index: int, game_id: Annotated[int, FastApiPath(ge=0, le=2**53)]) -> Any:
        def run() -> dict[str, Any]:
            game = run_game(server.runs.get(index), game_id)
            return {**game, "board": _board_info(game.pop("rules"))}

        return _guard(run)

    # -- tables -----------------------------------------------------------------------------

    @app.get("/api/tables")
    async def tables(preset: Annotated[str | None, Query(max_length=16, pattern=r"^[a-z0-9-]+$")] = None) -> Any:
        return server.tables.view(preset)

    @app.websocket("/ws/runs/{index}")
    async def run_feed(websocket: WebSocket, index: int) -> None:
        await websocket.accept()
        try:
            path = server.runs.get(index)
        except ChoiceError as exc:
            await websocket.send_json({"type": "error", "error": str(exc)})
            await websocket.close()
            return
        stamp = None
        try:
            while True:
                now = run_stamp(path)
                if now != stamp:
                    stamp = now
                    await websocket.send_json({"type": "run", "run": run_summary(index, path)})
                await asyncio.sleep(RUN_POLL_S)
        except (WebSocketDisconnect, RuntimeError):
            return

    # -- thinking (websocket) -----------------------------------------------------------------

    @app.websocket("/ws/games/{game_id}")
    async def game_feed(websocket: WebSocket, game_id: str) -> None:
        await websocket.accept()
        loop = asyncio.get_running_loop()
        outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        stop = threading.Event()
        closed = threading.Event()
        task: asyncio.Task[None] | None = None

        async def sender() -> None:
            while (msg := await outbox.get()) is not None:
                try:
                    await websocket.send_json(msg)
                except (WebSocketDisconnect, RuntimeError):
                    return

        def post(msg: dict[str, Any]) -> None:  # from the search thread
            loop.call_soon_threadsafe(outbox.put_nowait, msg)

        async def search(entry: _Entry, player: Player, what: str, sims: int | None) -> None:
            game = entry.game
            version, state = game.version, game.state.copy()
            last = [0.0]

            def shown(t: Thought) -> dict[str, Any]:  # whose view, of which version of the game
                return {**t.to_dict(), "version": version, "mover": int(state.to_move)}

            def progress(t: Thought) -> None:
                now = time.monotonic()
                if now - last[0] >= PROGRESS_EVERY_S:
                    last[0] = now
                    post({"type": "thinking", "what": what, "thought": shown(t)})

            def stopped() -> bool:
                return stop.is_set() or closed.is_set()

            server.searching += 1
            entry.busy = True
            try:
                thought = await loop.run_in_executor(
                    server.executor, lambda: think(player, state, simulations=sims, progress=progress, stop=stopped))
            except (RuntimeError, ValueError, OSError, MemoryError) as exc:  # a model that fails: tell the page
                outbox.put_nowait({"type": "error", "error": f"the search failed: {exc}"})
                return
            finally:
                server.searching -= 1
                entry.busy = False
            if closed.is_set():
                return
            if what == "analysis":
                outbox.put_nowait({"type": "analysis", "thought": shown(thought)})
                return
            if game.version != version or not game.engine_to_move:
                outbox.put_nowait({"type": "error", "error": "the game changed while the engine thought"})
                return
            path = game.play(thought.move)
            outbox.put_nowait({"type": "moved", "move": list(thought.move), "path": path,
                               "thought": shown(thought), "id": game_id, "game": game.snapshot()})

        def start(msg: ReplyMessage | AnalyzeMessage) -> asyncio.Task[None]:
            entry = server.entry(game_id)
            if entry.busy:
                raise GameError("the engine is already thinking about this game")
            if server.searching >= server.limits.max_searches:
                raise GameError(f"the server is busy: {server.searching} searches are running "
                                f"(at most {server.limits.max_searches}); try again in a moment")
            game = entry.game
            if game.over:
                raise GameError("the game is over")
            if isinstance(msg, ReplyMessage):
                if not game.engine_to_move:
                    raise GameError("it is your turn, not the engine's")
                return asyncio.create_task(search(entry, entry.player, "reply", None))
            if msg.sims > server.limits.max_simulations:
                raise ChoiceError(f"sims={msg.sims}: this server allows at most {server.limits.max_simulations}")
            return asyncio.create_task(search(entry, server.analyzer(entry, msg.engine), "analysis", msg.sims))

        send_task = asyncio.create_task(sender())
        try:
            while True:
                text = await websocket.receive_text()
                if len(text) > server.limits.max_body_bytes:
                    outbox.put_nowait({"type": "error", "error": f"message too large: at most "
                                       f"{server.limits.max_body_bytes} bytes"})
                    continue
                try:
                    msg = _SOCKET_MESSAGE.validate_json(text)
                except ValidationError as exc:
                    outbox.put_nowait({"type": "error", "error": f"invalid message: {_validation_text(exc)}"})
                    continue
                if isinstance(msg, StopMessage):
                    stop.set()
                    continue
                if task is not None and not task.done():
                    outbox.put_nowait({"type": "error", "error": "a search is running: send stop first"})
                    continue
                stop.clear()
                try:
                    task = start(msg)
                except LookupError as exc:
                    outbox.put_nowait({"type": "error", "error": str(exc.args[0])})
                except (GameError, ChoiceError) as exc:
                    outbox.put_nowait({"type": "error", "error": str(exc)})
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            closed.set()  # the search stops at its next chunk
            outbox.put_nowait(None)
            send_task.cancel()

    return app


_BACKLOG = 2048
"""Connections the listening socket queues (uvicorn's default)."""


def serve(
    host: str, port: int, run_dirs: list[str | Path], limits: Limits, *, out: TextIO,
    results: list[str | Path] | None = None,
) -> int:
    """Run the server until Ctrl-C: bind ``host:port`` (port 0: a free one), print the address
    to ``out``, serve. Returns the exit status."""
    import ipaddress
    import socket

    import uvicorn

    app = create_app(run_dirs, limits, results)  # a bad --run-dir or --results fails before anything listens
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
        out.write(f"hopzero serve: listening on {host}: anyone who can reach this address can use the server\n")
    out.flush()
    # open websockets (a page left open) must not hold a Ctrl-C or a SIGTERM up for long
    config = uvicorn.Config(app, log_level="warning", ws_max_size=limits.max_body_bytes, lifespan="off",
                            timeout_graceful_shutdown=3, backlog=_BACKLOG)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        app.state.server.executor.shutdown(wait=False, cancel_futures=True)
        sock.close()
    return 0
