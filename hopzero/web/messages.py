"""Every request body and websocket message a browser may send, as strict pydantic models.

Unknown fields are refused, numbers and strings are bounded, and a bad message is answered by
:func:`validation_text`: one line naming each wrong field. A client names games by their random
id, seats by number, engines by :class:`~hopzero.web.engines.EngineChoice`, runs by index:
never a path, never a player SPEC.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .engines import EngineChoice
from .rooms import RoomSettings

__all__ = [
    "AnalysisMessage", "Auth", "EngineSeatRequest", "HelloMessage", "MoveRequest", "NewGame", "PositionRequest",
    "SeatRequest", "SettingsRequest", "StopMessage", "TakeRequest", "TokenRequest", "Tokens", "analysis_message", "room_message",
    "validation_text",
]

Token = Annotated[str, Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
Name = Annotated[str, Field(min_length=1, max_length=24, pattern=r"^[^<>&\"'`\x00-\x1f]+$")]
Preset = Annotated[str, Field(min_length=1, max_length=16, pattern=r"^[a-z0-9-]+$")]
#: Seats of a request: ``{"0": token, "2": token}`` (the seats a page holds).
Tokens = Annotated[dict[Annotated[int, Field(ge=0, le=5)], Token], Field(max_length=6)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SeatRequest(_Strict):
    """A seat of a new game: a person's, or an engine's."""

    kind: Literal["person", "engine"]
    engine: EngineChoice | None = None


class NewGame(_Strict):
    """A new room. ``seats``: one per seat of the preset (default: a person in seat 0, the
    preset's default engine elsewhere); ``take``: the seats the creator plays (default: the
    first person seat; all of them: hot-seat); ``position``: a start position in the rules'
    text form."""

    preset: Preset = "cc49"
    seats: list[SeatRequest] | None = Field(None, min_length=2, max_length=6)
    take: list[Annotated[int, Field(ge=0, le=5)]] | None = Field(None, max_length=6)
    name: Name | None = None
    position: str | None = Field(None, min_length=1, max_length=400)
    settings: RoomSettings = RoomSettings()


class Auth(_Strict):
    """A request on one seat: the seat and its token."""

    seat: int = Field(ge=0, le=5)
    token: Token


class MoveRequest(Auth):
    move: tuple[int, int] = Field(description="[start cell, end cell]; [-1, -1] is a pass")
    version: int | None = Field(None, ge=0, description="the room's version the move was chosen in")


class TokenRequest(_Strict):
    """A request that needs the seats a page holds (undo) or the creator's token."""

    tokens: Tokens = {}
    creator: Token | None = None


class PositionRequest(TokenRequest):
    text: str | None = Field(None, min_length=1, max_length=400, description="None: the rules' start position")


class SettingsRequest(TokenRequest):
    """New settings of a room (the creator's token)."""

    settings: RoomSettings


class TakeRequest(_Strict):
    name: Name | None = None


class EngineSeatRequest(_Strict):
    """Hand a seat to an engine: with the seat's own token or the creator's."""

    token: Token
    engine: EngineChoice = EngineChoice()


class HelloMessage(_Strict):
    """A page on a room says which seats it holds."""

    type: Literal["hello"]
    tokens: Tokens = {}


class AnalysisMessage(_Strict):
    """Analyse position ``ply`` of the game (of history ``line``), ``sims`` simulations; ``req``
    comes back with every answer, so that the page drops answers to questions it no longer asks."""

    type: Literal["analyze"]
    req: int = Field(ge=0, le=2**31)
    ply: int = Field(ge=0, le=10_000)
    line: int = Field(ge=0)
    sims: int = Field(400, ge=1, le=1_000_000)


class StopMessage(_Strict):
    type: Literal["stop"]


_ROOM = TypeAdapter(HelloMessage)
_ANALYSIS: TypeAdapter[Any] = TypeAdapter(Annotated[AnalysisMessage | StopMessage, Field(discriminator="type")])


def room_message(text: str) -> HelloMessage:
    """A room socket's message (``ValidationError`` when bad)."""
    return _ROOM.validate_json(text)


def analysis_message(text: str) -> AnalysisMessage | StopMessage:
    """An analysis socket's message (``ValidationError`` when bad)."""
    return _ANALYSIS.validate_json(text)


def validation_text(exc: ValidationError | RequestValidationError) -> str:
    """One line per problem: where it is and what is wrong."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err.get("loc", ()) if x not in ("body", "function-after[...]")) or "message"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts[:5])
