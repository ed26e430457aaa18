"""``hopzero bench WHAT``: one module per benchmark, and the registry the command line reads.

Each benchmark module defines:

- ``NAME``: the WHAT of ``hopzero bench WHAT``, and ``SUMMARY``: its line in ``hopzero bench --help``;
- ``add_arguments(parser, kit)``: its own options. ``--preset``, ``--seed`` and ``--json`` are
  added here for every benchmark (each one is randomized: positions, weights or batches);
- ``run(args) -> Report``: the measurement as one JSON-ready dict and a readable text. Speed is
  reported in ``data``, never asserted: the tests check the keys, the docs keep the figures.

Adding a benchmark: write ``hopzero/bench/NAME.py`` with those three and list it in
``_MODULES``.
"""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Any

from hopzero.bench import (
    actor,
    alphabeta,
    games,
    heuristic,
    learner,
    match,
    movegen,
    network,
    replay,
    reply,
    rooms,
    selfplay,
)
from hopzero.bench.common import ArgKit, BenchError, Report, machine

__all__ = ["BENCHMARKS", "ArgKit", "BenchError", "Report", "add_parsers", "run"]

_MODULES: tuple[ModuleType, ...] = (
    movegen, selfplay, actor, heuristic, network, learner, match, alphabeta, replay, reply, rooms, games,
)

#: Every benchmark by name, in the order ``hopzero bench --help`` lists them.
BENCHMARKS: dict[str, ModuleType] = {m.NAME: m for m in _MODULES}


def add_parsers(subparsers: Any, kit: ArgKit) -> None:
    """One sub-parser per benchmark on ``subparsers`` (``dest="what"``)."""
    for name, module in BENCHMARKS.items():
        p = subparsers.add_parser(name, help=module.SUMMARY, description=module.__doc__.split("\n\n")[0])
        kit.add_preset(p)
        module.add_arguments(p, kit)
        p.add_argument("--seed", type=kit.int_at_least(0), default=0, metavar="S", help="random seed (default 0)")
        kit.add_json(p)


def run(args: argparse.Namespace) -> Report:
    """Run the benchmark ``args.what``; its report gains the benchmark's name and the machine."""
    report: Report = BENCHMARKS[args.what].run(args)
    where = machine()
    data = {"benchmark": args.what, **report.data, "machine": where}
    text = f"{report.text}\n({where['cpu']}, {where['cpus']} CPUs" + (f", {where['gpu']})" if "gpu" in where else ")")
    return Report(data, text, report.failure)
