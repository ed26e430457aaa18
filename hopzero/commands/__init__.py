"""The ``hopzero`` commands, one module each: ``add_parser(subparsers)`` builds the command's
parser and sets its ``func``; :data:`COMMANDS` lists them in the order ``hopzero --help`` shows."""

from . import (bench, curves, dashboard, endgames, engine, export, match, move, perft, play, serve, td_train,
               tournament, train)

__all__ = ["COMMANDS"]

COMMANDS = (perft, match, move, bench, train, curves, play, engine, dashboard, serve, tournament, endgames, td_train,
            export)
