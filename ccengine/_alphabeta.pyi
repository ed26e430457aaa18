"""Type stub of the compiled alpha-beta search (ccengine/_alphabeta.pyx)."""

from collections.abc import Iterable

from ._core import RulesTables, State

MATE: int
MAX_DEPTH: int
EVALUATIONS: tuple[str, ...]

def game_hashes(state: State) -> list[int]:
    """Zobrist hashes of the positions before ``state`` in its game, oldest first."""

class AlphaBetaSearch:
    tt_bits: int
    evaluation: str
    def __init__(self, tables: RulesTables, tt_bits: int = 18, evaluation: str = "distance") -> None: ...
    def search(
        self, state: State, depth: int, history: Iterable[int] | None = None
    ) -> tuple[tuple[int, int], int, int]:
        """``(move, score, nodes)`` of an iterative-deepening search to ``depth``."""
