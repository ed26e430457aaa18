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
instead of a network; ``model_version`` is -1.
"""

from __future__ import annotations

from typing import Any

from ccengine._core import tables_for
from ccengine.rules import Rules
from ccengine.search import RolloutEvaluator, SearchConfig
from learner.records import GameRecord

from .selfplay import SelfPlayWorker

__all__ = ["RolloutTeacher"]


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
                return records

    def stats(self) -> dict[str, Any]:
        """Games, positions and simulations so far (the keys :class:`HeuristicWorker` uses)."""
        s = self.worker.stats()
        return {"games": s["games_finished"], "positions": s["positions"], "simulations": s["simulations"]}
