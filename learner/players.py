"""Every player a SPEC can name, in one registry: the one place a SPEC is read.

``random``, ``greedy``, ``greedy-stochastic`` (``ccengine.players``), ``alphabeta``
(``ccengine.alphabeta``), ``mcts-rollout`` (``ccengine.search_player``), ``mcts``
(``learner.network_player``) and ``dqn`` (``learner.dqn_player``). A SPEC is parsed once
(:func:`parse_spec`, cheap: nothing is built) into a ``PlayerSpec`` whose ``build`` makes the
player; :func:`make_player` does both.
"""

from __future__ import annotations

from ccengine.alphabeta import ALPHABETA
from ccengine.players import GREEDY, GREEDY_STOCHASTIC, RANDOM, Player, PlayerKind, PlayerRegistry, PlayerSpec, SeedLike
from ccengine.rules import Rules
from ccengine.search_player import MCTS_ROLLOUT

from .dqn_player import DQN
from .network_player import MCTS

__all__ = ["PLAYERS", "make_player", "parse_spec", "player_kinds"]

#: Every kind of player, in the order help texts list them.
PLAYERS = PlayerRegistry((RANDOM, GREEDY, GREEDY_STOCHASTIC, ALPHABETA, MCTS_ROLLOUT, MCTS, DQN))


def parse_spec(spec: str) -> PlayerSpec:
    """The SPEC ``spec`` parsed and checked, its player not built (``PlayerSpecError``)."""
    return PLAYERS.parse(spec)


def make_player(spec: str, rules: Rules, seed: SeedLike = None) -> Player:
    """Build the player a SPEC names, for games of ``rules``, its random stream from ``seed``."""
    return PLAYERS.make(spec, rules, seed)


def player_kinds() -> dict[str, PlayerKind]:
    """Every player kind, by name."""
    return dict(PLAYERS.kinds)
