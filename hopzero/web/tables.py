"""The Tables view: match results (``hopzero match --out``, a round-robin tournament) as a cross
table of scores with ratings, from the ``--results`` files named on the command line.

A ``--results`` path may be a file or a ``hopzero tournament --out`` directory (its
``results.jsonl``). On star3, star4 and star6 a tournament's lines are pairwise comparisons of
finishing order: in each game every two players meet once, the one with the larger share of the
result winning (equal shares: a draw), so the table is the multi-player ladder read as pairs.

The files are read at every request, so results appended while the server runs show up; a file
that cannot be read, or has a bad line, is a note beside the table, never an error page. The
table itself is :func:`evaluator.results.results_table`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ccengine import preset
from ccengine.rules import RulesError
from evaluator.results import ResultsError, read_results, results_table

from .limits import ChoiceError

__all__ = ["Tables"]


#: The results file of a ``hopzero tournament --out DIR`` directory, and its ladder.
TOURNAMENT_FILE = "results.jsonl"
LADDER_FILE = "ladder.json"


def _results_file(path: Path) -> Path:
    """The results file ``path`` names: itself, or a tournament directory's ``results.jsonl``."""
    if path.is_dir():
        path = path / TOURNAMENT_FILE
    if not path.is_file():
        raise ChoiceError(f"--results {path}: no such file (a results file, or a tournament's --out directory)")
    return path


def _players(name: str) -> int:
    try:
        return preset(name).players
    except RulesError:
        return 2


class Tables:
    """The ``--results`` files of the server (never named by a client)."""

    def __init__(self, paths: list[str | Path]) -> None:
        self.paths = [_results_file(Path(p).resolve()) for p in paths]

    def view(self, preset: str | None) -> dict[str, Any]:
        """The table of ``preset`` (default: the first preset with results, by name), the presets
        that have results, the files and the notes."""
        lines: list[dict[str, Any]] = []
        sources: dict[str, set[Path]] = {}
        notes = []
        for p in self.paths:
            try:
                read = read_results(p)
            except ResultsError as exc:
                notes.append(str(exc))
                continue
            lines += read
            for r in read:
                sources.setdefault(r["preset"], set()).add(p)
        presets = sorted(sources)
        chosen = preset if preset is not None else (presets[0] if presets else None)
        pairwise = chosen is not None and _players(chosen) > 2
        ladder = _tournament_ladder(sources[chosen]) if pairwise and chosen in sources else None
        table = None if chosen is None else results_table(lines, chosen, ladder["anchor"] if ladder else None)
        if ladder is not None and table is not None and not _take_intervals(table, ladder):
            table = results_table(lines, chosen)
        return {
            "files": [p.name if p.name != TOURNAMENT_FILE else f"{p.parent.name}/{p.name}" for p in self.paths],
            "pairwise": pairwise,
            "presets": presets,
            "table": table,
            "notes": notes,
        }


def _tournament_ladder(files: set[Path]) -> dict[str, Any] | None:
    """The ``ladder.json`` of the one tournament directory ``files`` name, if that is what they are."""
    if len(files) != 1 or (results := next(iter(files))).name != TOURNAMENT_FILE:
        return None
    try:
        ladder = json.loads((results.parent / LADDER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return ladder if isinstance(ladder, dict) and isinstance(ladder.get("anchor"), str) else None


def _take_intervals(table: dict[str, Any], ladder: dict[str, Any]) -> bool:
    """With three or more players the comparisons of one game are not independent, so the fit's
    intervals are too narrow. A table that is one tournament's alone, rated from the same anchor,
    takes the intervals of its ``ladder.json`` (a bootstrap over whole games,
    ``evaluator.tournament``) as widths around its own ratings (``intervals``: ``"games"``).
    False, the table unchanged, when the ladder does not fit it."""
    try:
        if ladder["preset"] != table["preset"] or ladder["anchor"] != table["anchor"]:
            return False
        widths = {s["player"]: (float(s["low"]) - float(s["elo"]), float(s["high"]) - float(s["elo"]))
                  for s in ladder["standings"] if not s.get("published")}
    except (AttributeError, KeyError, TypeError, ValueError):  # a ladder.json of another shape
        return False
    rated = [p for p in table["players"] if p["elo"] is not None]
    if not all(p["name"] in widths for p in rated):
        return False
    for p in rated:
        low, high = widths[p["name"]]
        p["low"], p["high"] = p["elo"] + low, p["elo"] + high
    table["intervals"] = "games"
    return True
