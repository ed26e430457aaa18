"""A self-play actor as a long-lived service (what ``hopzero train`` starts on each CPU).

Before the first best model exists it plays the paper's stage 1 (greedy games, ``heuristic.py``)
up to its share of ``stage1.games``; then it plays MCTS self-play (``selfplay.py``) with the
newest best weights, checked between moves by asking the registry for a version number (a few
bytes; the weights are fetched only when it changed). Every finished game goes to the replay
buffer. Killed, Ray restarts it and the driver calls ``run()`` again: it only loses the games
in flight.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np

from ccengine.rules import Rules
from ccengine.search import SearchConfig
from learner.dqn import DQNConfig
from plumbing.logs import configure_logging
from plumbing.metrics import Metrics
from learner.model import NetworkConfig
from learner.replay import ReplayLink

from .config import SelfPlayConfig, StageOneConfig
from .dqn import DQNWorker
from .heuristic import HeuristicWorker
from .selfplay import SelfPlayWorker, technique_options

__all__ = ["DQNActorService", "SelfPlayService"]

log = logging.getLogger("hopzero.selfplay")


def _actor_seed(base: int, index: int) -> int:
    """A seed per actor; a restarted actor gets a fresh one so it does not replay its games."""
    restarted = 0
    try:
        import ray

        if ray.is_initialized() and ray.get_runtime_context().was_current_actor_reconstructed:
            restarted = time.time_ns()
    except Exception:  # noqa: BLE001 - outside Ray
        pass
    return int(np.random.SeedSequence([base, index, restarted]).generate_state(1, np.uint64)[0])


class SelfPlayService:
    """Plays games and streams them to the replay buffer; see the module docstring."""

    def __init__(
        self,
        name: str,
        index: int,
        *,
        rules: Rules,
        network: NetworkConfig,
        search: SearchConfig,
        selfplay: SelfPlayConfig,
        stage1: StageOneConfig,
        seed: int,
        config_hash: str,
        replay: ReplayLink,
        registry: str,
        actors: int = 1,
    ) -> None:
        """``rules``: the training games' rules; ``seed``: the run's (each actor derives its own);
        ``actors``: how many share stage 1's games."""
        configure_logging()
        import ray

        self.name = name
        self.registry = ray.get_actor(registry)  # by name: a restarted actor finds it again
        seed = _actor_seed(seed, index)
        self.worker = SelfPlayWorker(
            rules,
            games=selfplay.games_per_actor,
            search=search,
            net_config=network.net_config(rules),
            encoding=network.encoding,
            history=network.history,
            run_id=replay.run_id,
            config_hash=config_hash,
            actor=name,
            seed=seed,
            resign_threshold=selfplay.resign_threshold,
            resign_playout_fraction=selfplay.resign_playout_fraction,
            backend=network.backend,
            eval_cache=selfplay.eval_cache,
            **technique_options(selfplay),
        )
        s1 = stage1
        self.heuristic = (
            HeuristicWorker(
                rules,
                run_id=replay.run_id,
                config_hash=config_hash,
                actor=name,
                seed=seed,
                start_mix=tuple(s1.start_mix),
                random_moves=s1.random_moves,
                keep_fraction=s1.keep_fraction,
                teacher=s1.teacher,
            )
            if s1.enabled
            else None
        )
        self.heuristic_quota = -(-s1.games // max(actors, 1)) if s1.enabled else 0
        self.heuristic_games = 0
        self.writer = replay.writer()
        self.metrics = Metrics()
        self._stop = threading.Event()
        self._version_ref: Any = None
        self._rate = (time.perf_counter(), 0, 0)  # (since, simulations, positions) for rates
        self._sims_per_s = 0.0
        self._positions_per_s = 0.0

    # -- the loop -----------------------------------------------------------------------------------

    def run(self) -> None:
        """Play until :meth:`stop`; every exception is logged before it ends the actor."""
        try:
            # A resumed run, or one started from a network (--init-model), has a best model now:
            # waiting for the registry's first answer keeps the actor from playing stage-1 games
            # that the learner, already in stage 2, would throw away.
            self._follow_best(wait_s=30.0)
            while not self._stop.is_set():
                self._follow_best()
                if self.worker.has_weights:
                    self._send(self.worker.step(), stage="2")
                elif self.heuristic is not None and self.heuristic_games < self.heuristic_quota:
                    n = min(16, self.heuristic_quota - self.heuristic_games)
                    records = self.heuristic.generate(n)
                    self.heuristic_games += n
                    self._send(records, stage="1")
                else:
                    # waiting for the first best model; stage 1's last records may still be
                    # queued (fewer than a batch): they go once they are send_delay_s old
                    self.writer.send()
                    time.sleep(0.2)
                self._update_rates()
        except Exception:
            log.exception("%s failed", self.name)
            raise

    def _follow_best(self, wait_s: float = 0.0) -> None:
        """Switch to newer best weights, waiting at most ``wait_s`` for the registry's answer (by
        default never blocking on it)."""
        import ray

        if self._version_ref is None:
            self._version_ref = self.registry.best_version.remote()
        ready, _ = ray.wait([self._version_ref], timeout=wait_s)
        if not ready:
            return
        version = ray.get(self._version_ref)
        self._version_ref = self.registry.best_version.remote()
        if version > self.worker.model_version:
            best = ray.get(self.registry.best.remote())
            if best is not None:
                self.worker.set_weights(*best)
                log.info("%s plays with model v%d", self.name, best[0])

    def _send(self, records: list[Any], *, stage: str) -> None:
        for record in records:
            self.writer.add(record)
            self.metrics.inc("hopzero_selfplay_games", 1, actor=self.name, stage=stage)
            self.metrics.inc("hopzero_selfplay_positions", record.num_positions, actor=self.name, stage=stage)
        self.writer.send()  # push what is pending now rather than at the next add

    def _update_rates(self) -> None:
        since, sims0, pos0 = self._rate
        now = time.perf_counter()
        if now - since < 5.0:
            return
        s = self.worker.stats()
        sims, positions = s.get("simulations", 0), s.get("positions", 0) + self._heuristic_positions()
        self._sims_per_s = (sims - sims0) / (now - since)
        self._positions_per_s = (positions - pos0) / (now - since)
        self._rate = (now, sims, positions)
        self.metrics.inc("hopzero_selfplay_simulations", sims - sims0, actor=self.name)
        self.metrics.set("hopzero_selfplay_sims_per_second", self._sims_per_s, actor=self.name)
        self.metrics.set("hopzero_selfplay_model_version", self.worker.model_version, actor=self.name)
        self.metrics.set("hopzero_selfplay_eval_cache_hit_rate", s["eval_cache_hit_rate"], actor=self.name)

    def _heuristic_positions(self) -> int:
        return int(self.heuristic.stats().get("positions", 0)) if self.heuristic is not None else 0

    def stop(self) -> None:
        """End the loop after the current step."""
        self._stop.set()

    def stats(self) -> dict[str, Any]:
        """Games, positions and simulations so far, rates, model version, stage."""
        s = self.worker.stats()
        h = self.heuristic.stats() if self.heuristic is not None else {}
        return {
            "games": s.get("games_finished", 0) + h.get("games", 0),
            "positions": s.get("positions", 0) + h.get("positions", 0),
            "simulations": s.get("simulations", 0),
            "sims_per_s": self._sims_per_s,
            "positions_per_s": self._positions_per_s,
            "model_version": self.worker.model_version,
            "eval_cache_hit_rate": s["eval_cache_hit_rate"],
            "stage": 2 if self.worker.has_weights else 1,
            "opponent_results": s["opponent_results"],
        }


class DQNActorService(SelfPlayService):
    """A DQN actor (``algo: dqn``): epsilon-greedy games (``dqn.py``) to the replay buffer.

    The same service as self-play with another worker: it follows the registry's best model
    (in a DQN run every candidate becomes the best, so that is the learner's newest published
    network) and plays as soon as the learner says it may (before any network, at
    ``epsilon_start``), waiting whenever the learner says the actors are ahead of it.
    """

    def __init__(
        self,
        name: str,
        index: int,
        *,
        rules: Rules,
        network: NetworkConfig,
        selfplay: SelfPlayConfig,
        dqn: DQNConfig,
        seed: int,
        config_hash: str,
        replay: ReplayLink,
        registry: str,
    ) -> None:
        """``rules``: the training games' rules; ``seed``: the run's (each actor derives its own)."""
        configure_logging()
        import ray

        self.name = name
        self.registry = ray.get_actor(registry)
        self.worker = DQNWorker(  # type: ignore[assignment]
            rules, games=selfplay.games_per_actor, net_config=network.net_config(rules), encoding=network.encoding,
            history=network.history, dqn=dqn, run_id=replay.run_id, config_hash=config_hash, actor=name,
            seed=_actor_seed(seed, index), backend=network.backend,
        )
        self.heuristic = None
        self.writer = replay.writer()
        self.metrics = Metrics()
        self._stop = threading.Event()
        self._version_ref = None
        self._rate = (time.perf_counter(), 0, 0)
        self._positions_per_s = 0.0
        self._paused_ref: Any = None
        self._paused = True  # until the learner's first word (ModelRegistry.actors_paused)
        self.waited_s = 0.0

    def run(self) -> None:
        """Play until :meth:`stop`, waiting while the learner says the actors are ahead of it;
        every exception is logged before it ends the actor."""
        try:
            while not self._stop.is_set():
                self._follow_best()
                if self._learner_behind():
                    time.sleep(0.05)
                    self.waited_s += 0.05
                    continue
                self._send(self.worker.step(), stage="dqn")
                self._update_dqn_rates()
        except Exception:
            log.exception("%s failed", self.name)
            raise

    def _learner_behind(self) -> bool:
        """The registry's word on pacing (``ModelRegistry.actors_paused``), asked without ever
        blocking: the last answer stands while the next is on its way."""
        import ray

        if self._paused_ref is None:
            self._paused_ref = self.registry.actors_paused.remote()
        ready, _ = ray.wait([self._paused_ref], timeout=0)
        if ready:
            self._paused = ray.get(self._paused_ref) is not False  # None: the learner has not said yet
            self._paused_ref = None
        return self._paused

    def _update_dqn_rates(self) -> None:
        since, _, pos0 = self._rate
        now = time.perf_counter()
        if now - since < 5.0:
            return
        positions = self.worker.stats()["positions"]
        self._positions_per_s = (positions - pos0) / (now - since)
        self._rate = (now, 0, positions)
        self.metrics.set("hopzero_selfplay_model_version", self.worker.model_version, actor=self.name)

    def stats(self) -> dict[str, Any]:
        """Games, positions, rate, model version, epsilon and the training games' results."""
        s = self.worker.stats()
        return {
            "games": s["games_finished"], "positions": s["positions"], "simulations": 0, "sims_per_s": 0.0,
            "positions_per_s": self._positions_per_s, "model_version": s["model_version"], "stage": 2,
            "epsilon": s["epsilon"], "results": [s["wins"], s["draws"], s["losses"]],
            "waited_s": round(self.waited_s, 1),
        }
