"""ccengine: the Chinese Checkers rules engine (shared/RULES.md), compiled move generator and search."""

from .notation import NotationError, Position, format_position, parse_move, parse_position, start_position
from .reference import IllegalMoveError, ReferenceState
from .rules import PASS, PRESET_NAMES, Rules, RulesError, preset

__all__ = [
    "PASS",
    "PRESET_NAMES",
    "IllegalMoveError",
    "NotationError",
    "Position",
    "ReferenceState",
    "Rules",
    "RulesError",
    "format_position",
    "parse_move",
    "parse_position",
    "preset",
    "start_position",
]
