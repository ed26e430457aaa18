"""``hopzero endgames``: how often each player finishes won star endgames (``evaluator.endgames``):
built positions, each played once with every player on the seat that is far ahead."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ccengine.rules import preset

from .args import MAX_PARALLEL, CliError, add_json, emit, int_arg, preset_arg, seed_arg

#: Most positions one command builds (each is played once per player).
MAX_POSITIONS = 10_000


def add_parser(sub: Any) -> None:
    p = sub.add_parser("endgames", help="how often players finish won star endgames (a goal to fill, a race to end)")
    p.add_argument("--preset", type=preset_arg, default=preset("star2"), metavar="P",
                   help="a star preset (default star2): star2, star3, star4, star6")
    p.add_argument("--players", nargs="+", metavar="SPEC", required=True,
                   help="one SPEC per seat of the preset; each plays every position from the seat that is ahead")
    p.add_argument("--family", choices=("parked", "race"), default="parked",
                   help="parked: the opponent's pieces left in the goal; race: a race far ahead (default parked)")
    p.add_argument("--positions", type=int_arg(1, MAX_POSITIONS), default=50, metavar="N",
                   help="positions built (default 50)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="the positions' and players' seed (default 0)")
    p.add_argument("--parallel", type=int_arg(1, MAX_PARALLEL), default=1, metavar="P",
                   help="games in flight, mcts searches batched (default 1)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evaluator.endgames import convert_endgames  # deferred: the other commands need none of it

    rules = args.preset
    if not rules.is_star:
        raise CliError(f"--preset {rules.name}: won endgames are built on the star (star2, star3, star4, star6)")
    if len(args.players) != rules.players:
        raise CliError(f"--players: {rules.name} seats {rules.players} players, {len(args.players)} SPECs were given")
    start = time.perf_counter()
    _, records = convert_endgames(rules, *args.players, family=args.family, positions=args.positions,
                                  seed=args.seed, parallel=args.parallel)
    elapsed = time.perf_counter() - start
    data = {"preset": rules.name, "family": args.family, "positions": args.positions, "seed": args.seed,
            "players": [r.to_dict() for r in records], "elapsed_s": round(elapsed, 3)}
    emit(args, data, _text(rules.name, args.family, args.positions, args.seed, records, elapsed))
    return 0


def _text(preset: str, family: str, positions: int, seed: int, records: list[Any], elapsed: float) -> str:
    width = max(len(r.player) for r in records)
    lines = [f"{positions} won {family} endgames on {preset}, seed {seed}: games won from the seat that is ahead"]
    for r in records:
        drawn = ", ".join(f"{why} {count}" for why, count in sorted(r.drawn.items())) or "none"
        lines.append(f"  {r.player:<{width}}  won {r.won}/{r.positions} ({100 * r.won / r.positions:5.1f}%)  "
                     f"drawn: {drawn}  lost {r.lost}  mean plies to win {r.mean_plies_to_win:.1f}")
    lines.append(f"  {elapsed:.1f} s")
    return "\n".join(lines)
