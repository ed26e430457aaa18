"""A whole game as a file: the JSON download, the ``s-e`` text download, and the JSON loaded back.

The JSON (``format`` ``hopzero.game``, ``schema`` 1) holds the rules (a preset's), the start
position in the rules' text form, the seats (a person's name, an engine's choice and label), the
moves with their hop paths, who played each and when, the result (score vector, finishing order),
the evaluation of each position (shares and simulations), and the software's versions.

Loading one back is strict (:func:`read_game`): the document must have exactly these fields with
values in range, the rules must be those of the named preset, every move must be legal in turn,
and what the file says of paths and result must be what the replay gives. The first problem is
the one clear message of :class:`GameFileError`; nothing is created.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ccengine import PASS, preset
from ccengine.reference import is_witness_path
from ccengine.rules import Rules, RulesError

from .analysis import exact_evaluation
from .engines import EngineChoice
from .game import Game, GameError, move_text
from .messages import validation_text
from .rooms import Room

__all__ = ["FORMAT", "MAX_FILE_BYTES", "GameFile", "GameFileError", "LoadedGame", "game_document", "moves_text",
           "read_game"]

FORMAT = "hopzero.game"
SCHEMA = 1
#: The largest game file loaded back (a star6 game of 900 plies with evaluations is ~150 KB).
MAX_FILE_BYTES = 1 << 20
_MAX_MOVES = 2000


class GameFileError(ValueError):
    """A game file that cannot be loaded: the first problem, in one line."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileSeat(_Strict):
    kind: Literal["person", "engine"]
    name: str | None = Field(None, max_length=24)
    engine: EngineChoice | None = None
    label: str | None = Field(None, max_length=120)
    spec: str | None = Field(None, max_length=120)


class FileEval(_Strict):
    shares: list[Annotated[float, Field(ge=0, le=1)]] = Field(min_length=2, max_length=6)
    sims: int = Field(ge=0, le=10_000_000)
    exact: bool = False


class GameFile(_Strict):
    """The JSON document of one game (see the module docstring)."""

    format: Literal["hopzero.game"]
    schema_: Literal[1] = Field(alias="schema")
    id: str | None = Field(None, max_length=64)
    preset: str = Field(min_length=1, max_length=16, pattern=r"^[a-z0-9-]+$")
    rules: dict[str, Any]
    start: str = Field(min_length=1, max_length=400)
    seats: list[FileSeat] = Field(min_length=2, max_length=6)
    moves: list[tuple[int, int]] = Field(max_length=_MAX_MOVES)
    paths: list[list[int]] | None = Field(None, max_length=_MAX_MOVES)
    movers: list[int] | None = Field(None, max_length=_MAX_MOVES)
    by: list[Annotated[str, Field(max_length=120)]] | None = Field(None, max_length=_MAX_MOVES)
    walls: list[float] | None = Field(None, max_length=_MAX_MOVES)
    result: dict[str, Any] | None = None
    resigned: int | None = Field(None, ge=0, le=5)
    evals: dict[str, FileEval] | None = Field(None, max_length=_MAX_MOVES + 1)
    created: float | None = None
    finished: float | None = None
    software: dict[str, str] | None = None


@dataclass
class LoadedGame:
    """A game file, checked: the game replayed, its seats as the file has them, its evaluations."""

    game: Game
    seats: list[FileSeat]
    evals: dict[int, dict[str, Any]]
    created: float | None


def game_document(room: Room, software: dict[str, str]) -> dict[str, Any]:
    """The JSON download of ``room``."""
    game, records = room.game, room.game.records
    seats = []
    for seat in room.seats:
        if seat.engine is not None:
            seats.append({"kind": "engine", "engine": seat.engine.choice(), "label": seat.engine.label,
                          "spec": seat.engine.spec})
        else:
            seats.append({"kind": "person", **({"name": seat.name} if seat.name else {})})
    return {
        "format": FORMAT, "schema": SCHEMA, "id": room.id, "preset": room.rules.name, "rules": room.rules.to_dict(),
        "start": game.start_text(), "seats": seats,
        "moves": [list(r.move) for r in records], "paths": [list(r.path) for r in records],
        "movers": [r.seat for r in records], "by": [r.by for r in records], "walls": [r.wall for r in records],
        "result": game.result(), "resigned": game.resigned,
        "evals": {str(p): {"shares": e["shares"], "sims": e["sims"], "exact": e["exact"]}
                  for p, e in sorted(room.evals.items())},  # the briefs: no lines of play
        "created": room.created, "finished": room.finished, "software": software,
    }


def moves_text(room: Room) -> str:
    """The text download: the moves as ``s-e``, space-separated, one line."""
    return " ".join(move_text(r.move) for r in room.game.records) + "\n"


def _rules(doc: GameFile) -> Rules:
    try:
        rules = preset(doc.preset)
        if Rules.from_dict(doc.rules) != rules:
            raise GameFileError(f"rules: they are not the rules of preset {doc.preset!r} (only presets are played here)")
    except RulesError as exc:
        raise GameFileError(f"rules: {exc}") from None
    return rules


def read_game(data: bytes) -> LoadedGame:
    """The game in ``data`` (a JSON document), checked (see the module docstring)."""
    if len(data) > MAX_FILE_BYTES:
        raise GameFileError(f"the file is larger than {MAX_FILE_BYTES} bytes")
    try:
        doc = GameFile.model_validate_json(data)
    except ValidationError as exc:
        raise GameFileError(f"not a {FORMAT} file: {validation_text(exc)}") from None
    rules = _rules(doc)
    n = rules.players
    if len(doc.seats) != n:
        raise GameFileError(f"seats: {doc.preset} has {n} seats, the file {len(doc.seats)}")
    for i, seat in enumerate(doc.seats):
        if (seat.kind == "engine") != (seat.engine is not None):
            raise GameFileError(f"seats.{i}: an engine seat has an engine, a person seat none")
    for name, values in (("paths", doc.paths), ("movers", doc.movers), ("by", doc.by), ("walls", doc.walls)):
        if values is not None and len(values) != len(doc.moves):
            raise GameFileError(f"{name}: {len(values)} entries for {len(doc.moves)} moves")
    try:
        game = Game.from_text(rules, doc.start)
    except GameError as exc:
        raise GameFileError(f"start: {exc}") from None
    for i, move in enumerate(doc.moves):
        move = PASS if tuple(move) == PASS else (int(move[0]), int(move[1]))
        if doc.movers is not None and doc.movers[i] != game.to_move:
            raise GameFileError(f"movers.{i}: the file says seat {doc.movers[i]} moved, the game has seat {game.to_move}")
        board = tuple(game.state.board)
        try:
            game.play(move, by=doc.by[i] if doc.by else "person", wall=doc.walls[i] if doc.walls else 0.0)
        except GameError as exc:
            raise GameFileError(f"moves.{i} ({move_text(move)}): {exc}") from None
        path = doc.paths[i] if doc.paths is not None else None
        if path and (path[0] != move[0] or path[-1] != move[1] or not is_witness_path(rules, board, path)):
            raise GameFileError(f"paths.{i}: {path} is not a path of move {move_text(move)}")
    if doc.resigned is not None:
        if doc.resigned >= n:
            raise GameFileError(f"resigned: seat {doc.resigned} does not exist")
        try:
            game.resign(doc.resigned)
        except GameError as exc:
            raise GameFileError(f"resigned: {exc}") from None
    replayed = game.result()
    if doc.result is not None:
        said = doc.result.get("scores")
        if replayed is None:
            raise GameFileError("result: the file gives a result, but the game goes on after its moves")
        if not isinstance(said, list) or len(said) != n or not all(
                isinstance(x, (int, float)) and math.isclose(x, y, abs_tol=1e-6) for x, y in zip(said, replayed["scores"])):
            raise GameFileError(f"result: the file's scores {said} are not the game's {replayed['scores']}")
    evals: dict[int, dict[str, Any]] = {}
    for key, entry in (doc.evals or {}).items():
        if not key.isdigit() or int(key) > game.plies:
            raise GameFileError(f"evals.{key}: not a position of the game (0..{game.plies})")
        if len(entry.shares) != n or not math.isclose(sum(entry.shares), 1.0, abs_tol=1e-3):
            raise GameFileError(f"evals.{key}: {n} shares summing to 1 are needed")
        mover = game.state_at(int(key)).to_move
        if entry.exact:
            evals[int(key)] = exact_evaluation(entry.shares, mover)
        else:
            evals[int(key)] = {"shares": entry.shares, "sims": entry.sims, "engine": "file", "mover": mover,
                               "top": [], "exact": False}
    return LoadedGame(game=game, seats=doc.seats, evals=evals, created=doc.created)
