"""``hopzero td-train``: a linear evaluation learned by TD(lambda) against a player (Li 2016)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from learner.players import parse_spec

from .args import CliError, add_json, add_preset, emit, int_arg, seed_arg


def add_parser(sub: Any) -> None:
    p = sub.add_parser("td-train", help="learn a linear evaluation by TD(lambda) against greedy (Li 2016)")
    add_preset(p)
    p.add_argument("--episodes", type=int_arg(1, 1_000_000), default=800, metavar="N",
                   help="games against the opponent (default 800, the report's)")
    p.add_argument("--alpha", type=float, default=0.02, metavar="A", help="step size (default 0.02)")
    p.add_argument("--lam", type=float, default=0.7, metavar="L", help="trace decay lambda (default 0.7)")
    p.add_argument("--epsilon", type=float, default=0.0, metavar="E", help="random-move share (default 0)")
    p.add_argument("--opponent", default="greedy", metavar="SPEC", help="who it learns against (default greedy)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="seed (default 0)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="where weights.json (for alphabeta:eval=linear,weights=DIR/weights.json), curve.jsonl and "
                        "curve.png go")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ccengine.alphabeta import weights_document
    from hopzero.plots import write_td_curve
    from learner.records import versions_now
    from plumbing.run_files import atomic_write_text
    from learner.td_learning import TDConfig, train_td

    try:
        config = TDConfig(episodes=args.episodes, alpha=args.alpha, lam=args.lam, epsilon=args.epsilon,
                          opponent=args.opponent)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    parse_spec(args.opponent)  # a bad SPEC fails before any game
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()

    def progress(episode: int, result: int) -> None:
        if not args.json and (episode + 1) % max(1, args.episodes // 10) == 0:
            sys.stderr.write(f"episode {episode + 1}/{args.episodes}\n")

    result = train_td(args.preset, config, seed=args.seed, on_episode=progress)
    trained = {"method": "TD(lambda) on the positions after the learner's moves", **dataclasses.asdict(config),
               "seed": args.seed, "seconds": round(time.perf_counter() - start, 2)}
    doc = weights_document(args.preset, result.weights, trained, versions_now())
    atomic_write_text(out / "weights.json", json.dumps(doc, indent=1) + "\n")
    curve = result.curve()
    atomic_write_text(out / "curve.jsonl", "".join(
        json.dumps({"episode": i + 1, "result": r, "last100": round(c, 4)}) + "\n"
        for i, (r, c) in enumerate(zip(result.results, curve))))
    write_td_curve(out / "curve.png", curve, args.preset.name, config.opponent)
    data = {"out": str(out), "weights": result.weights, "last100": curve[-1], "episodes": args.episodes,
            "seconds": trained["seconds"]}
    emit(args, data, f"{args.episodes} episodes in {trained['seconds']} s; score over the last 100: "
                      f"{100 * curve[-1]:.1f}% (one-ply play); wrote {out / 'weights.json'}, curve.jsonl, curve.png; "
                      f"play it as alphabeta:depth=3,eval=linear,weights={out / 'weights.json'}")
    return 0
