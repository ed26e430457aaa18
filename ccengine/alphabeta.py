"""The classical baseline: ``alphabeta:depth=D``, an alpha-beta search in C (``ccengine._alphabeta``).

Negamax with alpha-beta, principal variation search, iterative deepening to ``depth`` plies, a
transposition table, moves ordered by the table's move and then by forward distance (greedy's
order), and a distance evaluation (docs/ARCHITECTURE.md "alphabeta"). It plays every preset, the
star with its draw by repetition (docs/RULES.md "Repetition in the search"), and three, four or
six players by paranoid search (the player to move maximises, the others minimise its score; the
evaluation measures it against the leading opponent; ``eval=linear`` is two-player only).
Deterministic: the same position and game history give the same move, whatever came before.

Options of the SPEC: ``depth`` (1..12, default 3), ``eval`` (``distance``, the default;
``advance``: the bare difference of the players' total advance; ``linear``: learned weights over
board features, read from ``weights=PATH``), ``tt`` (the transposition table's size as a power
of two, 10..26, default 18), ``opponents`` (three or more players: ``paranoid``, the default, or
``still``: the searcher plans ``depth`` moves of its own in a row while the others stand still,
a race plan; see ``ccengine._alphabeta``).

A weights file (``linear``) is JSON, never pickle: ``{"format": "hopzero.linear-eval/1",
"preset", "features": [the names of FEATURES, in order], "weights": [one number each],
"trained": {how}, "versions": {...}}``; :func:`read_weights` checks every field.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

from .notation import parse_int
from .players import PlayerKind, SeedLike
from .rules import PASS, Rules

__all__ = [
    "ALPHABETA",
    "DEFAULT_DEPTH",
    "WEIGHTS_FORMAT",
    "AlphaBetaPlayer",
    "SearchOutcome",
    "read_weights",
    "weights_document",
]

Move = tuple[int, int]
#: Depth of ``alphabeta`` without ``depth=``.
DEFAULT_DEPTH = 3
#: Format tag of a ``linear`` evaluation's weights file.
WEIGHTS_FORMAT = "hopzero.linear-eval/1"
#: The largest weights file read.
MAX_WEIGHTS_BYTES = 1 << 20
#: Evaluation units squashed to a value in (-1, 1) by ``tanh(score / VALUE_SCALE)`` for ``analyze``
#: (16 units are one row of advance under the ``distance`` evaluation).
VALUE_SCALE = 400.0


class SearchOutcome(tuple):
    """``(move, score, nodes)`` of one search (a plain tuple with names)."""

    __slots__ = ()

    @property
    def move(self) -> Move:
        return self[0]

    @property
    def score(self) -> int:
        return self[1]

    @property
    def nodes(self) -> int:
        return self[2]


class AlphaBetaPlayer:
    """``alphabeta:depth=D``: the best move of a depth-D alpha-beta search (see the module)."""

    judges_positions = True

    def __init__(
        self,
        rules: Rules,
        seed: SeedLike = None,
        *,
        depth: int = DEFAULT_DEPTH,
        eval: str = "distance",
        weights: str | list[float] | None = None,
        tt: int = 18,
        opponents: str = "paranoid",
    ) -> None:
        """``weights``: the ``linear`` evaluation's, a file (:func:`read_weights`) or the numbers."""
        from ._alphabeta import EVALUATIONS, MAX_DEPTH, AlphaBetaSearch
        from ._core import State, tables_for

        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"depth={depth} must be in 1..{MAX_DEPTH}")
        if eval not in EVALUATIONS:
            raise ValueError(f"eval={eval!r} is unknown; valid: {', '.join(EVALUATIONS)}")
        if (eval == "linear") != (weights is not None):
            raise ValueError("weights=PATH goes with eval=linear, and eval=linear needs it")
        if isinstance(weights, str):
            weights = read_weights(weights, rules)
        self.rules = rules
        self.name = "alphabeta"
        self.depth = depth
        self._tables = tables_for(rules)
        self._state_class = State
        self._search = AlphaBetaSearch(
            self._tables, tt_bits=tt, evaluation=eval, weights=weights, opponents=opponents
        )
        #: Nodes searched over the player's life (for throughput figures).
        self.nodes = 0
        self.searches = 0

    def reset(self, seed: SeedLike = None) -> None:
        """A new game: nothing to forget (each search starts afresh; the seed is not used)."""

    def features(self, state: Any) -> list[list[float]]:
        """Both players' board features in ``state`` (``FEATURES``; the ``linear`` evaluation's
        inputs): ``[player 0's, player 1's]``."""
        return self._search.features(self._compiled(state)[0])

    def think(self, state: Any, depth: int | None = None) -> SearchOutcome:
        """Search ``state`` (either engine's, not finished) to ``depth`` (the player's by default)."""
        root, history = self._compiled(state)
        move, score, nodes = self._search.search(root, self.depth if depth is None else depth, history)
        self.nodes += nodes
        self.searches += 1
        return SearchOutcome((PASS if move[0] < 0 else move, score, nodes))

    def select(self, state: Any) -> Move:
        """The search's best move."""
        return self.think(state).move

    def analyze(self, state: Any) -> tuple[float, list[tuple[Move, float]]]:
        """``(value, [(best move, 1.0)])``: the score squashed to (-1, 1), +-1 for a proven result."""
        from ._alphabeta import MATE, MAX_DEPTH

        outcome = self.think(state)
        if abs(outcome.score) >= MATE - MAX_DEPTH:
            value = math.copysign(1.0, outcome.score)
        else:
            value = math.tanh(outcome.score / VALUE_SCALE)
        return value, [(outcome.move, 1.0)]

    def _compiled(self, state: Any) -> tuple[Any, list[int] | None]:
        """The compiled state to search and the hashes of the game's earlier positions (None:
        the compiled state's own undo history holds them)."""
        if isinstance(state, self._state_class):
            return state, None
        from .search_player import _move_between

        # A reference-engine state: replay its game (as far as its undo history reaches) on the
        # compiled engine, so that ply, progress and repetition history carry over.
        boards = []
        past = state.copy()
        while True:
            boards.append(tuple(past.board))
            try:
                past.undo()
            except ValueError:
                break
        boards.reverse()
        root = self._state_class(self.rules, list(boards[0]), past.to_move, past.ply)
        for before, after in itertools.pairwise(boards):
            root.play(_move_between(before, after))
        return root, None

    def __repr__(self) -> str:
        return f"AlphaBetaPlayer({self.name!r}, {self.rules.name}, depth={self.depth})"


def _depth(text: str) -> int:
    from ._alphabeta import MAX_DEPTH

    return parse_int(text, "", minimum=1, maximum=MAX_DEPTH)


_depth.__name__ = "a depth in 1..12"


def _tt_bits(text: str) -> int:
    return parse_int(text, "", minimum=10, maximum=26)


_tt_bits.__name__ = "a table size 10..26 (log2 of entries)"


def _evaluation(text: str) -> str:
    from ._alphabeta import EVALUATIONS

    if text not in EVALUATIONS:
        raise ValueError(f"valid: {', '.join(EVALUATIONS)}")
    return text


_evaluation.__name__ = "an evaluation (distance, advance, linear)"


def _opponents(text: str) -> str:
    from ._alphabeta import OPPONENTS

    if text not in OPPONENTS:
        raise ValueError(f"valid: {', '.join(OPPONENTS)}")
    return text


_opponents.__name__ = "paranoid or still"


def weights_document(rules: Rules, weights: list[float], trained: dict[str, Any], versions: dict[str, str]) -> dict:
    """The JSON of a weights file (see the module docstring)."""
    from ._alphabeta import FEATURES

    return {"format": WEIGHTS_FORMAT, "preset": rules.name, "features": list(FEATURES),
            "weights": [float(w) for w in weights], "trained": trained, "versions": versions}


def read_weights(path: str | Path, rules: Rules) -> list[float]:
    """The weights of a ``linear`` evaluation file for ``rules``; ``ValueError`` naming the file
    and the problem otherwise (never pickle: JSON, every field checked)."""
    from ._alphabeta import FEATURES

    where = Path(path)
    try:
        if where.stat().st_size > MAX_WEIGHTS_BYTES:
            raise ValueError(f"{where}: larger than {MAX_WEIGHTS_BYTES} bytes: not a weights file")
        doc = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{where}: cannot read the weights file ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError(f"{where}: not a weights file (not JSON)") from None
    if not isinstance(doc, dict) or doc.get("format") != WEIGHTS_FORMAT:
        raise ValueError(f"{where}: not a weights file (format tag is not {WEIGHTS_FORMAT!r})")
    if doc.get("preset") != rules.name:
        raise ValueError(f"{where}: weights for {doc.get('preset')!r}, not {rules.name!r}")
    if doc.get("features") != list(FEATURES):
        raise ValueError(f"{where}: weights for features {doc.get('features')}, this engine has {list(FEATURES)}")
    weights = doc.get("weights")
    if (not isinstance(weights, list) or len(weights) != len(FEATURES)
            or not all(isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) for w in weights)):
        raise ValueError(f"{where}: weights must be {len(FEATURES)} finite numbers")
    return [float(w) for w in weights]


#: The SPEC ``alphabeta:depth=D,...`` (listed in ``learner.players``).
ALPHABETA = PlayerKind(
    "alphabeta",
    AlphaBetaPlayer,
    options={"depth": _depth, "eval": _evaluation, "weights": str, "tt": _tt_bits, "opponents": _opponents},
    description="alpha-beta search (PVS, iterative deepening, transposition table), distance evaluation",
)
