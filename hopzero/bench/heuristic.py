"""``hopzero bench heuristic``: the heuristic actor's worker, greedy games per second.

One :class:`~actors.heuristic.HeuristicWorker` plays ``--games`` stage-1 greedy games (the
training data of the first stage), then its records are encoded for the replay buffer, timed
apart.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass

import numpy as np

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, Report

__all__ = ["NAME", "SUMMARY", "HeuristicBench", "add_arguments", "bench_heuristic", "run"]

NAME = "heuristic"
SUMMARY = "the heuristic actor's worker: greedy games/s, and record encoding"


@dataclass(frozen=True)
class HeuristicBench:
    """One run: ``games_per_s`` over ``wall_s``; the positions kept and the records' encoded size."""

    preset: str
    games: int
    wall_s: float
    games_per_s: float
    records: int
    positions: int
    kept_positions: int
    mean_plies: float
    draws_discarded: int
    record_bytes_mean: float
    encode_ms_per_record: float


def bench_heuristic(rules: Rules, *, games: int = 2000, seed: int = 0) -> HeuristicBench:
    """Play ``games`` greedy games, then encode their records."""
    from actors.heuristic import HeuristicWorker
    from learner.records import encode_record

    worker = HeuristicWorker(rules, run_id="bench", config_hash="bench", actor="bench", seed=seed)
    t0 = time.perf_counter()
    records = worker.generate(games)
    wall = time.perf_counter() - t0
    s = worker.stats()
    t1 = time.perf_counter()
    sizes = [len(encode_record(r)) for r in records]
    enc = time.perf_counter() - t1
    return HeuristicBench(
        preset=rules.name, games=games, wall_s=round(wall, 3), games_per_s=round(games / wall, 1),
        records=len(records), positions=s["positions"], kept_positions=s["kept_positions"],
        mean_plies=s["mean_plies"], draws_discarded=s["draws_discarded"],
        record_bytes_mean=float(np.mean(sizes)) if sizes else 0.0,
        encode_ms_per_record=round(1000 * enc / max(1, len(records)), 4),
    )


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--games``."""
    p.add_argument("--games", type=kit.int_at_least(1), default=2000, metavar="N", help="games (default 2000)")


def run(args: argparse.Namespace) -> Report:
    """The command."""
    r = bench_heuristic(args.preset, games=args.games, seed=args.seed)
    text = (
        f"{r.games_per_s:,.0f} greedy games/s on {r.preset} ({r.games} games, mean {r.mean_plies:.1f} plies, "
        f"{r.draws_discarded} draws discarded); records {r.record_bytes_mean:,.0f} bytes, "
        f"{r.encode_ms_per_record:.3f} ms each to encode"
    )
    return Report(asdict(r), text)
