"""Type stub of the compiled batched tree search (ccengine/_search.pyx)."""

from collections.abc import Sequence

import numpy as np

from ._core import RulesTables, State

PASS_ACTION: int
MAX_HISTORY: int
STATE_BYTES: int

def canonical_pieces(state: State) -> np.ndarray:
    """int8 ``[2, k]``: canonical piece-ID list of ``state``'s position."""

class SearchForest:
    num_games: int
    history: int
    leaves_per_game: int
    max_moves: int
    k: int
    cells: int
    c_puct: float
    fpu_value: float
    fpu_reduction: float
    virtual_loss: float
    dirichlet_alpha: float
    dirichlet_weight: float
    num_pending: int

    def __init__(
        self,
        tables: RulesTables,
        num_games: int,
        *,
        history: int = 1,
        c_puct: float = 3.5,
        parent_visits: str = "node",
        fpu: str = "parent",
        fpu_value: float = 0.0,
        fpu_reduction: float = 0.0,
        leaves_per_game: int = 1,
        virtual_loss: float = 1.0,
        dirichlet_alpha: float = 0.03,
        dirichlet_weight: float = 0.25,
        node_capacity: int = 256,
        edge_capacity: int = 8192,
        solver: bool = False,
        greedy_opponent: bool = False,
        model_opponent: bool = False,
        policy_opponent: bool = False,
        auto_opponent: bool = False,
        forced_playouts: float = 0.0,
    ) -> None: ...
    def set_root(self, g: int, state: State, history: np.ndarray | None = None, *, seed: int = 0) -> None: ...
    def advance(self, g: int, s: int, e: int, *, reuse: bool = True) -> bool: ...
    def start(self, g: int, num_simulations: int, *, noise: bool = False) -> None: ...
    def pending_simulations(self) -> int: ...
    def is_active(self, g: int) -> bool: ...
    def greedy_seats(self, g: int) -> list[int]: ...
    def select(
        self,
        pieces: np.ndarray,
        to_move: np.ndarray,
        legal: np.ndarray,
        counts: np.ndarray,
        states: np.ndarray | None = None,
        games: np.ndarray | None = None,
    ) -> int: ...
    def expand_and_backup(self, priors: np.ndarray, values: np.ndarray, opponent: np.ndarray | None = None) -> None: ...
    def root_stats(
        self,
        g: int,
        moves: np.ndarray,
        actions: np.ndarray,
        visits: np.ndarray,
        q: np.ndarray,
        prior: np.ndarray,
    ) -> tuple[int, int, float]: ...
    def root_moves(self, g: int, out: np.ndarray) -> int: ...
    def root_state(self, g: int) -> tuple[int, int, np.ndarray]: ...
    def root_history(self, g: int) -> np.ndarray: ...
    def tree_size(self, g: int) -> tuple[int, int, int]: ...
    def node_edges(
        self, g: int, path: Sequence[tuple[int, int]] = ()
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None: ...
    def check_invariants(self, g: int) -> bool: ...
