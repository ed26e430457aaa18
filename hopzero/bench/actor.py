"""``hopzero bench actor``: the self-play actor's worker, simulations per second and where the
time goes (the search in C, the network, the rest).

One :class:`~actors.selfplay.SelfPlayWorker` (one CPU thread, as an actor runs it) with an
untrained network of ``--size``: the random-opening steps run first (no search), then ``--steps``
steps are timed, each one move in every game. Unlike ``hopzero bench selfplay`` (the search and
the network alone), this is the actor as deployed: input history, game records, weights by
version. ``--opponent`` seats an outside player (e.g. ``greedy``) at ``--opponent-seats`` seats
of every game, as ``selfplay.opponent`` does; its moves come before each step's search and are
counted apart from the network's.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, BenchError, Report, add_backend_argument

__all__ = ["NAME", "SUMMARY", "ActorBench", "add_arguments", "bench_actor", "run"]

NAME = "actor"
SUMMARY = "the self-play actor's worker: simulations/s, and search, network and other time"


@dataclass(frozen=True)
class ActorBench:
    """One run; the ``*_s`` times are seconds within ``wall_s``, ``records`` finished games."""

    preset: str
    games: int
    sims: int
    steps: int
    size: str
    encoding: str
    history: int
    backend: str
    eval_cache: int
    cache_hit_rate: float
    leaves_per_game: int
    opponent: str
    opponent_seats: int
    torch_threads: int
    wall_s: float
    records: int
    simulations_per_s: float
    evaluations_per_s: float
    mean_batch: float
    search_s: float
    network_s: float
    other_s: float
    moves_per_s: float
    opponent_moves_per_s: float


def bench_actor(
    rules: Rules,
    *,
    games: int = 64,
    sims: int = 175,
    steps: int = 10,
    size: str = "fast",
    encoding: str = "general",
    history: int = 3,
    seed: int = 0,
    backend: str = "auto",
    eval_cache: int = 0,
    leaves_per_game: int = 1,
    opponent: str = "",
    opponent_seats: int = 1,
) -> ActorBench:
    """Time ``steps`` worker steps after the random opening (and one warm-up step, which a
    ``compile`` backend spends compiling)."""
    import torch

    from actors.selfplay import SelfPlayWorker
    from ccengine.encoding import encoding_for
    from ccengine.search import SearchConfig
    from learner.model import NetConfig, PolicyValueNet

    enc = encoding_for(rules, encoding, history=history)
    net = NetConfig.for_rules(rules, enc.in_planes, size)
    config = SearchConfig(num_simulations=sims, leaves_per_game=leaves_per_game)
    worker = SelfPlayWorker(rules, games=games, search=config, net_config=net, encoding=encoding,
                            history=history, run_id="bench", config_hash="bench", actor="bench", seed=seed,
                            backend=backend, eval_cache=eval_cache, opponent=opponent,
                            opponent_fraction=1.0 if opponent else 0.0, opponent_seats=opponent_seats)
    torch.manual_seed(seed)
    worker.set_weights(0, {k: v.numpy() for k, v in PolicyValueNet(net).state_dict().items()})
    for _ in range(config.random_opening_plies + 1):  # the opening, and a warm-up step
        worker.step()
    before = worker.stats()
    t0 = time.perf_counter()
    records = 0
    for _ in range(steps):
        records += len(worker.step())
    wall = time.perf_counter() - t0
    after = worker.stats()
    d = {k: after[k] - before[k] for k in ("simulations", "evaluator_rows", "evaluator_calls", "search_s",
                                          "network_s", "step_s", "moves", "opponent_moves")}
    return ActorBench(
        preset=rules.name, games=games, sims=sims, steps=steps, size=size, encoding=encoding, history=history,
        backend=worker.network.inference.backend, eval_cache=eval_cache,
        cache_hit_rate=round(after["eval_cache_hit_rate"], 4), leaves_per_game=leaves_per_game,
        opponent=opponent, opponent_seats=opponent_seats if opponent else 0, torch_threads=torch.get_num_threads(),
        wall_s=round(wall, 3), records=records,
        simulations_per_s=round(d["simulations"] / wall, 1),
        evaluations_per_s=round(d["evaluator_rows"] / wall, 1),
        mean_batch=round(d["evaluator_rows"] / max(1, d["evaluator_calls"]), 2),
        search_s=round(d["search_s"], 3), network_s=round(d["network_s"], 3),
        other_s=round(d["step_s"] - d["search_s"] - d["network_s"], 3),
        moves_per_s=round((d["moves"] - d["opponent_moves"]) / wall, 1),
        opponent_moves_per_s=round(d["opponent_moves"] / wall, 1),
    )


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--games``, ``--sims``, ``--steps``, ``--size``, ``--encoding``, ``--history``,
    ``--leaves-per-game``, ``--backend``, ``--cache``, ``--opponent``, ``--opponent-seats``."""
    from learner.model import SIZES

    p.add_argument("--games", type=kit.int_at_least(1), default=64, metavar="G", help="concurrent games (default 64)")
    p.add_argument("--sims", type=kit.int_at_least(1), default=175, metavar="S", help="simulations per move (default 175)")
    p.add_argument("--steps", type=kit.int_at_least(1), default=10, metavar="N", help="timed steps (default 10)")
    p.add_argument("--size", choices=sorted(SIZES), default="fast", help="network size (default fast)")
    p.add_argument("--encoding", choices=("paper", "general"), default="general", help="network input (default general)")
    p.add_argument("--history", type=kit.int_at_least(1), default=3, metavar="H",
                   help="positions of input history, general encoding (default 3)")
    p.add_argument("--leaves-per-game", type=kit.int_at_least(1), default=1, metavar="L",
                   help="leaves per game per network call (default 1)")
    add_backend_argument(p)
    p.add_argument("--cache", type=kit.int_at_least(0), default=0, metavar="N",
                   help="evaluation-cache positions, 0 = none (default 0, as self-play)")
    p.add_argument("--opponent", default="", metavar="SPEC",
                   help="an outside player without a network (e.g. greedy) at --opponent-seats seats of every game")
    p.add_argument("--opponent-seats", type=kit.int_at_least(1), default=1, metavar="K",
                   help="seats of the outside player per game (default 1)")


def run(args: argparse.Namespace) -> Report:
    """The command."""
    if args.opponent and args.opponent_seats >= args.preset.players:
        raise BenchError(f"--opponent-seats {args.opponent_seats} leaves the network no seat: "
                         f"{args.preset.name} seats {args.preset.players} players")
    r = bench_actor(args.preset, games=args.games, sims=args.sims, steps=args.steps, size=args.size,
                    encoding=args.encoding, history=args.history, seed=args.seed, backend=args.backend,
                    eval_cache=args.cache, leaves_per_game=args.leaves_per_game, opponent=args.opponent,
                    opponent_seats=args.opponent_seats)
    text = (
        f"{r.simulations_per_s:,.0f} simulations/s ({r.games} games, {r.size} network, {r.torch_threads} thread(s), "
        f"mean batch {r.mean_batch:.0f}); of {r.wall_s:.2f} s: search {r.search_s:.2f} s, network "
        f"{r.network_s:.2f} s, other {r.other_s:.2f} s; {r.moves_per_s:,.1f} network moves/s"
        + (f", {r.opponent_moves_per_s:,.1f} {r.opponent} moves/s" if r.opponent else "")
        + f"; {r.records} games finished"
    )
    return Report(asdict(r), text)
