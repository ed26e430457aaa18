"""The evaluator's configuration (the ``evaluation`` section of a run)."""

from __future__ import annotations

from dataclasses import dataclass, field

from plumbing.fields import check_fields, checked

from .gating import GateConfig

__all__ = ["EvaluationConfig"]


@dataclass(frozen=True, kw_only=True)
class EvaluationConfig:
    """The evaluator: gating candidate against best, win rate against greedy, Elo."""

    gate: GateConfig = field(default_factory=GateConfig)
    """The 55% gate (gating.py)."""
    simulations: int = checked(175, ge=1)
    """Simulations per move in evaluation games (paper: 175 in play, 180 in its tests)."""
    parallel_games: int = checked(32, ge=1)
    """Games searched together in one batch."""
    greedy_games: int = checked(100, ge=1)
    """Games against ``greedy`` after each promotion (paper protocol; paper: 300 at the end)."""
    candidate_every_steps: int = checked(500, ge=1)
    """Learner steps between candidates sent to the gate."""

    def __post_init__(self) -> None:
        check_fields(self)
