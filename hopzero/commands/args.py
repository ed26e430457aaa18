"""What the commands share: the one-line errors, the checked argument types, the common options
(``--preset``, ``--engine``, ``--json``, ``--position``/``--moves``) and printing a result.

Every number is read by ``ccengine.notation.parse_int`` (ASCII digits, within a range:
``int_arg(minimum, maximum)``; the bounds are the constants below) or ``parse_positive_float``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from ccengine.engines import ENGINES, EngineError, new_state
from ccengine.notation import NotationError, parse_int, parse_move, parse_position, parse_positive_float
from ccengine.players import PlayerSpecError
from ccengine.reference import IllegalMoveError
from ccengine.rules import Rules, RulesError, preset, presets_text

__all__ = [
    "BENCH_INT_MAX",
    "EXIT_USAGE",
    "INT_ARG_MAX",
    "MATCH_MAX_GAMES",
    "MAX_PARALLEL",
    "MAX_RANDOM_OPENING",
    "MAX_WORKERS",
    "SEED_MAX",
    "CliError",
    "Parser",
    "add_engine",
    "add_json",
    "add_position",
    "add_preset",
    "emit",
    "float_arg",
    "int_arg",
    "preset_arg",
    "seed_arg",
    "state_from_args",
    "user_errors",
]

EXIT_USAGE = 2

#: The default upper bound of an integer argument: what a C ``int`` holds, so no count reaches
#: the compiled engine or search as an overflow.
INT_ARG_MAX = 2**31 - 1
#: Seeds: what every numpy generator accepts (the legacy ones stop at 2**32 - 1).
SEED_MAX = 2**32 - 1
#: A match: games, processes, games in flight, random opening plies.
MATCH_MAX_GAMES = 1_000_000
MAX_WORKERS = 256
MAX_PARALLEL = 4096
MAX_RANDOM_OPENING = 1000
#: Every count of a benchmark (games, simulations, steps, positions, threads).
BENCH_INT_MAX = 100_000


class CliError(Exception):
    """A user mistake, reported as one line on stderr with exit status 2."""


def user_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean "the arguments are wrong", not "hopzero has a bug"."""
    return (CliError, RulesError, NotationError, IllegalMoveError, PlayerSpecError, EngineError)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (argparse prints the usage block by default)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(EXIT_USAGE)


# ---------------------------------------------------------------------------------------------
# Argument types (argparse turns ArgumentTypeError into its one-line error)
# ---------------------------------------------------------------------------------------------


def preset_arg(name: str) -> Rules:
    try:
        return preset(name)
    except RulesError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def int_arg(minimum: int, maximum: int = INT_ARG_MAX) -> Callable[[str], int]:
    """An argparse type: an integer in ``minimum..maximum``, ASCII digits only."""

    def parse(text: str) -> int:
        try:
            return parse_int(text, "", minimum=minimum, maximum=maximum)
        except NotationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = f"integer in {minimum}..{maximum}"
    return parse


def seed_arg(text: str) -> int:
    """An argparse type for ``--seed``: ``0..SEED_MAX``."""
    return int_arg(0, SEED_MAX)(text)


def float_arg(text: str, maximum: float = 1e6) -> float:
    """An argparse type: a positive finite number (``nan``, ``inf`` and signs refused)."""
    try:
        return parse_positive_float(text, "", maximum=maximum)
    except NotationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# Common options
# ---------------------------------------------------------------------------------------------


def add_preset(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", type=preset_arg, default=preset("cc49"), metavar="P",
                   help=f"the game (default cc49): {presets_text()}")


def add_engine(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=ENGINES, default="cython", help="game engine (default: cython)")


def add_seating(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seating", choices=("rotations", "permutations"), default="rotations",
                   help="how a set of games seats the players: every rotation (N games, the default) or every "
                        "order (N! games; the same two games for two players)")


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def add_position(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument(
        "--position",
        metavar="POS",
        required=required,
        help="position text, e.g. '..oo/...o/x.../xx.. x 0' (default: the start)" if not required else "position text",
    )
    p.add_argument(
        "--moves",
        metavar="S-E,...",
        default="",
        help="moves to play from the position first, e.g. '36-29,12-19' ('pass' for a pass)",
    )


# ---------------------------------------------------------------------------------------------
# Positions and output
# ---------------------------------------------------------------------------------------------


def emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    """Print ``data`` as one JSON object (``--json``), else ``text``."""
    print(json.dumps(data) if args.json else text)


def state_from_args(args: argparse.Namespace, engine: str) -> Any:
    """The state given by ``--preset``, ``--position`` and ``--moves``."""
    rules: Rules = args.preset
    position = parse_position(rules, args.position) if args.position else None
    state = new_state(rules, position, engine)
    for item in filter(None, (m.strip() for m in args.moves.split(","))):
        move = parse_move(rules, item)
        if state.is_terminal():
            raise CliError(f"move {item!r}: the game is already over (scores {state.scores()})")
        legal = state.legal_moves()
        if move not in legal:
            shown = ", ".join(f"{s}-{e}" for s, e in legal[:12]) + (", ..." if len(legal) > 12 else "")
            raise CliError(f"move {item!r} is not legal at ply {state.ply}; legal: {shown}")
        state.play(move)
    return state
