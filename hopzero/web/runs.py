"""What the run view shows, read from a run directory's own files (hopzero/rundir.py).

- ``evaluations.jsonl``: the matches against greedy (win rate and Elo of each best model over
  time) and the gate decisions (candidate against best: score, verdict, reason);
- ``promotions.jsonl``: every promotion; ``best.json``: the current best model;
- ``elo.json``: the Elo ladder (greedy = 0), fitted by ``evaluator.elo``;
- ``run.json``: the run's identity and start time.

Files are read as they are while a run writes them: a torn last line is skipped (the JSONL
reader), a missing or damaged file gives an empty section and a note, never an error page.
"""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path
from typing import Any

from evaluator.elo import EloLadder
from learner.run_files import read_jsonl

__all__ = ["WATCHED", "run_stamp", "run_summary"]

#: The files whose changes the live view follows.
WATCHED = ("evaluations.jsonl", "promotions.jsonl", "elo.json", "best.json", "run.json")
#: The most gate rows and promotions sent (the newest).
MAX_ROWS = 200


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
        "notes": notes,
    }
