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

from pathlib import Path
from typing import Any

from ccengine import preset
from ccengine.rules import RulesError
from evaluator.results import ResultsError, read_results, results_table

from .limits import ChoiceError

__all__ = ["Tables"]


#: The results file of a ``hopzero tournament --out DIR`` directory.
TOURNAMENT_FILE = "results.jsonl"


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
        notes = []
        for p in self.paths:
            try:
                lines += read_results(p)
            except ResultsError as exc:
                notes.append(str(exc))
        presets = sorted({r["preset"] for r in lines})
        chosen = preset if preset is not None else (presets[0] if presets else None)
        return {
            "files": [p.name if p.name != TOURNAMENT_FILE else f"{p.parent.name}/{p.name}" for p in self.paths],
            "pairwise": chosen is not None and _players(chosen) > 2,
            "presets": presets,
            "table": results_table(lines, chosen) if chosen is not None else None,
            "notes": notes,
        }
