"""The rooms: new games, joining a seat, moves, the room's live feed, kept games and game files.

HTTP changes a room; every page on it hears the change over its websocket ``/ws/rooms/{id}``
(docs/WEB.md lists the routes and the messages). A change that is refused answers
``{"error": "..."}`` with status 400 (404 for a game the server does not have) and changes
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, WebSocket
from fastapi.responses import JSONResponse, PlainTextResponse

from ccengine import PASS
from learner.records import versions_now

from .game import GameError
from .gamefile import GameFileError, game_document, moves_text, read_game
from .hall import Watcher
from .limits import ChoiceError
from .messages import (
    Auth,
    EngineSeatRequest,
    HelloMessage,
    MoveRequest,
    NewGame,
    PositionRequest,
    SettingsRequest,
    TakeRequest,
    TokenRequest,
    room_message,
)
from .rooms import Room
from .seats import ENGINE, PERSON, Seat, new_token
from .server import Server, rules_of
from .sockets import PageSocket

__all__ = ["error", "guard", "router"]

def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def guard(fn: Callable[[], Any]) -> Any:
    """``fn()``, or its refusal as an error response (404 for what does not exist)."""
    try:
        return fn()
    except LookupError as exc:
        return error(404, str(exc.args[0]) if exc.args else "not found")
    except (GameError, ChoiceError) as exc:  # RoomError and GameFileError are GameError / ValueError
        return error(400, str(exc))


def _public_seats(stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"seat": i, "kind": s["kind"], "label": s.get("label") or s.get("name") or "person"}
            for i, s in enumerate(stored)]


def router(server: Server) -> APIRouter:
    """The rooms' routes over ``server``."""
    api = APIRouter()
    hall, engines = server.hall, server.engines

    def room_reply(target: Room, **extra: Any) -> dict[str, Any]:
        return {"id": target.id, "version": target.version, **extra}

    def created(target: Room, creator: str, tokens: dict[int, str]) -> dict[str, Any]:
        """A new room: its creator's token, the tokens of the seats taken, the room."""
        return room_reply(target, creator=creator, tokens={str(s): t for s, t in tokens.items()},
                          room=target.snapshot())

    # -- lists ----------------------------------------------------------------------------------

    @api.get("/api/games/finished")
    async def finished(offset: Annotated[int, Query(ge=0, le=100_000)] = 0,
                       limit: Annotated[int, Query(ge=1, le=100)] = 30) -> Any:
        games = server.store.summaries(finished=True, limit=limit, offset=offset)
        for g in games:
            g["seats"] = _public_seats(g["seats"])
        return {"games": games, "counts": server.store.counts(), "keep_days": server.limits.keep_days}

    @api.get("/api/games/summaries")
    async def summaries(ids: Annotated[str, Query(max_length=50 * 40)] = "") -> Any:
        wanted = [i for i in ids.split(",") if 0 < len(i) <= 40][:50]
        games = server.store.summaries(ids=wanted) if wanted else []
        for g in games:
            g["seats"] = _public_seats(g["seats"])
        return {"games": games}

    # -- a new room -------------------------------------------------------------------------------

    @api.post("/api/games")
    async def new_game(body: NewGame) -> Any:
        def run() -> dict[str, Any]:
            rules = rules_of(body.preset)
            if body.seats is None:
                seats = hall.default_seats(rules)
            else:
                if len(body.seats) != rules.players:
                    raise ChoiceError(f"seats: {rules.name} has {rules.players} seats, the request {len(body.seats)}")
                seats = []
                for request in body.seats:
                    if request.kind == PERSON:
                        seats.append(Seat(kind=PERSON))
                    else:
                        choice = request.engine if request.engine is not None else hall.default_engine(rules)
                        seats.append(Seat(kind=ENGINE, engine=engines.resolve(choice, rules)))
            people = [i for i, s in enumerate(seats) if s.kind == PERSON]
            take = people[:1] if body.take is None else sorted(set(body.take))
            for seat in take:
                if seat not in people:
                    raise ChoiceError(f"take: seat {seat} is not a person's seat")
            return created(*hall.create(rules, seats, body.settings, take, body.name, body.position))

        return guard(run)

    @api.post("/api/games/import")
    async def import_game(request: Request) -> Any:
        data = await request.body()

        def run() -> dict[str, Any]:
            return created(*hall.adopt(read_game(data)))

        try:
            return run()
        except GameFileError as exc:
            return error(400, f"game file: {exc}")
        except ChoiceError as exc:
            return error(400, str(exc))

    # -- one room ---------------------------------------------------------------------------------

    @api.get("/api/games/{room_id}")
    async def get_room(room_id: str) -> Any:
        return guard(lambda: {"room": hall.get(room_id).snapshot()})

    def change(room_id: str, act: Callable[[Room], Any], *, rewritten: bool = False) -> Any:
        def run() -> dict[str, Any]:
            room = hall.get(room_id)
            extra = act(room) or {}
            hall.commit(room, rewritten=rewritten)
            return room_reply(room, **extra)

        return guard(run)

    @api.post("/api/games/{room_id}/move")
    async def move(room_id: str, body: MoveRequest) -> Any:
        def run() -> dict[str, Any]:
            room = hall.get(room_id)
            mv = PASS if tuple(body.move) == PASS else (int(body.move[0]), int(body.move[1]))
            record = room.person_move(body.seat, body.token, mv, body.version)
            hall.commit(room, moved=record)
            return room.moved(record)

        return guard(run)

    @api.post("/api/games/{room_id}/undo")
    async def undo(room_id: str, body: TokenRequest) -> Any:
        return change(room_id, lambda r: {"taken": r.undo(body.tokens)}, rewritten=True)

    @api.post("/api/games/{room_id}/position")
    async def position(room_id: str, body: PositionRequest) -> Any:
        return change(room_id, lambda r: r.new_start(body.tokens, body.text), rewritten=True)

    @api.post("/api/games/{room_id}/resign")
    async def resign(room_id: str, body: Auth) -> Any:
        return change(room_id, lambda r: r.resign(body.seat, body.token))

    @api.post("/api/games/{room_id}/seats/{seat}/take")
    async def take(room_id: str, seat: int, body: TakeRequest) -> Any:
        token = new_token()

        def act(room: Room) -> dict[str, Any]:
            room.take(seat, token, body.name)
            return {"seat": seat, "token": token}

        return change(room_id, act)

    @api.post("/api/games/{room_id}/seats/{seat}/engine")
    async def to_engine(room_id: str, seat: int, body: EngineSeatRequest) -> Any:
        return change(room_id, lambda r: r.to_engine(seat, body.token, engines.resolve(body.engine, r.rules)))

    @api.post("/api/games/{room_id}/seats/{seat}/person")
    async def to_person(room_id: str, seat: int, body: TokenRequest) -> Any:
        return change(room_id, lambda r: r.to_person(seat, body.creator))

    @api.post("/api/games/{room_id}/settings")
    async def settings(room_id: str, body: SettingsRequest) -> Any:
        return change(room_id, lambda r: r.configure(body.creator, body.settings))

    @api.post("/api/games/{room_id}/retry")
    async def retry(room_id: str) -> Any:
        return change(room_id, lambda r: r.retry())

    @api.get("/api/games/{room_id}/download")
    async def download(room_id: str, format: Literal["json", "moves"] = "json") -> Any:
        def run() -> Any:
            room = hall.get(room_id)
            name = f"hopzero-{room.rules.name}-{room.id[:8]}"
            if format == "moves":
                return PlainTextResponse(moves_text(room),
                                         headers={"Content-Disposition": f'attachment; filename="{name}.txt"'})
            return JSONResponse(game_document(room, versions_now()),
                                headers={"Content-Disposition": f'attachment; filename="{name}.json"'})

        return guard(run)

    # -- the live feed ----------------------------------------------------------------------------

    @api.websocket("/ws/rooms/{room_id}")
    async def room_feed(websocket: WebSocket, room_id: str) -> None:
        await websocket.accept()
        watcher = Watcher()
        page = PageSocket(websocket, server.limits.max_body_bytes, watcher, id=room_id)
        try:
            room = hall.get(room_id)
            hall.watch(room, watcher)
        except (LookupError, ChoiceError) as exc:
            await websocket.send_json({"type": "error", "id": room_id, "error": str(exc.args[0]), "gone": True})
            await websocket.close()
            return

        async def handle(hello: HelloMessage) -> None:
            hall.claim(room, watcher, hello.tokens)

        try:
            await page.serve(room_message, handle)
        finally:
            hall.unwatch(room, watcher)

    return api

