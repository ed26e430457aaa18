"""The evaluator's configuration (the ``evaluation`` section of a run)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .gating import GateConfig

__all__ = ["EvaluationConfig"]


@dataclass(frozen=True, kw_only=True)
class EvaluationConfig:
    """The evaluator: gating candidate against best, win rate against greedy, Elo."""

    gate: GateConfig = field(default_factory=GateConfig)
    """The 55% gate (gating.py)."""
    simulations: int = 175
    """Simulations per move in evaluation games (paper: 175 in play, 180 in its tests)."""
    parallel_games: int = 32
    """Games searched together in one batch."""
    greedy_games: int = 100
    """Games against ``greedy`` after each promotion (paper protocol; paper: 300 at the end)."""
    candidate_every_steps: int = 500
    """Learner steps between candidates sent to the gate."""
