"""``hopzero bench selfplay``: self-play search speed on one core, side by side for several setups.

G games are played concurrently on one core (one thread) by the batched search with the self-play
settings (root noise, temperature schedule, tree reuse) and a network of random weights; finished
games are replaced by new ones. A *setup* is an inference backend and an evaluation-cache size
(``--backend eager,onnx --cache 0,65536``: the first setup is eager PyTorch without a cache, the
second ONNX Runtime with a cache); the setups take turns for ``--rounds`` rounds, each playing its
own games on, so that a change of load on a shared machine falls on all of them, and ``speedup``
is each setup's simulations per second over the first's. In the same run each setup's network is
timed alone on batches of the size its search actually produced, so ``ratio`` (simulations per
second over network evaluations per second) says how much the rest costs on top of the network:
1.0 means nothing (more with a cache, which skips evaluations). The search runs here without the
self-play actor around it (records, weight updates): ``hopzero bench actor`` times the actor.

A setup may also turn on KataGo's self-play techniques, so that their cost shows side by side:
``--forced-playouts K`` (forced playouts and target pruning), ``--global-pooling N`` (every N-th
block of the network a global pooling block), ``--full-search-prob P`` with ``--fast-sims F``
(playout cap randomization: a share P of the moves is searched in full, the rest with F
simulations). ``moves_per_s`` counts the searched moves (games advance by them),
``recorded_per_s`` the full searches among them, the positions self-play would train on;
``recorded_speedup`` compares those across setups.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccengine.encoding import encoding_for, encodings_for
from ccengine.engines import new_state
from ccengine.eval_cache import EvaluationCache
from ccengine.rules import Rules
from ccengine.search import BatchedSearch, SearchConfig
from hopzero.bench.common import ArgKit, BenchError, Report, int_list_arg

__all__ = ["NAME", "SUMMARY", "SelfPlayBench", "Techniques", "add_arguments", "bench_selfplay", "run"]

NAME = "selfplay"
SUMMARY = "self-play search: simulations/s on one core, setups (backend, cache) side by side"


@dataclass(frozen=True)
class SelfPlayBench:
    """What one setup measured (``to_dict`` is its JSON). ``model`` is the network's size
    (untrained), ``search_share`` the share of the time outside the evaluator (and its cache)."""

    backend: str
    eval_cache: int
    cache_hit_rate: float
    seconds: float
    moves_searched: int
    games_finished: int
    batch_size: float
    sims_per_s_per_core: float
    nn_evals_per_s_per_core: float
    search_share: float
    forced_playouts: float = 0.0
    global_pooling: int = 0
    full_search_prob: float = 1.0
    moves_per_s: float = 0.0
    recorded_per_s: float = 0.0

    @property
    def ratio(self) -> float:
        """Simulations per second over the network alone's evaluations per second."""
        return self.sims_per_s_per_core / self.nn_evals_per_s_per_core

    def to_dict(self) -> dict[str, Any]:
        """The fields and ``ratio``."""
        data = dict(self.__dict__)
        data["ratio"] = round(self.ratio, 4)
        return data


@dataclass(frozen=True)
class Techniques:
    """KataGo's self-play techniques of one setup (all off by default)."""

    forced_playouts: float = 0.0
    global_pooling: int = 0
    full_search_prob: float = 1.0
    fast_simulations: int = 0


class _Setup:
    """One setup's network, cache, search and games, played on round after round."""

    def __init__(self, rules: Rules, backend: str, cache: int, *, games: int, simulations: int, encoding: str,
                 seed: int, techniques: Techniques = Techniques()) -> None:
        import torch

        from learner.model import NetworkConfig, PolicyValueNet
        from learner.network_evaluator import NetworkEvaluator, network_inference

        torch.manual_seed(seed)  # the same random weights for every setup
        self.rules = rules
        net = NetworkConfig(size="paper", encoding=encoding, global_pooling=techniques.global_pooling)
        enc = encoding_for(rules, encoding, history=net.history)
        model = PolicyValueNet(net.net_config(rules))
        self.network = NetworkEvaluator(rules, enc, network_inference(rules, enc, model, backend=backend, threads=1))
        self.cache = EvaluationCache(self.network, cache) if cache > 0 else None
        self.timed = _TimedEvaluator(self.cache if self.cache is not None else self.network)
        self.simulations = simulations
        self.techniques = techniques
        config = SearchConfig(num_simulations=simulations, forced_playouts=techniques.forced_playouts)
        self.search = BatchedSearch(rules, games, config, history=self.network.encoding.history,
                                    rng=np.random.default_rng(seed))
        self._cap_rng = np.random.default_rng([seed, 2])
        self.states = [new_state(rules) for _ in range(games)]
        for g, state in enumerate(self.states):
            self.search.set_root(g, state)
        self.elapsed = 0.0
        self.moves_searched = self.finished = self.recorded = self.new_simulations = 0

    def play(self, seconds: float) -> None:
        """Search and play moves for about ``seconds``."""
        tech = self.techniques
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            active = [g for g in range(len(self.states)) if self.search.is_active(g)]
            fast = {g for g in active if self._cap_rng.random() >= tech.full_search_prob}
            for g, result in enumerate(self.search.search(self.timed, active, fast=fast,
                                                          fast_simulations=tech.fast_simulations)):
                if result is None:
                    continue
                self.moves_searched += result.searched
                if result.searched:
                    self.recorded += g not in fast
                    self.new_simulations += tech.fast_simulations if g in fast else self.simulations
                self.states[g].play(result.move)
                if self.states[g].is_terminal():
                    self.finished += 1
                    self.states[g] = new_state(self.rules)
                    self.search.set_root(g, self.states[g])
                else:
                    self.search.play(g, result.move)
        self.elapsed += time.perf_counter() - start

    def result(self, nn_seconds: float) -> SelfPlayBench:
        timed = self.timed
        return SelfPlayBench(
            backend=self.network.inference.backend,
            eval_cache=self.cache.capacity if self.cache is not None else 0,
            cache_hit_rate=round(self.cache.hit_rate, 4) if self.cache is not None else 0.0,
            seconds=round(self.elapsed, 3),
            moves_searched=self.moves_searched,
            games_finished=self.finished,
            batch_size=round(timed.rows / max(timed.calls, 1), 2),
            sims_per_s_per_core=round(self.new_simulations / self.elapsed, 1),
            nn_evals_per_s_per_core=round(_network_alone(self.network, timed.last_inputs, min_seconds=nn_seconds), 1),
            search_share=round(1.0 - timed.seconds / self.elapsed, 4),
            forced_playouts=self.techniques.forced_playouts,
            global_pooling=self.techniques.global_pooling,
            full_search_prob=self.techniques.full_search_prob,
            moves_per_s=round(self.moves_searched / self.elapsed, 2),
            recorded_per_s=round(self.recorded / self.elapsed, 2),
        )


def bench_selfplay(
    rules: Rules,
    *,
    setups: list[tuple[str, int]],
    games: int = 128,
    simulations: int = 175,
    seconds: float = 20.0,
    rounds: int = 1,
    encoding: str = "paper",
    seed: int = 0,
    techniques: list[Techniques] | None = None,
) -> list[SelfPlayBench]:
    """Run self-play with an untrained ``paper``-size network for about ``seconds`` per setup
    (``(backend, cache positions)``, with ``techniques[i]`` when given), the setups taking turns
    in ``rounds`` slices; then time each network alone for a fifth of that (at least 3 calls)."""
    import torch

    torch.set_num_threads(1)
    techniques = techniques or [Techniques()] * len(setups)
    runs = [_Setup(rules, backend, cache, games=games, simulations=simulations, encoding=encoding, seed=seed,
                   techniques=tech)
            for (backend, cache), tech in zip(setups, techniques)]
    for _ in range(rounds):
        for setup in runs:
            setup.play(seconds / rounds)
    return [setup.result(seconds / 5) for setup in runs]


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


def _names(text: str) -> list[str]:
    """An argparse type: comma-separated inference backends."""
    from learner.backends import BACKENDS

    names = [x.strip() for x in text.split(",")]
    bad = [x for x in names if x not in BACKENDS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown backend {bad[0]!r}; valid: {', '.join(BACKENDS)}")
    return names


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--games``, ``--sims``, ``--seconds``, ``--rounds``, ``--encoding``, ``--backend``, ``--cache``."""
    p.add_argument("--games", type=kit.int_at_least(1), default=128, metavar="G", help="concurrent games (default 128)")
    p.add_argument("--sims", type=kit.int_at_least(1), default=175, metavar="S", help="simulations per move (default 175)")
    p.add_argument("--seconds", type=kit.positive, default=20.0, metavar="SEC",
                   help="self-play time of each setup (default 20)")
    p.add_argument("--rounds", type=kit.int_at_least(1), default=1, metavar="R",
                   help="slices the setups take turns in (default 1)")
    p.add_argument(
        "--encoding", choices=("paper", "general"), default=None,
        help="network input (default paper; general on the star, which has no paper encoding)",
    )
    p.add_argument("--backend", type=_names, default=["auto"], metavar="B[,B...]",
                   help="inference backend of each setup: auto (onnx-int8 on CPU), eager, compile, onnx, onnx-int8 "
                        "(default auto)")
    p.add_argument("--cache", type=int_list_arg(0, "cache size"), default=[0], metavar="N[,N...]",
                   help="evaluation-cache positions of each setup, 0 = none (default 0, as self-play); "
                        "one value applies to every setup")
    p.add_argument("--forced-playouts", type=_float_list(0.0, 1e9, "k"), default=[0.0], metavar="K[,K...]",
                   help="KataGo's forced playouts with k = K in each setup, 0 = off (default 0)")
    p.add_argument("--global-pooling", type=int_list_arg(0, "block interval"), default=[0], metavar="N[,N...]",
                   help="every N-th block of each setup's network a global pooling block, 0 = none (default 0)")
    p.add_argument("--full-search-prob", type=_float_list(1e-9, 1.0, "share"), default=[1.0], metavar="P[,P...]",
                   help="playout cap randomization: the share of full searches in each setup (default 1: all)")
    p.add_argument("--fast-sims", type=kit.int_at_least(1), default=None, metavar="F",
                   help="simulations of a fast search (default: a sixth of --sims, KataGo's ratio)")


def _float_list(low: float, high: float, what: str) -> Any:
    """An argparse type: comma-separated numbers, each in [low, high]."""

    def parse(text: str) -> list[float]:
        try:
            values = [float(x) for x in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None
        if any(not low <= v <= high for v in values):
            raise argparse.ArgumentTypeError(f"{text!r}: every {what} must lie in [{low:g}, {high:g}]")
        return values

    return parse


def _setups(args: argparse.Namespace) -> tuple[list[tuple[str, int]], list[Techniques]]:
    """Each setup's (backend, cache) and techniques: every list names one or as many setups."""
    lists = {"--backend": args.backend, "--cache": args.cache, "--forced-playouts": args.forced_playouts,
             "--global-pooling": args.global_pooling, "--full-search-prob": args.full_search_prob}
    n = max(len(v) for v in lists.values())
    if any(len(v) not in (1, n) for v in lists.values()):
        (name, first), *others = [(name, len(v)) for name, v in lists.items() if len(v) > 1]
        counts = " and ".join([f"{name} names {first} setup(s)", *(f"{o} {k}" for o, k in others)])
        raise BenchError(f"{counts}: give one or as many")
    at = {name: (v if len(v) == n else v * n) for name, v in lists.items()}
    fast = args.fast_sims if args.fast_sims is not None else max(1, args.sims // 6)
    if fast >= args.sims and any(p < 1 for p in at["--full-search-prob"]):
        raise BenchError(f"--fast-sims {fast} must be below --sims {args.sims}")
    techniques = [Techniques(forced_playouts=k, global_pooling=g, full_search_prob=p, fast_simulations=fast)
                  for k, g, p in zip(at["--forced-playouts"], at["--global-pooling"], at["--full-search-prob"])]
    return list(zip(at["--backend"], at["--cache"])), techniques


def run(args: argparse.Namespace) -> Report:
    """The command."""
    setups, techniques = _setups(args)
    encoding = args.encoding or encodings_for(args.preset)[0]
    runs = bench_selfplay(args.preset, setups=setups, games=args.games, simulations=args.sims, seconds=args.seconds,
                          rounds=args.rounds, seed=args.seed, encoding=encoding, techniques=techniques)
    first, first_recorded = runs[0].sims_per_s_per_core, runs[0].recorded_per_s
    data = {
        "preset": args.preset.name, "model": "paper", "encoding": encoding,
        "games": args.games, "simulations_per_move": args.sims, "rounds": args.rounds,
        "runs": [r.to_dict() for r in runs],
        "speedup": [round(r.sims_per_s_per_core / first, 3) for r in runs],
        "recorded_speedup": [round(r.recorded_per_s / first_recorded, 3) if first_recorded else None for r in runs],
    }
    lines = [
        f"{r.backend:8s} cache {r.eval_cache:6d}: {r.sims_per_s_per_core:,.0f} simulations/s on one core "
        f"({args.games} games, batch {r.batch_size:.0f}, cache hits {r.cache_hit_rate:.1%}); the network alone "
        f"{r.nn_evals_per_s_per_core:,.0f} evaluations/s; ratio {r.ratio:.2f}; {r.search_share:.1%} of the time "
        f"outside the evaluator; {r.sims_per_s_per_core / first:.2f}x the first"
        + _technique_note(r, first_recorded)
        for r in runs
    ]
    return Report(data, "\n".join(lines))


def _technique_note(r: SelfPlayBench, first_recorded: float) -> str:
    """The setup's KataGo techniques and recorded positions, when it has any on."""
    if (r.forced_playouts, r.global_pooling, r.full_search_prob) == (0.0, 0, 1.0):
        return ""
    ratio = f", {r.recorded_per_s / first_recorded:.2f}x the first" if first_recorded else ""
    return (f"; forced playouts k={r.forced_playouts:g}, global pooling every {r.global_pooling or '-'}, "
            f"full searches {r.full_search_prob:g}: {r.moves_per_s:,.1f} moves/s, {r.recorded_per_s:,.1f} recorded "
            f"positions/s{ratio}")
