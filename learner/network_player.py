"""The network player, ``mcts:model=PATH,sims=S``: the batched search guided by a network.

``model`` is a network file, a learner checkpoint, a run directory (its current best model) or
``shipped`` (the model packaged for the game's preset); without ``model``, a uniform prior and
a zero value. ``c`` (the exploration constant) defaults to the one the model was trained with,
as its file records, else the paper's 3.5. Importing this module registers the SPEC ``mcts`` in
ccengine's player registry; the rooms that build players from SPECs (the evaluator, the front
ends) import it.
"""

from __future__ import annotations

from ccengine.players import SeedLike, register_player
from ccengine.rules import Rules
from ccengine.search import SearchConfig, UniformEvaluator
from ccengine.search_player import SearchPlayer, positive

from .model_files import resolve_model_source

__all__ = ["network_player"]


def network_player(
    rules: Rules, seed: SeedLike, *, model: str = "", sims: int = 175, c: float | None = None, device: str = "cpu"
) -> SearchPlayer:
    """``c``: the exploration constant; by default the one the model was trained with (its file
    says), else the paper's 3.5."""
    paper_c = SearchConfig().c_puct
    if not model:
        return SearchPlayer(rules, seed, UniformEvaluator(), simulations=sims, c_puct=paper_c if c is None else c)
    from .network_evaluator import load_network_evaluator  # torch only when a model is asked for

    evaluator = load_network_evaluator(rules, resolve_model_source(rules, model), device=device)
    if c is None:
        c = evaluator.c_puct if evaluator.c_puct is not None else paper_c
    return SearchPlayer(rules, seed, evaluator, simulations=sims, c_puct=c, history=evaluator.encoding.history)


register_player(
    "mcts",
    network_player,
    options={"model": str, "sims": positive(int), "c": positive(float), "device": str},
    description="network-guided tree search (uniform prior and zero value without a model)",
)
