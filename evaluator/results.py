"""Match results as JSON lines, and the table of scores and ratings they make.

``hopzero match --out FILE`` appends one line per match, and a round-robin tournament appends one
line per pairing in the same format (docs/WEB.md, "Tables"):

    {"format": "hopzero.match-result", "schema": 1, "preset": "cc49",
     "a": "<SPEC of A>", "b": "<SPEC of B>", "games": 100, "a_wins": 61, "draws": 4, "b_wins": 35,
     "seed": 0, "random_opening": 3, "date": "2026-11-24T10:00:00Z", "software": {...}}

:func:`results_table` turns the lines of one preset into a cross table (each player's score
against each other, draws half) and ratings fitted by :class:`evaluator.elo.EloLadder`, anchored
at ``greedy`` = 0 when greedy played, else at the first player by name (the table says which).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from .arena import MatchResult
from .elo import EloLadder

__all__ = ["FORMAT", "ResultsError", "append_result", "pairing_line", "read_results", "result_lines",
           "results_table"]

FORMAT = "hopzero.match-result"
SCHEMA = 1
_COUNTS = ("games", "a_wins", "draws", "b_wins")
#: The longest results file read (a line is about 300 bytes).
MAX_FILE_BYTES = 16 << 20


class ResultsError(ValueError):
    """A results file that cannot be read, or a line that is not a match result."""


def result_lines(match: MatchResult, software: dict[str, str]) -> list[dict[str, Any]]:
    """The lines of a match: one per two players of different names, their pairwise comparisons
    (``MatchResult.pairwise``: who scored more in each game) as the games; for two players, A's
    wins, draws and losses against B."""
    lines = []
    n = len(match.players)
    for i in range(n):
        for j in range(i + 1, n):
            if match.players[i] != match.players[j]:
                lines.append(pairing_line(match.preset, match.players[i], match.players[j], match.pairwise(i, j),
                                          seed=match.seed, random_opening=match.random_opening, software=software))
    return lines


def pairing_line(preset: str, a: str, b: str, record: tuple[int, int, int], *, seed: int, random_opening: int,
                 software: dict[str, str]) -> dict[str, Any]:
    """The line of ``a``'s ``record`` (wins, draws, losses) against ``b`` (a match, or one pairing
    of a tournament)."""
    wins, draws, losses = record
    return {
        "format": FORMAT, "schema": SCHEMA, "preset": preset, "a": a, "b": b,
        "games": wins + draws + losses, "a_wins": wins, "draws": draws, "b_wins": losses,
        "seed": seed, "random_opening": random_opening,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "software": software,
    }


def append_result(path: str | os.PathLike[str], *lines: dict[str, Any]) -> None:
    """Append ``lines`` to the results file ``path`` (created if missing) as one write, so
    matches appending to one file at once do not mix their lines."""
    data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _checked(line: Any, where: str) -> dict[str, Any]:
    if not isinstance(line, dict) or line.get("format") != FORMAT:
        raise ResultsError(f"{where}: not a {FORMAT} line")
    if line.get("schema") != SCHEMA:
        raise ResultsError(f"{where}: schema {line.get('schema')!r}, this hopzero reads {SCHEMA}")
    for key in ("preset", "a", "b"):
        if not isinstance(line.get(key), str) or not line[key] or len(line[key]) > 200:
            raise ResultsError(f"{where}: {key} must be a non-empty string")
    for key in _COUNTS:
        if not isinstance(line.get(key), int) or isinstance(line[key], bool) or line[key] < 0:
            raise ResultsError(f"{where}: {key} must be a whole number >= 0")
    if line["a_wins"] + line["draws"] + line["b_wins"] != line["games"]:
        raise ResultsError(f"{where}: a_wins + draws + b_wins is not games")
    if line["a"] == line["b"]:
        raise ResultsError(f"{where}: a player against itself ({line['a']!r})")
    return line


def read_results(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The match results of ``path``, checked line by line; :class:`ResultsError` names the first
    bad line (a torn last line, a write in progress, is skipped)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise ResultsError(f"{p}: larger than {MAX_FILE_BYTES} bytes")
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultsError(f"{p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ResultsError(f"{p}: not UTF-8 text") from None
    lines = text.split("\n")
    out = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            if number == len(lines):  # the last line, not ended: being written
                continue
            raise ResultsError(f"{p}, line {number}: not JSON") from None
        out.append(_checked(line, f"{p}, line {number}"))
    return out


def results_table(lines: list[dict[str, Any]], preset: str, anchor: str | None = None) -> dict[str, Any]:
    """The cross table and ratings of the results of ``preset`` (JSON-ready), rated relative to
    ``anchor`` when it played (default: ``greedy`` when it played, else the first player by name).

    ``players`` are sorted by rating (then by name); ``cells[i][j]`` is player ``i``'s record
    against ``j`` (``wins``, ``draws``, ``losses``, ``games``, ``score``), ``None`` where they did
    not meet; ``players`` hold ``elo``, ``stderr`` and the 95% interval ``low`` .. ``high``
    relative to ``anchor`` (``None`` for players not connected to it by games). The interval is
    the fit's own (``intervals``: ``"fit"``), which takes every game, or pairwise comparison, as
    independent."""
    mine = [r for r in lines if r["preset"] == preset]
    names = sorted({r["a"] for r in mine} | {r["b"] for r in mine})
    if anchor not in names:
        anchor = "greedy" if "greedy" in names else (names[0] if names else "greedy")
    ladder = EloLadder(anchor=anchor)
    pair: dict[tuple[str, str], list[int]] = {}
    for r in mine:
        ladder.record(r["a"], r["b"], r["a_wins"], r["draws"], r["b_wins"])
        for x, y, w, lose in ((r["a"], r["b"], r["a_wins"], r["b_wins"]), (r["b"], r["a"], r["b_wins"], r["a_wins"])):
            counts = pair.setdefault((x, y), [0, 0, 0])
            counts[0] += w
            counts[1] += r["draws"]
            counts[2] += lose
    fitted = ladder.fit() if mine else {}
    order = sorted(names, key=lambda n: (-fitted[n].elo if n in fitted else float("inf"), n))

    def cell(x: str, y: str) -> dict[str, Any] | None:
        if (x, y) not in pair:
            return None
        w, d, lose = pair[(x, y)]
        games = w + d + lose
        return {"wins": w, "draws": d, "losses": lose, "games": games,
                "score": (w + 0.5 * d) / games if games else None}

    return {
        "preset": preset,
        "anchor": anchor,
        "matches": len(mine),
        "intervals": "fit",
        "players": [
            {"name": n, "elo": fitted[n].elo if n in fitted else None,
             "stderr": fitted[n].stderr if n in fitted else None,
             **dict(zip(("low", "high"), fitted[n].interval95() if n in fitted else (None, None))),
             "games": sum(c["games"] for y in names if (c := cell(n, y)) is not None)}
            for n in order
        ],
        "cells": [[cell(x, y) for y in order] for x in order],
    }
