"""Type stub of the compiled alpha-beta search (ccengine/_alphabeta.pyx)."""

from collections.abc import Iterable

from ._core import RulesTables, State

MATE: int
MAX_DEPTH: int
EVALUATIONS: tuple[str, ...]
OPPONENTS: tuple[str, ...]
FEATURES: tuple[str, ...]
LINEAR_SCALE: int

def game_hashes(state: State) -> list[int]:
    """Zobrist hashes of the positions before ``state`` in its game, oldest first."""

class AlphaBetaSearch:
    tt_bits: int
    evaluation: str
    opponents: str
    def __init__(
        self,
        tables: RulesTables,
        tt_bits: int = 18,
        evaluation: str = "distance",
        weights: list[float] | None = None,
        opponents: str = "paranoid",
    ) -> None: ...
    def features(self, state: State) -> list[list[float]]:
        """The features of both players in ``state`` (the ``linear`` evaluation's inputs)."""
    def search(
        self, state: State, depth: int, history: Iterable[int] | None = None
    ) -> tuple[tuple[int, int], int, int]:
        """``(move, score, nodes)`` of an iterative-deepening search to ``depth``."""
