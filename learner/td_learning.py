"""TD(lambda) learning of a linear evaluation while playing greedy (Li, "Playing Chinese Checkers
with Reinforcement Learning", CUHK 2016), for ``alphabeta:...,eval=linear,weights=PATH``.

The value of a position for the learner is ``V = tanh(w . x)``, where ``x`` is the learner's board
features minus its opponent's (``ccengine._alphabeta.FEATURES``: advance, pieces in the goal and
at home, the rearmost piece's steps to the goal, the sum of squared steps, forward hops, blocked
pieces), each divided by a fixed scale of the preset so that the features weigh alike. The
learner plays greedy, its seat alternating between episodes, each side's first ``random_opening``
moves random (the seed's match protocol), and chooses the move whose position after it has the
highest value (a finished game: its result), with probability ``epsilon`` a random move instead.
The report found greedy selection the best (its 4.3), so ``epsilon`` defaults to 0.

The positions after the learner's moves, ``x_1 .. x_T``, are the TD sequence: after each move
the eligibility trace takes the previous position's gradient, ``e <- lambda e + (1 - V^2) x_{t-1}``,
and ``w <- w + alpha (V(x_t) - V(x_{t-1})) e``; at the end of the game the target is the result
(+1, 0, -1 from the learner's side). The report trained SARSA(lambda) for 800 episodes against
greedy; TD(lambda) on the positions after the learner's moves is the same update for a player
that picks moves by the value of where they lead.

Written: the weights (``ccengine.alphabeta.weights_document``, divided back by the scales so that
the search reads raw features) and the learning curve (each episode's result and the share won
over the last 100).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccengine.alphabeta import AlphaBetaPlayer
from ccengine.engines import new_state
from plumbing.fields import check_fields, checked
from ccengine.game_loop import play_game
from ccengine.rules import Rules

from .players import make_player

__all__ = ["TDConfig", "TDResult", "feature_scales", "train_td"]


@dataclass(frozen=True, kw_only=True)
class TDConfig:
    """The learning run (defaults: the report's 800 episodes against greedy)."""

    episodes: int = checked(800, ge=1)
    alpha: float = checked(0.02, gt=0, le=1)
    """Step size on the scaled features."""
    lam: float = checked(0.7, ge=0, le=1)
    """The trace's decay, lambda."""
    epsilon: float = checked(0.0, ge=0, le=1)
    """Share of the learner's moves chosen at random (the report: 0, greedy selection)."""
    random_opening: int = checked(3, ge=0)
    """Random first moves per side (the seed's protocol: varied games against a fixed opponent)."""
    opponent: str = checked("greedy")
    """The player SPEC learned against."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class TDResult:
    weights: list[float]
    """On the raw features (what the search reads)."""
    results: list[int]
    """Each episode's result from the learner's side."""

    def curve(self, window: int = 100) -> list[float]:
        """The share of the last ``window`` episodes won, after each episode (draws half)."""
        scores = np.array([(r + 1) / 2 for r in self.results], dtype=np.float64)
        csum = np.concatenate([[0.0], np.cumsum(scores)])
        return [float((csum[i + 1] - csum[max(0, i + 1 - window)]) / min(i + 1, window)) for i in range(len(scores))]


def feature_scales(rules: Rules) -> np.ndarray:
    """A scale per feature: the size it can reach on ``rules`` (pieces, steps across the board)."""
    probe = AlphaBetaPlayer(rules, depth=1)
    start = probe.features(new_state(rules))[0]
    k, steps = rules.k, max(1.0, start[3])  # the start's rearmost piece: the longest way home
    return np.array([k * steps, k, k, steps, k * steps * steps, k, k], dtype=np.float64)


def train_td(rules: Rules, config: TDConfig, *, seed: int,
             on_episode: Callable[[int, int], Any] | None = None) -> TDResult:
    """Learn the weights; ``on_episode(episode, result)`` after each game."""
    rng = np.random.default_rng(seed)
    probe = AlphaBetaPlayer(rules, depth=1)
    opponent = make_player(config.opponent, rules, int(rng.integers(2**63)))
    scales = feature_scales(rules)
    w = np.zeros(len(scales))

    def x_of(state: Any, me: int) -> np.ndarray:
        f = probe.features(state)
        return (np.asarray(f[me]) - np.asarray(f[1 - me])) / scales

    results: list[int] = []
    for episode in range(config.episodes):
        me = episode % 2
        opponent.reset(int(rng.integers(2**63)))
        learner = _EpsilonGreedy(me, w, x_of, config.epsilon, rng)
        trace = np.zeros_like(w)
        last: np.ndarray | None = None  # the features after the learner's previous move

        def learn(state: Any, move: tuple[int, int]) -> None:
            """After each of the learner's moves in play: a TD step toward the new position's value."""
            nonlocal trace, last
            if state.ply <= 2 * config.random_opening or state.to_move == me or state.is_terminal():
                return
            x = x_of(state, me)
            if last is not None:
                trace = _td_step(w, trace, last, math.tanh(float(w @ x)), config)
            last = x

        seats = [learner, opponent] if me == 0 else [opponent, learner]
        game = play_game(rules, seats, opening_rng=rng, random_opening=config.random_opening, on_move=learn)
        result = int(round(game.scores[me] - game.scores[1 - me]))  # +1 / 0 / -1 for the learner
        if last is not None:
            _td_step(w, trace, last, float(result), config)
        results.append(result)
        if on_episode is not None:
            on_episode(episode, result)
    return TDResult([float(v) for v in w / scales], results)


class _EpsilonGreedy:
    """The learner's seat: a random move with chance ``epsilon``, else the best by the weights."""

    def __init__(self, me: int, w: np.ndarray, x_of: Callable[[Any, int], np.ndarray], epsilon: float,
                 rng: np.random.Generator) -> None:
        self.me, self.w, self.x_of, self.epsilon, self.rng = me, w, x_of, epsilon, rng

    def select(self, state: Any) -> tuple[int, int]:
        moves = state.legal_moves()
        if self.epsilon and self.rng.random() < self.epsilon:
            return moves[int(self.rng.integers(len(moves)))]
        return _best_move(state, moves, self.me, self.w, self.x_of, self.rng)


def _td_step(w: np.ndarray, trace: np.ndarray, x: np.ndarray, target: float, config: TDConfig) -> np.ndarray:
    """One TD(lambda) update of ``w`` in place toward ``target`` from the position ``x``; the new trace."""
    v = math.tanh(float(w @ x))
    trace = config.lam * trace + (1.0 - v * v) * x
    w += config.alpha * (target - v) * trace
    return trace


def _best_move(state: Any, moves: list, me: int, w: np.ndarray, x_of: Callable[[Any, int], np.ndarray],
               rng: np.random.Generator) -> tuple[int, int]:
    """The move to the highest value for ``me`` (a finished game: its result), ties at random."""
    values = []
    for move in moves:
        after = state.copy()
        after.play(move)
        if after.is_terminal():
            scores = after.scores()
            values.append(2.0 * (scores[me] - scores[1 - me]))  # beyond any tanh
        else:
            values.append(math.tanh(float(w @ x_of(after, me))))
    values_arr = np.asarray(values)
    best = np.flatnonzero(values_arr >= values_arr.max() - 1e-12)
    return moves[int(best[rng.integers(len(best))])]

