"""``hopzero dashboard build|render``: the Grafana dashboard JSON, or a PNG of its panels drawn
from Prometheus (``hopzero.dashboard``)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .args import CliError, Parser, float_arg


def add_parser(sub: Any) -> None:
    p = sub.add_parser("dashboard", help="the Grafana dashboard: build its JSON, or render its panels to a PNG")
    what = p.add_subparsers(dest="what", metavar="WHAT", parser_class=Parser)
    what.required = True
    b = what.add_parser("build", help="print the dashboard JSON (deploy/grafana/dashboards/hopzero.json)")
    b.add_argument("--out", metavar="FILE", help="write it to FILE instead of stdout")
    b.set_defaults(func=run_build)
    r = what.add_parser("render", help="draw the dashboard's panels from Prometheus' data into a PNG")
    r.add_argument("--prometheus", metavar="URL", default="http://127.0.0.1:9090",
                   help="Prometheus' address (default http://127.0.0.1:9090)")
    r.add_argument("--out", metavar="FILE", default="dashboard.png", help="the PNG (default dashboard.png)")
    r.add_argument("--minutes", type=float_arg, default=60.0, metavar="M", help="time range up to now (default 60)")
    r.set_defaults(func=run_render)


def run_build(args: argparse.Namespace) -> int:
    from hopzero.dashboard import dashboard_json

    text = dashboard_json()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def run_render(args: argparse.Namespace) -> int:
    import urllib.error

    from hopzero.dashboard import render

    end = time.time()
    try:
        print(render(args.prometheus, args.out, start=end - 60 * args.minutes, end=end))
    except urllib.error.URLError as exc:
        raise CliError(f"cannot query Prometheus at {args.prometheus}: {exc.reason}") from None
    return 0
