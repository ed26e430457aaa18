"""``hopzero move``: the move a player SPEC chooses in a position, ``{"move": [s, e]}``."""

from __future__ import annotations

import argparse
from typing import Any

from learner.players import make_player

from .args import CliError, add_engine, add_json, add_position, add_preset, emit, seed_arg, state_from_args


def add_parser(sub: Any) -> None:
    p = sub.add_parser("move", help="the move a player chooses in a position")
    add_preset(p)
    add_position(p, required=True)
    p.add_argument("--player", required=True, metavar="SPEC", help="player SPEC, e.g. greedy")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="the player's seed (default 0)")
    add_engine(p)
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    player = make_player(args.player, args.preset, args.seed)  # a bad SPEC fails before any work
    state = state_from_args(args, args.engine)
    if state.is_terminal():
        raise CliError(f"the game is over in this position (scores {state.scores()}); there is no move to choose")
    s, e = player.select(state)
    emit(args, {"move": [int(s), int(e)]}, "pass" if (s, e) == (-1, -1) else f"{s}-{e}")
    return 0
