"""The DQN player, ``dqn:model=PATH``: the legal move of largest Q value, no search (the paper's).

``model`` is what ``mcts:model=`` takes (a network file, a checkpoint, a run directory's best
model), but it must hold a network trained by ``algo: dqn`` (the file's ``algo`` entry, or the
run config of a checkpoint): a policy network's logits are no Q values. Ties go to the first
legal move in the engine's order, so the player is deterministic. Importing this module
registers the SPEC ``dqn``; the evaluator of a DQN run plays the same player from weights in
memory (:func:`dqn_player_from_weights`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ccengine.encoding import encoding_for, policy_indices
from ccengine.players import PlayerKind, SeedLike
from ccengine.rules import Rules
from ccengine.search_player import game_piece_history

from .backends import backend_option
from .model_files import resolve_model_source
from .network_evaluator import NetworkEvaluator

__all__ = ["DQN", "DQNPlayer", "dqn_player", "dqn_player_from_weights"]

Move = tuple[int, int]


class DQNPlayer:
    """Argmax of the network's Q values over the legal moves (see the module docstring)."""

    stateless = True
    """Its move is a function of the game alone: a match plays all its games with one object
    (``evaluator.arena``), one network, however many are in flight."""

    def __init__(self, rules: Rules, evaluator: NetworkEvaluator, *, name: str = "dqn") -> None:
        self.rules = rules
        self.evaluator = evaluator
        self.name = name

    def reset(self, seed: SeedLike = None) -> None:
        """Nothing to reset: the player is deterministic."""

    def values(self, state: Any) -> tuple[list[Move], np.ndarray]:
        """The legal moves of ``state`` and their Q values, in the engine's order."""
        moves = list(state.legal_moves())
        pieces = game_piece_history(self.rules, state, self.evaluator.encoding.history)
        index = policy_indices(self.rules, pieces[0], moves, state.to_move)
        q = self.evaluator.move_values(pieces[None], np.array([state.to_move]), index[None],
                                       np.array([len(moves)]))
        return moves, q[0]

    def select(self, state: Any) -> Move:
        moves = state.legal_moves()
        if len(moves) == 1:
            return moves[0]  # also the pass, which has no policy index
        moves, q = self.values(state)
        return moves[int(np.argmax(q))]

    def analyze(self, state: Any) -> tuple[float, list[tuple[Move, float]]]:
        """``(value, policy)`` for the engine protocol: the best Q value and the argmax move."""
        moves = state.legal_moves()
        if len(moves) == 1:
            return 0.0, [(moves[0], 1.0)]
        moves, q = self.values(state)
        best = int(np.argmax(q))
        return float(q[best]), [(moves[best], 1.0)]


def dqn_player(rules: Rules, seed: SeedLike, *, model: str, device: str = "cpu", backend: str = "auto") -> DQNPlayer:
    """The ``dqn`` SPEC: the DQN network ``model`` (file, checkpoint or run directory)."""
    from .network_evaluator import load_network_evaluator

    evaluator = load_network_evaluator(rules, resolve_model_source(rules, model), device=device, backend=backend)
    if evaluator.algo != "dqn":
        raise ValueError(f"model {model!r} holds an {evaluator.algo} network (policy and value), not DQN Q "
                         f"values: play it with mcts:model=...")
    return DQNPlayer(rules, evaluator)


def dqn_player_from_weights(
    rules: Rules,
    weights: Mapping[str, Any],
    *,
    net_config: Any,
    encoding: str,
    history: int | None,
    backend: str = "auto",
    threads: int | None = None,
    name: str = "dqn",
) -> DQNPlayer:
    """The DQN player of weights in memory (the evaluator's): what ``dqn:model=FILE`` plays when
    FILE holds these weights."""
    from .model import PolicyValueNet
    from .network_evaluator import network_inference
    from .training import load_weights_into

    model = PolicyValueNet(net_config)
    load_weights_into(model, weights)
    enc = encoding_for(rules, encoding, history=history)
    evaluator = NetworkEvaluator(rules, enc, network_inference(rules, enc, model, backend=backend, threads=threads))
    evaluator.algo = "dqn"
    return DQNPlayer(rules, evaluator, name=name)


#: The SPEC ``dqn:model=PATH`` (listed in ``learner.players``).
DQN = PlayerKind(
    "dqn",
    dqn_player,
    options={"model": str, "device": str, "backend": backend_option},
    required=frozenset({"model"}),
    description="argmax of a DQN network's Q values over the legal moves (no search)",
)
