"""``hopzero bench alphabeta``: the alpha-beta baseline's time per move at each depth.

The positions are mid-game positions of random games (``movegen``'s: plies 20, 24, .., 60). Each
depth searches every position once with ``alphabeta:depth=D``'s search; reported per depth: the
mean and largest seconds per search, the mean nodes and nodes per second.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, Report

__all__ = ["NAME", "SUMMARY", "add_arguments", "bench_alphabeta", "run"]

NAME = "alphabeta"
SUMMARY = "the alpha-beta baseline: seconds per move and nodes/s at each depth"


def _depths(text: str) -> list[int]:
    """An argparse type for ``--depths``: comma-separated depths in 1..12."""
    from ccengine._alphabeta import MAX_DEPTH

    try:
        depths = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of depths") from None
    if any(not 1 <= d <= MAX_DEPTH for d in depths):
        raise argparse.ArgumentTypeError(f"{text!r}: every depth must be in 1..{MAX_DEPTH}")
    return depths


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--depths``, ``--count``."""
    p.add_argument("--depths", type=_depths, default=[2, 3, 4], metavar="D,D", help="depths (default 2,3,4)")
    p.add_argument("--count", type=kit.int_at_least(1), default=50, metavar="N", help="positions (default 50)")


def bench_alphabeta(rules: Rules, depths: list[int], *, count: int = 50, seed: int = 0) -> dict[str, Any]:
    """Search ``count`` mid-game positions at every depth of ``depths``."""
    from ccengine import _core
    from ccengine._alphabeta import AlphaBetaSearch
    from hopzero.bench.movegen import random_positions

    positions = [_core.State(rules, p.board, p.to_move, p.ply) for p in random_positions(rules, count, seed)]
    positions = [s for s in positions if not s.is_terminal()]
    search = AlphaBetaSearch(_core.tables_for(rules))
    results = []
    for depth in depths:
        times, nodes = [], 0
        for state in positions:
            t = time.perf_counter()
            nodes += search.search(state, depth)[2]
            times.append(time.perf_counter() - t)
        total = sum(times)
        results.append({
            "depth": depth, "mean_s": round(total / len(times), 5), "max_s": round(max(times), 5),
            "mean_nodes": round(nodes / len(times), 1), "nodes_per_s": round(nodes / max(total, 1e-9)),
        })
    return {"preset": rules.name, "positions": len(positions), "results": results}


def run(args: argparse.Namespace) -> Report:
    """The command."""
    data = bench_alphabeta(args.preset, args.depths, count=args.count, seed=args.seed)
    lines = [f"alphabeta on {data['preset']}, {data['positions']} mid-game positions:"]
    lines += [f"  depth {r['depth']:2d}: {1000 * r['mean_s']:9.2f} ms mean, {1000 * r['max_s']:9.2f} ms max, "
              f"{r['mean_nodes']:12,.0f} nodes, {r['nodes_per_s']:12,} nodes/s" for r in data["results"]]
    return Report(data, "\n".join(lines))
