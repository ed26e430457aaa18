"""Type stub of the compiled playout policies (ccengine/_playout.pyx)."""

from typing import ClassVar

import numpy as np

from ._core import RulesTables, State

def greedy_pick(state: State, seed: int) -> tuple[int, int]:
    """The C greedy rule's move in ``state`` with its tie-break stream seeded by ``seed`` (tests)."""

class RolloutEvaluator:
    needs_states: ClassVar[bool]
    max_plies: int
    advance_scale: float
    policy: str
    epsilon: float
    temperature: float
    rollouts: int
    decisive: bool

    def __init__(
        self,
        tables: RulesTables,
        *,
        policy: str = "greedy",
        epsilon: float = 0.1,
        temperature: float = 1.0,
        rollouts: int = 1,
        decisive: bool = False,
        max_plies: int = 0,
        cap_value: str = "draw",
        advance_scale: float = 4.0,
        seed: int = 0,
    ) -> None: ...
    def evaluate(
        self,
        pieces: np.ndarray | None,
        to_move: np.ndarray | None,
        legal: np.ndarray,
        counts: np.ndarray,
        *,
        states: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]: ...
