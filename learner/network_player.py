"""The network player, ``mcts:model=PATH,sims=S``: the batched search guided by a network.

``opponent`` models the opponent in the tree: ``any`` (the default: a sound opponent, PUCT at
every node), ``greedy`` (the opponent's nodes play greedy's move), ``model`` (they play the
reply the network's opponent head rates most likely; a network without the head is refused),
``policy`` (the network's own most likely move) or ``auto`` (greedy's move for the players whose
last four moves were greedy's, PUCT for the rest).

``model`` is a network file, a learner checkpoint, a run directory (its current best model) or
``shipped`` (the model packaged for the game's preset); without ``model``, a uniform prior and
an equal share of the result for every seat. ``c`` (the exploration constant) defaults to the one the model was trained with,
as its file records, else the search's default. :data:`MCTS` is its kind, listed with every
other in ``learner.players``.

The evaluator builds the same player from weights in memory (:func:`network_player_from_weights`)
with the run's exploration constant, the one its model files record: one function
(:func:`search_player_for`) makes the player on both paths, so a model plays the same whether it
comes from a file or from the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ccengine.eval_cache import EvaluationCache
from ccengine.players import PlayerKind, SeedLike
from ccengine.rules import Rules
from ccengine.search import PLAY_FINISH, SearchConfig, UniformEvaluator
from ccengine.search_player import SearchPlayer, flag, opponent_option, positive, share

from .backends import backend_option
from .model_files import resolve_model_source

if TYPE_CHECKING:
    from .model import NetConfig, PolicyValueNet
    from .network_evaluator import NetworkEvaluator

__all__ = ["MCTS", "network_player", "network_player_from_weights", "search_player_for"]


def search_player_for(
    rules: Rules,
    seed: SeedLike,
    evaluator: NetworkEvaluator,
    *,
    sims: int,
    c: float | None,
    name: str = "mcts",
    opponent: str = "any",
    reuse: bool = False,
    finish: float = PLAY_FINISH,
) -> SearchPlayer:
    """The search player over a network evaluator: ``c`` given, else the one the network's file
    recorded (``evaluator.c_puct``), else the search's default; the network's input history;
    ``opponent`` (``any``, ``greedy``, ``model``, ``policy``, ``auto``) models the opponent in the tree; ``reuse``
    keeps the tree from move to move and ``finish`` plays out a won game (``SearchPlayer``).

    The network sits behind an evaluation cache: each move's search starts a new tree, and the
    positions two plies on were mostly searched by the move before (and a match's parallel games
    share their openings). Not with ``opponent=model``: the cache keeps no opponent logits."""
    if c is None:
        c = evaluator.c_puct
    opponent_option(opponent)
    if opponent == "model" and not evaluator.has_opponent_model:
        raise ValueError("opponent=model needs a network with an opponent head; this one has none "
                         "(train it with network.opponent_head=true)")
    model = opponent == "model"
    return SearchPlayer(
        rules, seed, evaluator if model else EvaluationCache(evaluator), simulations=sims, c_puct=c,
        history=evaluator.encoding.history, opponent=opponent, reuse=reuse, finish=finish, name=name,
    )


def network_player(
    rules: Rules,
    seed: SeedLike,
    *,
    model: str = "",
    sims: int = SearchConfig().num_simulations,
    c: float | None = None,
    device: str = "cpu",
    backend: str = "auto",
    opponent: str = "any",
    reuse: bool = False,
    finish: float = PLAY_FINISH,
) -> SearchPlayer:
    """The ``mcts`` SPEC. ``c``: the exploration constant; by default the one the model was
    trained with (its file says), else the search's default. ``backend``: how the network runs
    (``learner.backends``). ``opponent``: ``any``, ``greedy``, ``model`` (the network's
    opponent head; refused for a network without one), ``policy`` (the network's own policy) or
    ``auto`` (greedy's rule for the players seen playing it).
    ``reuse``: keep the searched subtree from move to move, each move's ``sims`` on top of it.
    ``finish``: the share from which it plays out a won race (``SearchConfig.finish``)."""
    if not model:
        if opponent in ("model", "policy"):
            raise ValueError(f"opponent={opponent} needs a network (give model=...)")
        return SearchPlayer(rules, seed, UniformEvaluator(rules.players), simulations=sims, c_puct=c,
                            opponent=opponent, reuse=reuse, finish=finish)
    from .network_evaluator import load_network_evaluator  # torch only when a model is asked for

    evaluator = load_network_evaluator(rules, resolve_model_source(rules, model), device=device, backend=backend)
    if evaluator.algo == "dqn":
        raise ValueError(f"model {model!r} holds a DQN network (Q values, no trained value head): "
                         f"play it with dqn:model=...")
    return search_player_for(rules, seed, evaluator, sims=sims, c=c, opponent=opponent, reuse=reuse, finish=finish)


def network_player_from_weights(
    rules: Rules,
    weights: Mapping[str, Any] | PolicyValueNet,
    *,
    net_config: NetConfig | None = None,
    encoding: str = "general",
    history: int | None = None,
    sims: int,
    c_puct: float,
    seed: SeedLike = None,
    device: str = "cpu",
    threads: int | None = None,
    backend: str = "auto",
    name: str = "mcts",
) -> SearchPlayer:
    """The network player from weights in memory: what ``mcts:model=FILE,sims=S`` plays when
    FILE holds these weights and records ``c_puct``.

    ``weights``: a ``PolicyValueNet``, or its weights by name (numpy arrays, as the registry
    keeps them, or tensors) for a network of ``net_config``. ``encoding``/``history``: the
    network's input. ``c_puct``: the exploration constant it was trained with (the run's
    ``search.c_puct``; no file here to say it). ``threads`` (None: leave torch's setting alone)
    is process-wide, see ``Inference``; ``backend``: how the network runs (``learner.backends``).
    """
    from ccengine.encoding import encoding_for

    from .model import PolicyValueNet
    from .network_evaluator import NetworkEvaluator, network_inference
    from .training import load_weights_into

    enc = encoding_for(rules, encoding, history=history)
    if isinstance(weights, PolicyValueNet):
        model = weights
    elif isinstance(weights, Mapping):
        if net_config is None:
            raise ValueError("weights by name need net_config: the network they belong to")
        model = PolicyValueNet(net_config)
        load_weights_into(model, weights)
    else:
        raise TypeError(f"weights: expected a PolicyValueNet or a dict of weights, got {type(weights).__name__}")
    if enc.in_planes != model.config.in_planes:
        raise ValueError(
            f"the network takes {model.config.in_planes} input planes; encoding {enc.name!r} "
            f"with history {enc.history} gives {enc.in_planes}"
        )
    inference = network_inference(rules, enc, model, backend=backend, device=device, threads=threads)
    evaluator = NetworkEvaluator(rules, enc, inference)  # checks the policy
    return search_player_for(rules, seed, evaluator, sims=sims, c=c_puct, name=name)


#: The SPEC ``mcts:model=PATH,sims=S,...`` (listed in ``learner.players``).
MCTS = PlayerKind(
    "mcts",
    network_player,
    options={"model": str, "sims": positive(int), "c": positive(float), "device": str, "backend": backend_option,
             "opponent": opponent_option, "reuse": flag, "finish": share},
    description="network-guided tree search (uniform prior and an equal share for every seat without a model)",
)
