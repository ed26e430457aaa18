"""``hopzero bench WHAT``: a speed benchmark, one module each in ``hopzero.bench``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from hopzero import bench

from .args import BENCH_INT_MAX, CliError, Parser, add_json, add_preset, emit, float_arg, int_arg


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmarks: " + ", ".join(bench.BENCHMARKS),
        description="Speed benchmarks, one per WHAT (hopzero/bench/); --json prints one JSON object.",
    )
    what = p.add_subparsers(dest="what", metavar="WHAT", parser_class=Parser)
    what.required = True
    kit = bench.ArgKit(add_preset=add_preset, add_json=add_json, int_at_least=_bench_int_arg, positive=float_arg)
    bench.add_parsers(what, kit)
    p.set_defaults(func=run)


def _bench_int_arg(minimum: int) -> Callable[[str], int]:
    return int_arg(minimum, BENCH_INT_MAX)


def run(args: argparse.Namespace) -> int:
    try:
        report = bench.run(args)
    except bench.BenchError as exc:
        raise CliError(str(exc)) from None
    emit(args, report.data, report.text)
    if report.failure:
        sys.stderr.write(f"hopzero bench {args.what}: error: {report.failure}\n")
        return 1
    return 0
