"""The newest evaluation games of a run, kept to be replayed (``RUN_DIR/games.jsonl``).

The evaluator adds the games of each match it finishes (the gate's, candidate against best, and
the best model's against greedy); the file keeps the newest :data:`KEEP_GAMES`. Each line is one
game as JSON:

    {"format": "hopzero.match-game", "schema": 2, "id": 17, "kind": "gate" | "greedy",
     "wall": 1795500000.0, "preset": "cc49", "rules": {...}, "start": "<position text>",
     "players": ["v12", "v9"], "model_versions": [12, 9], "moves": [[s, e], ...],
     "scores": [1.0, 0.0], "plies": 83, "match_seed": 123, "game": 4,
     "config_hash": "...", "software": {"hopzero": ..., "numpy": ..., "torch": ...}}

``players``, ``model_versions`` and ``scores`` (the result vector) are by seat (seat 0 moves
first; ``None`` for a player without a network, ``greedy``); schema 1, written before, held
``result``, ``+1 / 0 / -1`` from seat 0's side, instead of ``scores`` (:func:`game_scores` reads
both); ``moves``
include the random opening and a pass is ``[-1, -1]``; ``start`` is the position in the rules'
text form (``ccengine.notation``); ``id`` numbers the run's kept games in the order they were
added and never repeats. The file is rewritten whole and atomically at every match
(``atomic_write_text``): a reader sees the old games or the new, never half a line.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ccengine.notation import Position, format_position
from ccengine.rules import Rules
from plumbing.run_files import atomic_write_text, read_jsonl

from .arena import MatchResult

__all__ = ["FILE", "FORMAT", "KEEP_GAMES", "add_match_games", "game_scores", "read_games"]

FILE = "games.jsonl"
FORMAT = "hopzero.match-game"
SCHEMA = 2
#: Games kept (the newest); a 100-ply cc49 game takes about 1 KiB.
KEEP_GAMES = 200


def read_games(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The kept games of ``run_dir``, oldest first (lines of another format are skipped)."""
    return [g for g in read_jsonl(Path(run_dir) / FILE) if isinstance(g, dict) and g.get("format") == FORMAT]


def game_scores(game: dict[str, Any]) -> list[float] | None:
    """A kept game's result vector by seat (a schema-1 line's ``result`` read as one); None when
    the line holds neither."""
    scores = game.get("scores")
    if isinstance(scores, list) and all(isinstance(x, (int, float)) for x in scores):
        return [float(x) for x in scores]
    result = game.get("result")
    if result in (-1, 0, 1):
        return [(1.0 + result) / 2, (1.0 - result) / 2]
    return None


def add_match_games(
    run_dir: str | os.PathLike[str],
    rules: Rules,
    match: MatchResult,
    *,
    kind: str,
    model_versions: tuple[int | None, ...],
    config_hash: str,
    software: dict[str, str],
    keep: int = KEEP_GAMES,
) -> list[dict[str, Any]]:
    """Add the games of ``match`` (its players with ``model_versions``, in the match's order) to
    ``run_dir``'s file, keeping the newest ``keep``. Returns the games added."""
    kept = read_games(run_dir)
    next_id = int(kept[-1]["id"]) + 1 if kept and isinstance(kept[-1].get("id"), int) else 0
    start = format_position(rules, Position(rules.geometry.start_board(), 0, 0))
    wall = time.time()
    added = []
    for game in match.played:
        by_seat = sorted(range(len(game.seats)), key=lambda k: game.seats[k])  # the player in each seat
        added.append({
            "format": FORMAT, "schema": SCHEMA, "id": next_id + len(added), "kind": kind, "wall": wall,
            "preset": rules.name, "rules": rules.to_dict(), "start": start,
            "players": [match.players[k] for k in by_seat], "model_versions": [model_versions[k] for k in by_seat],
            "moves": [list(m) for m in game.moves], "scores": list(game.scores), "plies": game.plies,
            "match_seed": match.seed, "game": game.index, "config_hash": config_hash, "software": software,
        })
    lines = [json.dumps(g, separators=(",", ":")) for g in (kept + added)[-keep:]] if keep > 0 else []
    atomic_write_text(Path(run_dir) / FILE, "".join(line + "\n" for line in lines))
    return added
