"""The ``hopzero`` command line: argparse sub-parsers, one module per command in
``hopzero.commands`` (``--json`` prints one JSON object on stdout; other tools read these shapes):

- ``perft``: move-tree leaf counts, ``{"preset", "perft": [n1..nD]}`` (+ ``"divide"``).
- ``match``: a match between two to six player SPECs under the seed's protocol (``evaluator.arena``).
- ``move``: the move a player SPEC chooses in a position, ``{"move": [s, e]}``.
- ``bench WHAT``: a speed benchmark, one module each in ``hopzero.bench`` (``hopzero bench --help``).
- ``train``: the whole training system (``hopzero.train``).
- ``play``: a person against players in the terminal (``hopzero.play``).
- ``engine``: the CCP engine protocol on stdin/stdout (``hopzero.ccp``, docs/PROTOCOL.md).
- ``dashboard build|render``: the Grafana dashboard JSON, or a PNG of its panels from Prometheus.
- ``serve``: play, analyse and watch runs in a browser (``hopzero.web``, docs/WEB.md).
- ``tournament``: a round robin rated on one ladder (``evaluator.tournament``).
- ``td-train``: a linear evaluation learned by TD(lambda) (``learner.td_learning``).
- ``export``: a model as ONNX.

Adding a command: a module in ``hopzero.commands`` with ``add_parser(subparsers)``, listed in
``hopzero.commands.COMMANDS``. A mistake in the arguments (unknown preset or player, malformed
position, illegal move, bad number) exits with status 2 and one line on stderr that says what is
wrong and what is valid, never a traceback.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence

# A Ctrl-C stops every command from its first instant, also one started with SIGINT ignored (a
# `&` in a script): Python's own handler, set before the slow imports below (torch, Ray).
signal.signal(signal.SIGINT, signal.default_int_handler)

from hopzero.commands import COMMANDS
from hopzero.commands.args import EXIT_USAGE, CliError, Parser, user_errors

__all__ = ["CliError", "build_parser", "main"]


def build_parser() -> Parser:
    """The full parser (exposed for tests and for documentation)."""
    parser = Parser(prog="hopzero", description="AlphaZero-style Chinese Checkers (see README.md)")
    from hopzero import __version__

    parser.add_argument("--version", action="version", version=f"hopzero {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (0 ok, 1 failed check, 2 bad arguments)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"hopzero {args.command}" + (f" {args.what}" if getattr(args, "what", None) else "")
    try:
        return int(args.func(args))
    except user_errors() as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        return EXIT_USAGE
    except OSError as exc:  # a file named in the arguments (positions, model) cannot be read
        sys.stderr.write(f"{prog}: error: {exc.strerror or exc}: {exc.filename or ''}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
