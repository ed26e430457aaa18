"""``hopzero play``: a person against players in the terminal (``hopzero.play``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from learner.players import parse_spec

from .args import CliError, add_preset, seed_arg


def add_parser(sub: Any) -> None:
    p = sub.add_parser("play", help="play against a player in the terminal")
    add_preset(p)
    p.add_argument("--player", default="greedy", metavar="SPEC", help="your opponent (default greedy)")
    p.add_argument("--side", choices=("x", "o", "0", "1", "2", "3", "4", "5"), default="x",
                   help="x (player 0) moves first, from the bottom (the star: from the top), o is player 1; "
                   "on the star of 3, 4 or 6 players, a player number (default x)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="the opponent's seed (default 0)")
    p.add_argument("--color", action="store_true", help="colour the board (default: only on a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ccengine.render import use_color
    from hopzero.play import play_terminal

    side = "xo".index(args.side) if args.side in ("x", "o") else int(args.side)
    if side >= args.preset.players:
        raise CliError(f"--side {args.side}: the {args.preset.name} game seats players 0..{args.preset.players - 1}")
    parse_spec(args.player)  # a bad SPEC fails before the board is drawn
    play_terminal(
        args.preset,
        args.player,
        human_side=side,
        seed=args.seed,
        out=sys.stdout,
        color=args.color or use_color(sys.stdout),
    )
    return 0
