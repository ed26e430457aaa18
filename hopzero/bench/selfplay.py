"""``hopzero bench selfplay``: self-play search speed on one core, against the network alone.

G games are played concurrently on one core (PyTorch on one thread) by the batched search with
the self-play settings (root noise, temperature schedule, tree reuse) and a network of random
weights; finished games are replaced by new ones. In the same run the network alone is timed on
batches of the size the search actually produced, so ``ratio`` (simulations per second over
network evaluations per second) says how much the search costs on top of the network: 1.0 means
nothing, 0.5 means as much as the network. The search runs here without the self-play actor
around it (records, weight updates): ``hopzero bench actor`` times the actor.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccengine.engines import new_state
from ccengine.rules import Rules
from ccengine.search import BatchedSearch, SearchConfig
from hopzero.bench.common import ArgKit, Report

__all__ = ["NAME", "SUMMARY", "SelfPlayBench", "add_arguments", "bench_selfplay", "run"]

NAME = "selfplay"
SUMMARY = "self-play search: simulations/s on one core, against the network alone"


@dataclass(frozen=True)
class SelfPlayBench:
    """What one run measured (``to_dict`` is the JSON the command prints). ``model`` is the
    network's size (untrained), ``search_share`` the share of the time outside the evaluator."""

    preset: str
    model: str
    encoding: str
    games: int
    simulations_per_move: int
    seconds: float
    moves_searched: int
    games_finished: int
    batch_size: float
    sims_per_s_per_core: float
    nn_evals_per_s_per_core: float
    search_share: float

    @property
    def ratio(self) -> float:
        """Simulations per second over the network alone's evaluations per second."""
        return self.sims_per_s_per_core / self.nn_evals_per_s_per_core

    def to_dict(self) -> dict[str, Any]:
        """The fields and ``ratio``."""
        data = dict(self.__dict__)
        data["ratio"] = round(self.ratio, 4)
        return data


def bench_selfplay(
    rules: Rules,
    *,
    games: int = 128,
    simulations: int = 175,
    seconds: float = 20.0,
    encoding: str = "paper",
    seed: int = 0,
) -> SelfPlayBench:
    """Run self-play with an untrained ``paper``-size network for about ``seconds``, then time the
    network alone for a fifth of that (at least 3 calls)."""
    import torch

    from learner.network_evaluator import load_network_evaluator

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    evaluator = load_network_evaluator(rules, None, encoding=encoding, threads=1)
    rng = np.random.default_rng(seed)
    config = SearchConfig(num_simulations=simulations)
    search = BatchedSearch(rules, games, config, history=evaluator.encoding.history, rng=rng)
    states = [new_state(rules) for _ in range(games)]
    for g, state in enumerate(states):
        search.set_root(g, state)

    timed = _TimedEvaluator(evaluator)
    moves_searched = finished = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        results = search.search(timed)
        for g, result in enumerate(results):
            if result is None:
                continue
            moves_searched += result.searched
            states[g].play(result.move)
            if states[g].is_terminal():
                finished += 1
                states[g] = new_state(rules)
                search.set_root(g, states[g])
            else:
                search.play(g, result.move)
    elapsed = time.perf_counter() - start
    eval_seconds = timed.seconds
    sims = moves_searched * simulations
    batch = timed.rows / max(timed.calls, 1)

    nn_rate = _network_alone(evaluator, timed.last_inputs, min_seconds=seconds / 5)
    return SelfPlayBench(
        preset=rules.name,
        model="paper",
        encoding=encoding,
        games=games,
        simulations_per_move=simulations,
        seconds=round(elapsed, 3),
        moves_searched=moves_searched,
        games_finished=finished,
        batch_size=round(batch, 2),
        sims_per_s_per_core=round(sims / elapsed, 1),
        nn_evals_per_s_per_core=round(nn_rate, 1),
        search_share=round(1.0 - eval_seconds / elapsed, 4),
    )


class _TimedEvaluator:
    """Passes calls through, timing them and keeping the last batch's inputs."""

    needs_states = False

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.calls = 0
        self.rows = 0
        self.last_inputs: tuple[np.ndarray, ...] | None = None

    def evaluate(self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray) -> Any:
        t = time.perf_counter()
        out = self.inner.evaluate(pieces, to_move, legal, counts)
        self.seconds += time.perf_counter() - t
        self.calls += 1
        self.rows += len(to_move)
        if self.last_inputs is None or len(to_move) >= len(self.last_inputs[1]):  # a full-size batch
            self.last_inputs = (pieces.copy(), to_move.copy(), legal.copy(), counts.copy())
        return out


def _network_alone(evaluator: Any, inputs: tuple[np.ndarray, ...] | None, *, min_seconds: float) -> float:
    """Positions per second of the network alone (forward pass and legal-move masking, planes
    already encoded) on one of the search's own full-size batches: encoding counts as search."""
    if inputs is None:
        raise RuntimeError("the search made no network call; run longer (--seconds)")
    pieces, to_move, legal, counts = inputs
    planes = evaluator.encoding.encode(pieces, to_move)
    indices = evaluator.network_frame(legal, to_move)
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < min_seconds or calls < 3:
        evaluator.inference.evaluate(planes, indices, counts)
        calls += 1
    return calls * len(to_move) / (time.perf_counter() - start)


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--games``, ``--sims``, ``--seconds``, ``--encoding``."""
    p.add_argument("--games", type=kit.int_at_least(1), default=128, metavar="G", help="concurrent games (default 128)")
    p.add_argument("--sims", type=kit.int_at_least(1), default=175, metavar="S", help="simulations per move (default 175)")
    p.add_argument("--seconds", type=kit.positive, default=20.0, metavar="SEC", help="self-play time (default 20)")
    p.add_argument(
        "--encoding", choices=("paper", "general"), default=None,
        help="network input (default paper; general on the star, which has no paper encoding)",
    )


def run(args: argparse.Namespace) -> Report:
    """The command."""
    r = bench_selfplay(
        args.preset, games=args.games, simulations=args.sims, seconds=args.seconds, seed=args.seed,
        encoding=args.encoding or ("general" if args.preset.is_star else "paper"),
    )
    text = (
        f"{r.sims_per_s_per_core:,.0f} simulations/s on one core ({r.games} games, batch "
        f"{r.batch_size:.0f}); the network alone {r.nn_evals_per_s_per_core:,.0f} evaluations/s; "
        f"ratio {r.ratio:.2f}; {r.search_share:.1%} of the time outside the evaluator"
    )
    return Report(r.to_dict(), text)
