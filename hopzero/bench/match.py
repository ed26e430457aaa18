"""``hopzero bench match``: match speed with games in flight against one game at a time.

Two untrained networks of ``--size`` (different initial weights) play each other with
``--sims`` simulations per move:

- ``one-at-a-time``: :func:`evaluator.arena.play_match` with ``parallel=1``, ``--serial-games``
  games: one position per network call;
- ``batched``: the same runner with ``--parallel`` games in flight, ``--games`` games: the waiting
  games of each side are searched together, one network call per simulation round.

For each: network evaluations per second (leaves evaluated), searches per second, games per
minute and the mean evaluator batch. Game ``i`` is the same game in both modes (the runner seeds
each game by its index), so their first games agree up to float rounding between batch sizes.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, Report, device_arg

__all__ = ["NAME", "SUMMARY", "add_arguments", "run"]

NAME = "match"
SUMMARY = "match speed: games in flight, batched, against one game at a time"


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--size``, ``--encoding``, ``--sims``, ``--games``, ``--parallel``, ``--serial-games``,
    ``--threads``, ``--device``."""
    from learner.model import SIZES

    p.add_argument("--size", choices=sorted(SIZES), default="paper", help="network size (default paper)")
    p.add_argument("--encoding", choices=("general", "paper"), default="general", help="input (default general)")
    p.add_argument("--sims", type=kit.int_at_least(1), default=175, metavar="S", help="simulations per move (175)")
    p.add_argument("--games", type=kit.int_at_least(1), default=32, metavar="G", help="batched games (default 32)")
    p.add_argument("--parallel", type=kit.int_at_least(1), default=32, metavar="P",
                   help="games in flight in the batched mode (default 32)")
    p.add_argument("--serial-games", type=kit.int_at_least(1), default=2, metavar="G",
                   help="games played one at a time (default 2)")
    p.add_argument("--threads", type=kit.int_at_least(1), default=1, metavar="T", help="torch CPU threads (default 1)")
    p.add_argument("--device", type=device_arg, default="cpu", help="auto, cpu, cuda, cuda:N (default cpu)")


def _mode(name: str, rules: Rules, sides: list[Any], *, games: int, parallel: int, seed: int) -> dict[str, Any]:
    from evaluator.arena import play_match

    before = [(s.positions, s.batches, s.searches) for s in sides]
    t = time.perf_counter()
    result = play_match(rules, sides[0], sides[1], games=games, seed=seed, parallel=parallel)
    seconds = time.perf_counter() - t
    evals, calls, searches = (sum(s.positions for s in sides) - sum(b[0] for b in before),
                              sum(s.batches for s in sides) - sum(b[1] for b in before),
                              sum(s.searches for s in sides) - sum(b[2] for b in before))
    return {
        "mode": name, "parallel": parallel, "games": result.games, "seconds": round(seconds, 2), "evals": evals,
        "evals_per_s": round(evals / seconds, 1), "searches_per_s": round(searches / seconds, 2),
        "games_per_min": round(60 * result.games / seconds, 3), "mean_batch": round(evals / calls, 2) if calls else None,
        "mean_plies": round(result.mean_plies, 1), "a_results": list(result.a_results),
    }


def run(args: argparse.Namespace) -> Report:
    """The command: both modes on the same two networks."""
    import torch

    from ccengine.encoding import encoding_for
    from ccengine.search import SearchConfig
    from learner.model import NetConfig, PolicyValueNet
    from learner.network_player import network_player_from_weights

    rules: Rules = args.preset
    torch.set_num_threads(args.threads)
    enc = encoding_for(rules, args.encoding)
    config = NetConfig.for_rules(rules, enc.in_planes, args.size)
    torch.manual_seed(args.seed)
    nets = [PolicyValueNet(config), PolicyValueNet(config)]
    sides = [network_player_from_weights(rules, net, encoding=enc.name, sims=args.sims, c_puct=SearchConfig().c_puct,
                                         device=args.device) for net in nets]
    torch.set_num_threads(args.threads)  # building a network player sets one thread
    modes = [
        _mode("one-at-a-time", rules, sides, games=args.serial_games, parallel=1, seed=args.seed),
        _mode("batched", rules, sides, games=args.games, parallel=args.parallel, seed=args.seed),
    ]
    serial, batched = modes
    data = {
        "preset": rules.name, "size": args.size, "encoding": enc.name, "sims": args.sims, "threads": args.threads,
        "device": args.device, "parameters": nets[0].num_parameters(), "modes": modes,
        "speedup": round(batched["evals_per_s"] / serial["evals_per_s"], 2),
    }
    lines = [f"{rules.name}/{args.size} networks ({data['parameters']:,} parameters), {args.sims} simulations a move:"]
    lines += [f"  {m['mode']:>13} (parallel {m['parallel']:3d}): {m['evals_per_s']:10,.0f} evaluations/s  "
              f"{m['games_per_min']:7.2f} games/min  mean batch {m['mean_batch']}" for m in modes]
    lines.append(f"  batched / one at a time: {data['speedup']}x")
    return Report(data, "\n".join(lines))
