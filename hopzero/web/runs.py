"""What the run view shows, read from a run directory's own files (hopzero/rundir.py).

- ``evaluations.jsonl``: the matches against greedy (win rate and Elo of each best model over
  time) and the gate decisions (candidate against best: score, verdict, reason);
- ``promotions.jsonl``: every promotion; ``best.json``: the current best model;
- ``elo.json``: the Elo ladder (greedy = 0), fitted by ``evaluator.elo``;
- ``run.json``: the run's identity and start time;
- ``games.jsonl``: the newest evaluation games (``evaluator.game_log``), listed here and replayed
  one at a time by :func:`run_game`, which checks every move with the engine.

Files are read as they are while a run writes them: a torn last line is skipped (the JSONL
reader), a missing or damaged file gives an empty section and a note, never an error page.
"""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path
from typing import Any

from ccengine.notation import parse_position
from ccengine.rules import Rules
from evaluator.elo import EloLadder
from evaluator.game_log import FILE as GAMES_FILE
from evaluator.game_log import game_scores, read_games
from plumbing.run_files import read_jsonl

from .game import Game, GameError
from .limits import ChoiceError

__all__ = ["WATCHED", "RunDirs", "run_game", "run_stamp", "run_summary"]

#: The files whose changes the live view follows.
WATCHED = ("evaluations.jsonl", "promotions.jsonl", "elo.json", "best.json", "run.json", GAMES_FILE)
#: The most gate rows, promotions and games listed (the newest).
MAX_ROWS = 200


class RunDirs:
    """The run directories given on the command line, referred to by index only."""

    def __init__(self, paths: list[str | Path]) -> None:
        self.paths = [Path(p).resolve() for p in paths]
        for p in self.paths:
            if not p.is_dir():
                raise ChoiceError(f"--run-dir {p}: no such directory")

    def __len__(self) -> int:
        return len(self.paths)

    def get(self, index: int) -> Path:
        """The run directory of ``index``; :class:`ChoiceError` when there is none."""
        if not 0 <= index < len(self.paths):
            raise ChoiceError(f"run {index} does not exist; the server has {len(self.paths)} run(s)")
        return self.paths[index]

    def preset(self, index: int) -> str | None:
        """The preset the run trains (its run.json), None when unreadable."""
        try:
            return str(json.loads((self.get(index) / "run.json").read_text(encoding="utf-8"))["preset"])
        except (OSError, ValueError, KeyError, TypeError):
            return None


def run_stamp(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Size and modification time of the watched files: a change means new data to send."""
    out = []
    for name in WATCHED:
        try:
            st = (path / name).stat()
            out.append((name, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((name, -1, -1))
    return tuple(out)


def _started(info: dict[str, Any]) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(str(info["started"]), "%Y-%m-%dT%H:%M:%SZ")))
    except (KeyError, ValueError):
        return None


def _records(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """The objects of a JSONL log; an unreadable file is a note and no records."""
    try:
        return [r for r in read_jsonl(path) if isinstance(r, dict)]
    except (OSError, ValueError) as exc:
        notes.append(f"{path.name}: {exc.__class__.__name__}")
        return []


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def run_summary(index: int, path: Path) -> dict[str, Any]:
    """The run view's data for the run directory ``path`` (JSON-ready)."""
    notes: list[str] = []
    info: dict[str, Any] = {}
    try:
        loaded = json.loads((path / "run.json").read_text(encoding="utf-8"))
        info = loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError) as exc:
        notes.append(f"run.json: {exc.__class__.__name__}")
    evaluations = _records(path / "evaluations.jsonl", notes)
    start = _started(info)
    walls = [w for e in evaluations if (w := _number(e.get("wall"))) is not None]
    if start is None and walls:
        start = min(walls)

    def minutes(e: dict[str, Any]) -> float | None:
        wall = _number(e.get("wall"))
        return None if wall is None or start is None else (wall - start) / 60

    greedy = [
        {"version": e.get("version"), "minutes": minutes(e), "score": _number(e.get("score")),
         "elo": _number(e.get("elo")), "games": e.get("games"), "wins": e.get("wins"), "draws": e.get("draws"),
         "losses": e.get("losses")}
        for e in evaluations if e.get("kind") == "greedy"
    ]
    gates = [
        {"candidate": e.get("candidate"), "best": e.get("best"), "minutes": minutes(e),
         "score": _number(e.get("score")), "games": e.get("games"), "decision": e.get("decision"),
         "reason": e.get("reason")}
        for e in evaluations if e.get("kind") == "gate"
    ][-MAX_ROWS:]
    promotions = [
        {"version": p.get("version"), "promoted_at": p.get("promoted_at"), "score": _number(p.get("score")),
         "games": p.get("games")}
        for p in _records(path / "promotions.jsonl", notes)
    ][-MAX_ROWS:]
    ratings: list[dict[str, Any]] = []
    if (path / "elo.json").is_file():
        try:
            fitted = EloLadder.load(path / "elo.json").fit()
            ratings = sorted(
                ({"name": r.name, "elo": r.elo, "stderr": r.stderr, "games": r.games} for r in fitted.values()),
                key=lambda r: -r["elo"],
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            notes.append(f"elo.json: {exc}")
    games = []
    try:
        games = [
            {"id": g.get("id"), "kind": g.get("kind"), "minutes": minutes(g), "players": g.get("players"),
             "scores": game_scores(g), "plies": g.get("plies")}
            for g in read_games(path)
        ][::-1][:MAX_ROWS]
    except (OSError, ValueError) as exc:
        notes.append(f"{GAMES_FILE}: {exc.__class__.__name__}")
    best = None
    try:
        best = json.loads((path / "best.json").read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        pass
    return {
        "index": index,
        "name": path.name,
        "preset": info.get("preset"),
        "config": info.get("config"),
        "started": info.get("started"),
        "best": best,
        "greedy": greedy,
        "gates": gates,
        "promotions": promotions,
        "ratings": ratings,
        "games": games,
        "notes": notes,
    }


def run_game(path: Path, game_id: int) -> dict[str, Any]:
    """Kept game ``game_id`` of the run directory ``path``, replayed with the engine: the rules,
    start position and moves as the file holds them, each move checked and given its hop path.
    ``LookupError`` when the run keeps no such game, ``GameError`` when the game does not replay."""
    entry = next((g for g in read_games(path) if g.get("id") == game_id), None)
    if entry is None:
        raise LookupError(f"run {path.name} keeps no game {game_id} (it keeps the newest evaluation games)")
    try:
        rules = Rules.from_dict(entry["rules"])
        game = Game(rules, parse_position(rules, str(entry["start"])))
        moves = [(int(m[0]), int(m[1])) for m in entry["moves"]]
    except (KeyError, TypeError, ValueError, IndexError) as exc:  # RulesError, NotationError included
        raise GameError(f"game {game_id} of run {path.name} cannot be replayed: {exc}") from None
    for number, move in enumerate(moves, 1):
        try:
            game.play(move, by="", wall=0.0)
        except GameError as exc:
            raise GameError(f"game {game_id}, move {number}: {exc}") from None
    return {
        "id": game_id, "kind": entry.get("kind"), "players": entry.get("players"),
        "model_versions": entry.get("model_versions"), "result": game.result(),
        "start_board": [int(v) for v in game.start.board],
        "moves": [list(r.move) for r in game.records], "paths": [list(r.path) for r in game.records], "rules": rules,
    }
