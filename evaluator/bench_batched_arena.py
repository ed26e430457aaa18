"""Throughput of the batched arena against the one-at-a-time arena, two networks playing.

    python -m evaluator.bench_batched_arena --preset cc49 --size paper --sims 175 \\
        --games 32 --parallel 32 --serial-games 2 --threads 1

Two untrained networks (different initial weights) of ``--size`` play each other:

- ``arena``: :func:`evaluator.arena.play_match` with the players of ``mcts:model=FILE,sims=S``
  SPECs (one game at a time, one position per network call), ``--serial-games`` games;
- ``batched-1``: the same with players built from the weights in memory;
- ``batched``: :func:`play_match` with ``--parallel`` games in flight, ``--games`` games.

Each line reports network evaluations per second (leaves evaluated), moves searched per second,
games per minute and mean evaluator batch size. The games are the same games for the same seed,
so the arena and ``batched-1`` lines should show the same results.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from ccengine.encoding import encoding_for
from ccengine.rules import preset
from ccengine.players import make_player
from ccengine.search import SearchConfig
from evaluator.arena import play_match
from learner.model import NetConfig, PolicyValueNet, save_net
from learner.network_player import network_player_from_weights


def _line(mode: str, result: Any, seconds: float, evals: int, searches: int, calls: int | None) -> dict[str, Any]:
    return {
        "mode": mode,
        "games": result.games,
        "seconds": round(seconds, 2),
        "evals": evals,
        "evals_per_s": round(evals / seconds, 1),
        "searches_per_s": round(searches / seconds, 2),
        "games_per_min": round(60 * result.games / seconds, 3),
        "mean_batch": round(evals / calls, 2) if calls else None,
        "mean_plies": round(result.mean_plies, 1),
        "a_results": list(result.a_results),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="cc49")
    p.add_argument("--size", default="paper")
    p.add_argument("--encoding", default="general")
    p.add_argument("--sims", type=int, default=175)
    p.add_argument("--games", type=int, default=32)
    p.add_argument("--parallel", type=int, default=32)
    p.add_argument("--serial-games", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--modes", default="arena,batched-1,batched")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    rules = preset(args.preset)
    enc = encoding_for(rules, args.encoding)
    config = NetConfig.for_rules(rules, enc.in_planes, args.size)
    torch.manual_seed(args.seed)
    nets = [PolicyValueNet(config), PolicyValueNet(config)]
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, net in enumerate(nets):
            path = Path(tmp) / f"net{i}.pt"
            save_net(net, path, input={"encoding": enc.name, "history": enc.history})
            paths.append(path)
        header = {"preset": args.preset, "size": args.size, "encoding": enc.name, "sims": args.sims,
                  "threads": args.threads, "device": args.device, "parameters": nets[0].num_parameters()}
        print(json.dumps(header), flush=True)
        if "arena" in modes:
            players = [make_player(f"mcts:model={path},sims={args.sims},device={args.device}", rules)
                       for path in paths]
            torch.set_num_threads(args.threads)  # the mcts player set 1 thread
            t = time.perf_counter()
            result = play_match(rules, players[0], players[1], games=args.serial_games, seed=args.seed)
            seconds = time.perf_counter() - t
            print(json.dumps(_line("arena", result, seconds, sum(p.positions for p in players),
                                   sum(p.searches for p in players), sum(p.batches for p in players))), flush=True)
        for mode, games, parallel in (("batched-1", args.serial_games, 1), ("batched", args.games, args.parallel)):
            if mode not in modes:
                continue
            sides = [network_player_from_weights(rules, net, encoding=enc.name, sims=args.sims,
                                                 c_puct=SearchConfig().c_puct, device=args.device)
                     for net in nets]
            t = time.perf_counter()
            result = play_match(rules, sides[0], sides[1], games=games, seed=args.seed, parallel=parallel)
            seconds = time.perf_counter() - t
            evals = sum(s.positions for s in sides)
            calls = sum(s.batches for s in sides)
            searches = sum(s.searches for s in sides)
            print(json.dumps(_line(f"{mode}" if parallel == 1 else f"batched-{parallel}", result, seconds, evals,
                                   searches, calls)), flush=True)


if __name__ == "__main__":
    main()
