"""``hopzero serve``: play, analyse and watch runs in a browser (``hopzero.web``, docs/WEB.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .args import CliError, int_arg

#: Caps of ``hopzero serve``: simulations of one search, searches at once.
SERVE_MAX_SIMULATIONS = 100_000
SERVE_MAX_SEARCHES = 64


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="play, analyse and watch training runs in a browser (docs/WEB.md)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 opens it to the network)")
    p.add_argument("--port", type=int_arg(0, 65535), default=8000, metavar="PORT",
                   help="port (default 8000; 0 picks a free one)")
    p.add_argument("--run-dir", dest="run_dirs", action="append", default=[], metavar="DIR",
                   help="a training run directory to watch and play against (repeatable)")
    p.add_argument("--max-sims", type=int_arg(1, SERVE_MAX_SIMULATIONS), default=2000, metavar="N",
                   help="most simulations of one search (default 2000)")
    p.add_argument("--max-searches", type=int_arg(1, SERVE_MAX_SEARCHES), default=2, metavar="N",
                   help="searches running at once over all clients (default 2)")
    p.add_argument("--results", action="append", default=[], metavar="FILE",
                   help="a match results file (`hopzero match --out`) for the Tables view (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from hopzero.web.app import serve
    from hopzero.web.opponents import ChoiceError, Limits

    limits = Limits(max_simulations=args.max_sims, max_searches=args.max_searches)
    try:
        return serve(args.host, args.port, args.run_dirs, limits, out=sys.stdout, results=args.results)
    except ChoiceError as exc:
        raise CliError(str(exc)) from None
