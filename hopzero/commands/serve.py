"""``hopzero serve``: rooms of two to six seats, people and engines, an analysis board, and a run's view
in a browser (``hopzero.web``, docs/WEB.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .args import CliError, float_arg, int_arg

#: Caps of ``hopzero serve``: simulations of one search, searches at once, rooms held in memory.
SERVE_MAX_SIMULATIONS = 100_000
SERVE_MAX_SEARCHES = 64
SERVE_MAX_ROOMS = 10_000


def _keep_days_arg(text: str) -> float:
    """``--keep-days``: 0 (keep forever) or a positive number of days."""
    return 0.0 if text == "0" else float_arg(text, maximum=36_500)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="play (2-6 seats, people and engines, rooms by link), analyse, watch runs "
                                     "in a browser (docs/WEB.md)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 opens it to the network)")
    p.add_argument("--port", type=int_arg(0, 65535), default=8000, metavar="PORT",
                   help="port (default 8000; 0 picks a free one)")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="where games are kept (SQLite; default $XDG_DATA_HOME/hopzero or ~/.local/share/hopzero)")
    p.add_argument("--keep-days", type=_keep_days_arg, default=30.0, metavar="D",
                   help="finished games, and games nobody moved in, are deleted after D days (default 30; 0: never)")
    p.add_argument("--allow-host", dest="allow_hosts", action="append", default=[], metavar="NAME",
                   help="a host name the server answers to besides localhost and IP addresses (repeatable; "
                        "for --host 0.0.0.0 reached by name)")
    p.add_argument("--run-dir", dest="run_dirs", action="append", default=[], metavar="DIR",
                   help="a training run directory to watch and play against (repeatable)")
    p.add_argument("--results", action="append", default=[], metavar="PATH",
                   help="a match results file (`hopzero match --out`) or a tournament's --out directory for the "
                        "Tables view (repeatable)")
    p.add_argument("--max-sims", type=int_arg(1, SERVE_MAX_SIMULATIONS), default=2000, metavar="N",
                   help="most simulations of one search (default 2000)")
    p.add_argument("--max-searches", type=int_arg(1, SERVE_MAX_SEARCHES), default=2, metavar="N",
                   help="analyses running at once over all clients; one more is refused (default 2)")
    p.add_argument("--engine-threads", type=int_arg(1, SERVE_MAX_SEARCHES), default=1, metavar="N",
                   help="threads playing the engine seats of every room (default 1)")
    p.add_argument("--max-rooms", type=int_arg(1, SERVE_MAX_ROOMS), default=64, metavar="N",
                   help="games held in memory; others wait in the database (default 64)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from hopzero.web.app import default_data_dir, serve
    from hopzero.web.limits import ChoiceError, Limits
    from hopzero.web.store import StoreError

    limits = Limits(max_simulations=args.max_sims, max_searches=args.max_searches, engine_threads=args.engine_threads,
                    max_rooms=args.max_rooms, keep_days=args.keep_days)
    try:
        return serve(args.host, args.port, data_dir=args.data or default_data_dir(), limits=limits, out=sys.stdout,
                     run_dirs=args.run_dirs, results=args.results, allowed_hosts=args.allow_hosts)
    except (ChoiceError, StoreError) as exc:
        raise CliError(str(exc)) from None
