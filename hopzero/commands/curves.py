"""``hopzero curves``: several training runs' best models against greedy over time, side by side."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .args import CliError, add_json, emit


def add_parser(sub: Any) -> None:
    p = sub.add_parser("curves", help="plot several runs' best models against greedy over time, in one picture")
    p.add_argument("runs", metavar="RUN_DIR", nargs="+", help="run directories (hopzero train --run-dir)")
    p.add_argument("--out", metavar="FILE", required=True, help="the PNG to write")
    p.add_argument("--title", default="best model against greedy", help="the picture's title")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from hopzero.plots import greedy_curve, write_curves
    from hopzero.rundir import RunDir

    curves = {}
    for name in args.runs:
        path = Path(name)
        if not (path / "run.json").is_file():
            raise CliError(f"{name}: not a run directory (no run.json)")
        curves[path.name] = greedy_curve(RunDir(path))
    if len(set(curves)) < len(args.runs):
        raise CliError("two run directories share a name: the picture labels each run by its directory's name")
    write_curves(curves, Path(args.out), args.title)
    data = {"out": args.out, "runs": {name: [{"minutes": round(t, 2), "version": v, "score": s} for t, v, s in curve]
                                      for name, curve in curves.items()}}
    lines = [f"wrote {args.out}"] + [
        f"  {name}: " + (", ".join(f"{t:.1f} min {100 * s:.0f}%" for t, _, s in curve) or "no measurement yet")
        for name, curve in curves.items()]
    emit(args, data, "\n".join(lines))
    return 0
