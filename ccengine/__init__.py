"""ccengine: the Chinese Checkers rules engine (docs/RULES.md), compiled move generator and search.

The public facade. The compiled core (``ccengine._core``, Cython) is private: reach its state
class through :func:`new_state` / :func:`state_class`, which also name the pure-Python
``reference`` engine kept as the test oracle.
"""

from .alphabeta import AlphaBetaPlayer
from .encoding import ENCODINGS, Encoding, PieceTracker, canonical_ids, encoding_for, policy_size
from .engines import ENGINES, EngineError, new_state, state_class
from .notation import (
    NotationError,
    Position,
    format_compact121,
    format_position,
    format_star_path,
    parse_compact121,
    parse_move,
    parse_position,
    parse_star_path,
    start_position,
)
from .players import Player, PlayerKind, PlayerSpec, PlayerSpecError
from .reference import IllegalMoveError, ReferenceState, move_path
from .render import format_move, parse_human_move, render_board, render_position
from .rules import PASS, PRESET_NAMES, Geometry, Rules, RulesError, StarGeometry, preset
from .search_player import SearchPlayer
from .symmetry import reflect_moves, reflect_planes, reflect_policy, reflect_position

__all__ = [
    "ENCODINGS",
    "ENGINES",
    "PASS",
    "PRESET_NAMES",
    "AlphaBetaPlayer",
    "Encoding",
    "EngineError",
    "Geometry",
    "IllegalMoveError",
    "NotationError",
    "PieceTracker",
    "Player",
    "PlayerKind",
    "PlayerSpec",
    "PlayerSpecError",
    "Position",
    "ReferenceState",
    "SearchPlayer",
    "Rules",
    "RulesError",
    "StarGeometry",
    "canonical_ids",
    "encoding_for",
    "format_compact121",
    "format_move",
    "format_position",
    "format_star_path",
    "move_path",
    "new_state",
    "parse_compact121",
    "parse_human_move",
    "parse_move",
    "parse_position",
    "parse_star_path",
    "policy_size",
    "preset",
    "reflect_moves",
    "reflect_planes",
    "reflect_policy",
    "reflect_position",
    "render_board",
    "render_position",
    "start_position",
    "state_class",
]
