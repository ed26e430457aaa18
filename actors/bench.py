"""Actor throughput: ``python -m actors.bench selfplay|heuristic [options]``.

- ``selfplay``: one :class:`~actors.selfplay.SelfPlayWorker` (one CPU thread) with an untrained
  network of ``--size``; the random-opening steps run first (no search), then ``--steps`` steps
  are timed. Reports simulations per second and where the time went (search in C, network,
  the rest).
- ``heuristic``: one :class:`~actors.heuristic.HeuristicWorker` playing ``--games`` greedy games.

One JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

__all__ = ["bench_heuristic", "bench_selfplay", "main"]


def bench_selfplay(preset_name: str = "cc49", *, games: int = 64, sims: int = 175, steps: int = 10,
                   size: str = "fast", encoding: str = "general", history: int = 3, seed: int = 0,
                   compile: bool = False, leaves_per_game: int = 1) -> dict:
    import torch

    from ccengine import preset
    from ccengine.encoding import encoding_for
    from ccengine.search import SearchConfig
    from learner.model import NetConfig, PolicyValueNet

    from .selfplay import SelfPlayWorker

    rules = preset(preset_name)
    enc = encoding_for(rules, encoding, history=history)
    net = NetConfig.for_rules(rules, enc.in_planes, size)
    config = SearchConfig(num_simulations=sims, leaves_per_game=leaves_per_game)
    worker = SelfPlayWorker(rules, games=games, search=config, net_config=net, encoding=encoding,
                            history=history, run_id="bench", config_hash="bench", actor="bench", seed=seed,
                            compile=compile)
    torch.manual_seed(seed)
    worker.set_weights(0, {k: v.numpy() for k, v in PolicyValueNet(net).state_dict().items()})
    for _ in range(config.random_opening_plies + (1 if compile else 0)):  # opening; compile warm-up
        worker.step()
    before = worker.stats()
    t0 = time.perf_counter()
    records = 0
    for _ in range(steps):
        records += len(worker.step())
    wall = time.perf_counter() - t0
    after = worker.stats()
    d = {k: after[k] - before[k] for k in ("simulations", "evaluator_rows", "evaluator_calls", "search_s",
                                          "network_s", "step_s")}
    return {
        "bench": "selfplay", "preset": preset_name, "games": games, "sims": sims, "steps": steps,
        "size": size, "encoding": encoding, "history": history, "compile": compile,
        "leaves_per_game": leaves_per_game, "torch_threads": torch.get_num_threads(),
        "wall_s": wall, "records": records,
        "simulations_per_s": d["simulations"] / wall,
        "evaluations_per_s": d["evaluator_rows"] / wall,
        "mean_batch": d["evaluator_rows"] / max(1, d["evaluator_calls"]),
        "search_s": d["search_s"], "network_s": d["network_s"],
        "other_s": d["step_s"] - d["search_s"] - d["network_s"],
        "moves_per_s": games * steps / wall,
    }


def bench_heuristic(preset_name: str = "cc49", *, games: int = 2000, seed: int = 0) -> dict:
    from ccengine import preset

    from .heuristic import HeuristicWorker

    worker = HeuristicWorker(preset(preset_name), run_id="bench", config_hash="bench", actor="bench", seed=seed)
    t0 = time.perf_counter()
    records = worker.generate(games)
    wall = time.perf_counter() - t0
    s = worker.stats()
    from learner.records import encode_record

    t1 = time.perf_counter()
    sizes = [len(encode_record(r)) for r in records]
    enc = time.perf_counter() - t1
    return {
        "bench": "heuristic", "preset": preset_name, "games": games, "wall_s": wall,
        "games_per_s": games / wall, "records": len(records), "positions": s["positions"],
        "kept_positions": s["kept_positions"], "mean_plies": s["mean_plies"],
        "draws_discarded": s["draws_discarded"], "record_bytes_mean": float(np.mean(sizes)) if sizes else 0.0,
        "encode_ms_per_record": 1000 * enc / max(1, len(records)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m actors.bench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sp = sub.add_parser("selfplay")
    sp.add_argument("--preset", default="cc49")
    sp.add_argument("--games", type=int, default=64)
    sp.add_argument("--sims", type=int, default=175)
    sp.add_argument("--steps", type=int, default=10)
    sp.add_argument("--size", default="fast")
    sp.add_argument("--encoding", default="general")
    sp.add_argument("--history", type=int, default=3)
    sp.add_argument("--leaves-per-game", type=int, default=1)
    sp.add_argument("--compile", action="store_true")
    sp.add_argument("--seed", type=int, default=0)
    he = sub.add_parser("heuristic")
    he.add_argument("--preset", default="cc49")
    he.add_argument("--games", type=int, default=2000)
    he.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.what == "selfplay":
        out = bench_selfplay(args.preset, games=args.games, sims=args.sims, steps=args.steps, size=args.size,
                             encoding=args.encoding, history=args.history, seed=args.seed, compile=args.compile,
                             leaves_per_game=args.leaves_per_game)
    else:
        out = bench_heuristic(args.preset, games=args.games, seed=args.seed)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
