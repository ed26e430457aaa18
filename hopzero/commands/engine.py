"""``hopzero engine``: the CCP engine protocol on stdin/stdout (``hopzero.ccp``, docs/PROTOCOL.md)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from hopzero.ccp import DEFAULT_MAX_MOVETIME_MS, DEFAULT_MAX_NODES, MOVETIME_CEILING_MS, NODES_CEILING

from .args import add_preset, int_arg, seed_arg


def add_parser(sub: Any) -> None:
    p = sub.add_parser("engine", help="speak the CCP engine protocol on stdin/stdout (docs/PROTOCOL.md)")
    add_preset(p)
    p.add_argument("--player", default="greedy", metavar="SPEC", help="the player that thinks (default greedy)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="the player's seed (default 0)")
    p.add_argument("--max-nodes", type=int_arg(1, NODES_CEILING), default=DEFAULT_MAX_NODES, metavar="N",
                   help=f"cap on 'go nodes' (default {DEFAULT_MAX_NODES})")
    p.add_argument("--max-movetime-ms", type=int_arg(1, MOVETIME_CEILING_MS), default=DEFAULT_MAX_MOVETIME_MS,
                   metavar="MS", help=f"cap on 'go movetime' in milliseconds (default {DEFAULT_MAX_MOVETIME_MS})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from hopzero.ccp import Limits, serve

    limits = Limits(max_nodes=args.max_nodes, max_movetime_ms=args.max_movetime_ms)
    try:
        return serve(args.preset, args.player, args.seed, sys.stdin.buffer, sys.stdout, limits)
    except BrokenPipeError:  # the referee closed our output: nobody is left to answer
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
