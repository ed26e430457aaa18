"""Stage-1 data from a search teacher: self-play of MCTS with greedy playouts, no network.

The paper's stage 1 imitates the greedy heuristic (``heuristic.py``); this is the alternative
``stage1.teacher: rollout``, the first expert of expert iteration (Anthony et al. 2017): both
sides play ``mcts-rollout`` with ``teacher_simulations`` simulations per move, and the network
learns the search's visit distributions and the games' outcomes. On ``paper`` that teacher is
far stronger than greedy (``mcts-rollout:sims=800`` wins 92% of 50 games against it, where the
greedy-imitating network with 175 simulations wins about half), so self-play starts from a
better first model.

The games are ordinary self-play games (``selfplay.py``: the run's exploration settings, root
noise, records with every position kept), played with a :class:`~ccengine.search.RolloutEvaluator`
instead of a network; ``model_version`` is -1. The policy target is the teacher's decision, its
most visited move (ties shared), not the whole visit distribution: with uniform priors and
playout values the visits spread over many moves (the best often gets a tenth of them), and a
first run that learned those spreads gave a network that played aimlessly (5 wins, 57 draws and
38 losses in 100 games against greedy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ccengine._core import tables_for
from ccengine.rules import Rules
from ccengine.search import RolloutEvaluator, SearchConfig
from learner.records import GameRecord, make_record

from .selfplay import SelfPlayWorker

__all__ = ["RolloutTeacher", "most_visited_targets"]


def most_visited_targets(rules: Rules, rec: GameRecord) -> GameRecord:
    """``rec`` with each position's policy target narrowed to its most visited moves, shared
    equally (the search's decision as the label); everything else unchanged."""
    policies = []
    for t in range(rec.num_positions):
        index, prob = rec.policy(t)
        best = prob == prob.max() if len(prob) else np.zeros(0, dtype=bool)
        policies.append((index[best], np.full(int(best.sum()), 1.0 / max(int(best.sum()), 1))))
    return make_record(
        run_id=rec.run_id, rules=rules, config_hash=rec.config_hash, model_version=rec.model_version,
        actor=rec.actor, seed=rec.seed, pieces=rec.pieces, to_move=rec.to_move, policies=policies,
        root_value=rec.root_value, outcome=rec.outcome, plies=rec.plies, start_pieces=rec.start_pieces,
        weight=rec.weight, keep=rec.keep, versions=rec.versions,
    )


class RolloutTeacher:
    """``G`` concurrent teacher games; :meth:`generate` returns the next finished ones.

    ``search``: the run's search settings (exploration, noise, c); the number of simulations is
    ``simulations``. The rest is provenance and seeding, as for :class:`SelfPlayWorker`.
    """

    def __init__(
        self,
        rules: Rules,
        *,
        games: int,
        search: SearchConfig,
        simulations: int,
        encoding: str,
        history: int,
        run_id: str,
        config_hash: str,
        actor: str,
        seed: int,
    ) -> None:
        self.rules = rules
        self.worker = SelfPlayWorker(
            rules,
            games=games,
            search=search.replace(num_simulations=simulations),
            net_config=None,
            encoding=encoding,
            history=history,
            run_id=run_id,
            config_hash=config_hash,
            actor=actor,
            seed=seed,
            evaluator=RolloutEvaluator(tables_for(rules), policy="greedy", seed=seed),
        )

    def generate(self) -> list[GameRecord]:
        """Play moves in every game until at least one game has finished; return those."""
        while True:
            records = self.worker.step()
            if records:
                return [most_visited_targets(self.rules, r) for r in records]

    def stats(self) -> dict[str, Any]:
        """Games, positions and simulations so far (the keys :class:`HeuristicWorker` uses)."""
        s = self.worker.stats()
        return {"games": s["games_finished"], "positions": s["positions"], "simulations": s["simulations"]}
