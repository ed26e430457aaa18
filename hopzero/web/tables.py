"""The Tables view: match results (``hopzero match --out``, a round-robin tournament) as a cross
table of scores with ratings, from the ``--results`` files named on the command line.

The files are read at every request, so results appended while the server runs show up; a file
that cannot be read, or has a bad line, is a note beside the table, never an error page. The
table itself is :func:`evaluator.results.results_table`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaluator.results import ResultsError, read_results, results_table

from .opponents import ChoiceError

__all__ = ["Tables"]


class Tables:
    """The ``--results`` files of the server (never named by a client)."""

    def __init__(self, paths: list[str | Path]) -> None:
        self.paths = [Path(p).resolve() for p in paths]
        for p in self.paths:
            if not p.is_file():
                raise ChoiceError(f"--results {p}: no such file")

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
            "files": [p.name for p in self.paths],
            "presets": presets,
            "table": results_table(lines, chosen) if chosen is not None else None,
            "notes": notes,
        }
