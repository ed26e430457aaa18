"""``hopzero bench movegen``: legal-move generation of the Cython engine against the reference
engine, on the same positions, with a check that both return the same moves.

The Cython engine is timed twice: through ``batch_legal_moves`` (caller-owned numpy buffers for
many states, what the search and self-play use) and one ``legal_moves()`` call per position.
The positions are mid-game positions of random games (plies 20, 24, .., 60) or a file of
position texts, one per line.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ccengine import _core
from ccengine.engines import new_state, state_class
from ccengine.notation import NotationError, Position, parse_position
from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, BenchError, Report

__all__ = ["NAME", "SUMMARY", "MovegenBench", "add_arguments", "bench_movegen", "random_positions",
           "read_positions", "run"]

NAME = "movegen"
SUMMARY = "legal-move generation: the Cython engine against the reference"


@dataclass(frozen=True)
class MovegenBench:
    """One run. ``cython_positions_per_s`` is the batch API's rate; speedups are over the reference."""

    preset: str
    positions: int
    positions_source: str
    cython_positions_per_s: float
    cython_per_call_positions_per_s: float
    cython_batch_positions_per_s: float
    reference_positions_per_s: float
    speedup: float
    per_call_speedup: float
    engines_agree: bool
    mean_legal_moves: float


def random_positions(rules: Rules, count: int, seed: int) -> list[Position]:
    """Mid-game positions of random games (plies 20, 24, .., 60), reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    sample_plies = set(range(20, 61, 4))
    positions: list[Position] = []
    while len(positions) < count:
        state = new_state(rules, engine="cython")
        while not state.is_terminal() and state.ply <= 60 and len(positions) < count:
            if state.ply in sample_plies:
                positions.append(Position(tuple(state.board), state.to_move, state.ply))
            moves = state.legal_moves()
            state.play(moves[int(rng.integers(len(moves)))])
    return positions


def read_positions(rules: Rules, path: str) -> list[Position]:
    """The positions of a file, one position text per line (blank lines and ``#`` comments skipped)."""
    positions = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                positions.append(parse_position(rules, text))
            except NotationError as exc:
                raise BenchError(f"{path} line {number}: {exc}") from None
    if not positions:
        raise BenchError(f"{path} holds no position (one position text per line)")
    return positions


def bench_movegen(rules: Rules, positions: Sequence[Position], *, source: str, min_time: float = 0.5) -> MovegenBench:
    """Time both engines on ``positions`` for at least ``min_time`` seconds each."""
    ref_states = [new_state(rules, p, "reference") for p in positions]
    cython_state = state_class("cython")
    cy_states = [cython_state(rules, p.board, p.to_move, p.ply) for p in positions]
    agree = all(list(map(tuple, c.legal_moves())) == r.legal_moves() for c, r in zip(cy_states, ref_states))

    def one_call_each(states: Sequence[Any]) -> Callable[[], None]:
        def fn() -> None:
            for st in states:
                st.legal_moves()

        return fn

    # The batch API's buffers are allocated once, outside the timing, as a self-play actor holds them.
    rows = max(int(st.max_moves) for st in cy_states)
    moves_out = np.zeros((len(cy_states), rows, 2), dtype=np.int16)
    counts_out = np.zeros(len(cy_states), dtype=np.int32)

    n = len(positions)
    reference_rate = _rate(one_call_each(ref_states), n, min_time)
    per_call_rate = _rate(one_call_each(cy_states), n, min_time)
    batch_rate = _rate(lambda: _core.batch_legal_moves(cy_states, moves_out, counts_out), n, min_time)
    return MovegenBench(
        preset=rules.name,
        positions=n,
        positions_source=source,
        cython_positions_per_s=round(batch_rate, 1),
        cython_per_call_positions_per_s=round(per_call_rate, 1),
        cython_batch_positions_per_s=round(batch_rate, 1),
        reference_positions_per_s=round(reference_rate, 1),
        speedup=round(batch_rate / reference_rate, 2),
        per_call_speedup=round(per_call_rate / reference_rate, 2),
        engines_agree=agree,
        mean_legal_moves=round(sum(len(r.legal_moves()) for r in ref_states) / n, 3),
    )


def _rate(fn: Callable[[], object], items: int, min_time: float) -> float:
    """Items per second of ``fn`` (which handles ``items`` items), repeated for ``min_time``."""
    fn()  # warm-up
    rounds = 0
    start = time.perf_counter()
    while True:
        fn()
        rounds += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return rounds * items / elapsed


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--positions``, ``--count``, ``--min-time``."""
    p.add_argument("--positions", metavar="FILE", help="one position per line (default: random mid-game positions)")
    p.add_argument("--count", type=kit.int_at_least(1), default=256, metavar="N", help="generated positions (default 256)")
    p.add_argument("--min-time", type=kit.positive, default=0.5, metavar="SEC", help="seconds per timing (default 0.5)")


def run(args: argparse.Namespace) -> Report:
    """The command: positions from ``--positions`` or ``--count`` random ones from ``--seed``."""
    rules: Rules = args.preset
    if args.positions:
        positions, source = read_positions(rules, args.positions), args.positions
    else:
        positions = random_positions(rules, args.count, args.seed)
        source = f"random games, seed {args.seed}, plies 20..60"
    r = bench_movegen(rules, positions, source=source, min_time=args.min_time)
    text = "\n".join(
        [
            f"legal-move generation on {r.positions} {r.preset} positions ({source}):",
            f"  reference         {r.reference_positions_per_s:12.0f} positions/s",
            f"  cython per call   {r.cython_per_call_positions_per_s:12.0f} positions/s  ({r.per_call_speedup}x)",
            f"  cython batch      {r.cython_batch_positions_per_s:12.0f} positions/s  ({r.speedup}x)",
            f"  engines agree: {r.engines_agree}",
        ]
    )
    failure = None if r.engines_agree else "the engines disagree on some position's legal moves"
    return Report(asdict(r), text, failure)
