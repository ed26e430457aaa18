"""The learner as a long-lived service: follow the replay window, train, publish, checkpoint.

Runs in a Ray actor (``hopzero.train`` starts it on a GPU when the cluster has one), but is a
plain class: ``run()`` loops until ``stop()``; ``stats()`` may be called meanwhile (the actor is
threaded). Inputs: records from the replay buffer. Outputs: candidate weights to the registry
every ``evaluation.candidate_every_steps`` steps, the stage-1 network as the first best model,
checkpoints in ``RUN_DIR/checkpoints``. Killed and restarted, it resumes from its newest valid
checkpoint (steps, optimiser, stage) and refills its window from the buffer.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from ccengine.encoding import encoding_for
from ccengine.rules import Rules

from .aux_targets import aux_store
from .checkpoint import latest_checkpoint, save_checkpoint, trainer_from_checkpoint
from .dqn import DQNConfig, DQNTrainer, TransitionWindow
from plumbing.logs import configure_logging
from plumbing.metrics import Metrics
from .model import NetworkConfig
from .replay import RatioLimiter, ReplayConfig, ReplayLink, WindowMirror
from .training import LearnerConfig, Trainer

__all__ = ["LearnerService"]

log = logging.getLogger("hopzero.learner")


#: The oldest model version whose games stage 2 learns from: stage-1 (heuristic) games carry -1;
#: self-play games carry their network's version, 0 for the untrained network of a run without
#: stage 1.
SELFPLAY_MIN_VERSION = 0


class LearnerService:
    """Trains the network on the replay window; see the module docstring."""

    def __init__(
        self,
        *,
        rules: Rules,
        network: NetworkConfig,
        learner: LearnerConfig,
        replay_config: ReplayConfig,
        stage1_steps: int,
        candidate_every_steps: int,
        keep_stage1_window: bool = False,
        seed: int,
        run_config: dict[str, Any],
        config_hash: str,
        run_dir: str,
        replay: ReplayLink,
        registry: str,
        dqn: DQNConfig | None = None,
    ) -> None:
        """``rules``: the training games' rules. ``stage1_steps``: learner steps on stage-1 data
        before self-play (0: no stage 1). ``keep_stage1_window``: self-play starts on the stage-1
        window instead of an empty one (``stage1.keep_window``). ``run_config`` and
        ``config_hash``: the whole run's config as plain data, recorded in every checkpoint.
        ``dqn``: train Q values by double DQN on ``dqn`` records (``learner.dqn``) instead of
        AlphaZero's targets (no stage 1 then)."""
        configure_logging()
        self.run_dir = Path(run_dir)
        import ray

        self.registry = ray.get_actor(registry)  # by name: a restarted actor finds it again
        self.learner_config, self.replay_config = learner, replay_config
        self.stage1_steps, self.candidate_every_steps = stage1_steps, candidate_every_steps
        self.keep_stage1_window = keep_stage1_window
        self.run_config, self.config_hash = run_config, config_hash
        self.rules = rules
        self.encoding = encoding_for(rules, network.encoding, history=network.history)
        self.checkpoints = self.run_dir / "checkpoints"
        found = latest_checkpoint(self.checkpoints)
        if dqn is not None:
            stage1_steps = self.stage1_steps = 0
        if found is not None:
            self.trainer = trainer_from_checkpoint(found, config=learner)
            self.stage = int(found.extra.get("stage", 2))
            log.info("learner resumed from %s (step %d, stage %d)", found.path, self.trainer.steps, self.stage)
        else:
            self.trainer = Trainer(network.net_config(rules), learner, seed=seed)
            self.stage = 1 if stage1_steps > 0 else 2
            if not self._adopt_best() and self.stage == 2 and dqn is None:
                self._untrained_first_best()
        self.limiter = self._limiter()
        self.dqn: DQNTrainer | None = None
        if dqn is not None:
            target = found.extra.get("dqn_target") if found is not None else None
            self.dqn = DQNTrainer(self.trainer, dqn, target_state=target if isinstance(target, dict) else None)
            # Off-policy: every record teaches, the first random games (version -1) included.
            self.mirror: WindowMirror = TransitionWindow(
                replay.reader(), self.encoding, dqn, window_positions=replay_config.window_positions,
                limiter=self.limiter,
            )
        else:
            net = self.trainer.net_config
            self.mirror = WindowMirror(
                replay.reader(),
                self.encoding,
                window_positions=replay_config.window_positions,
                value_target=replay_config.value_target,
                limiter=self.limiter,
                opponent_target=net.opponent_head,
                aux=aux_store(net, self.encoding, replay_config.window_positions),
            )
            if self.stage == 2 and not keep_stage1_window:  # a restarted learner refills it alike
                self.mirror.min_model_version = SELFPLAY_MIN_VERSION
        self.rng = np.random.default_rng([seed, self.trainer.steps])
        self.metrics = Metrics()
        self._stop = threading.Event()
        self._last: dict[str, float] = {}
        self._rate = 0.0
        self._sampled = 0
        self._inserted = 0  # positions taken into the window, all stages
        self._exported: dict[str, float] = {}  # counter totals already exported, by series
        self._paused: bool | None = None  # what the registry was last told (DQN's actor pacing)

    def _limiter(self) -> RatioLimiter | None:
        r = self.replay_config
        if self.stage == 1:
            return None  # stage-1 data comes far faster than it can be learned: no ratio to keep
        return RatioLimiter(r.samples_per_insert, min_size_to_sample=r.min_positions, error_buffer=r.error_buffer)

    # -- the loop ---------------------------------------------------------------------------------

    def run(self) -> None:
        """Train until :meth:`stop`; every exception is logged before it ends the actor."""
        try:
            self._run()
        except Exception:
            log.exception("learner failed")
            raise

    def _run(self) -> None:
        replay, batch_size = self.replay_config, self.learner_config.batch_size
        if self.stage == 2 and self.trainer.steps > 0:
            self._publish_candidate()  # a restarted learner offers what it has
        window_start = time.perf_counter()
        steps_then = self.trainer.steps
        export_at = window_start
        pace_at = window_start
        while not self._stop.is_set():
            now = time.perf_counter()
            if now - window_start >= 5.0:  # also while waiting: a learner that waits trains at 0/s
                self._rate = (self.trainer.steps - steps_then) / (now - window_start)
                window_start, steps_then = now, self.trainer.steps
            self._inserted += self.mirror.poll(max_records=512)
            if time.perf_counter() >= export_at:  # also while waiting: the buffer's filling shows
                self._export_metrics()
                export_at = time.perf_counter() + 5.0
            if self.dqn is not None and time.perf_counter() >= pace_at:
                self._pace_actors()
                pace_at = time.perf_counter() + 0.25
            if self.mirror.size < min(replay.min_positions, replay.window_positions):
                time.sleep(0.05)
                continue
            batch = self.mirror.try_sample(batch_size, self.rng, augment=replay.augment)
            if batch is None:
                time.sleep(0.02)  # the ratio limiter says: wait for self-play
                continue
            self._last = self.dqn.step(batch) if self.dqn is not None else self.trainer.step(batch)
            self._sampled += batch_size
            self._after_step()
        self.checkpoint()

    def _pace_actors(self) -> None:
        """DQN: ask the actors to wait while they are ahead of the ratio limiter (its
        ``can_insert``), as Reverb's limiter blocks inserts. DQN actors play far faster than a
        learner on the same CPUs trains (no search), and a transition never sampled is a wasted
        one; AlphaZero's actors are never paused."""
        ahead = self.limiter is not None and not self.limiter.can_insert(0)
        if ahead != self._paused:
            self._paused = ahead
            self.registry.pause_actors.remote(ahead)

    def _after_step(self) -> None:
        steps = self.trainer.steps
        if self.stage == 1 and steps >= self.stage1_steps:
            self._finish_stage1()
        elif self.stage == 2 and steps % self.candidate_every_steps == 0:
            self._publish_candidate()
        if self.trainer.checkpoint_due:
            self.checkpoint()

    def _adopt_best(self) -> bool:
        """Without a checkpoint but with a best model in the registry (the learner's node was
        replaced and its checkpoints went with it), go on from the best model in stage 2: training
        stage 1 again would put a weaker network in as the best. Returns whether there was one."""
        import ray

        best = ray.get(self.registry.best.remote())
        if best is None:
            return False
        version, weights = best
        self.trainer.import_weights(weights)
        self.trainer.steps = version  # new candidates stay newer than the best
        self.stage = 2
        log.warning("learner without a checkpoint: going on from the best model v%d", version)
        return True

    def _untrained_first_best(self) -> None:
        """Tabula rasa (no stage 1): the untrained network, v0, is the first best model, so
        self-play has a network to start from and the evaluator measures where training began."""
        import ray

        version, weights = self.trainer.export_weights()
        ray.get(self.registry.set_best.remote(version, weights))
        log.info("no stage 1: the untrained network v%d is the first best model", version)

    def _finish_stage1(self) -> None:
        """The stage-1 network becomes the first best model; self-play starts with it."""
        version, weights = self.trainer.export_weights()
        self.registry.set_best.remote(version, weights)
        self.registry.publish_candidate.remote(version, weights)
        self.stage = 2
        self.checkpoint()
        if not self.keep_stage1_window:
            self.mirror.clear()
            self.mirror.min_model_version = SELFPLAY_MIN_VERSION
        self.limiter = self._limiter()
        self.mirror.limiter = self.limiter
        log.info("stage 1 done at step %d: its network is the first best model", version)

    def _publish_candidate(self) -> None:
        version, weights = self.trainer.export_weights()
        self.registry.publish_candidate.remote(version, weights)

    def checkpoint(self) -> Path:
        """Write a checkpoint now (atomic; the newest few are kept)."""
        extra = {"stage": self.stage, "config": self.run_config, "config_hash": self.config_hash}
        if self.dqn is not None:
            extra.update(self.dqn.checkpoint_extra())
        return save_checkpoint(self.checkpoints, self.trainer, extra)

    def stop(self) -> None:
        """Ask the loop to end after its current step (it writes a last checkpoint)."""
        self._stop.set()

    # -- reporting --------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Steps, stage, losses, window and limiter state (for the driver's progress line)."""
        mirror = self.mirror.stats()
        return {
            "steps": self.trainer.steps,
            "stage": self.stage,
            "steps_per_s": self._rate,
            "losses": dict(self._last),
            "window": mirror["size"],
            "inserted": mirror["inserted"],
            "sampled": self._sampled,
            "skipped": self.mirror.skipped_records(),
            "replay_unreachable_s": self._replay_unreachable_s(mirror),
            "warmups": mirror["warmups"],
            "device": str(self.trainer.device),
            "pid": os.getpid(),
        }

    @staticmethod
    def _replay_unreachable_s(mirror: dict[str, Any]) -> float:
        """How long the replay's Redis has been unreachable (0 for the memory backend)."""
        return float(mirror.get("reader", {}).get("unreachable_s", 0.0))

    def _export_metrics(self) -> None:
        m, last = self.metrics, self._last
        m.set("hopzero_replay_unreachable_seconds", self._replay_unreachable_s(self.mirror.stats()))
        m.set("hopzero_learner_steps_per_second", self._rate)
        m.set("hopzero_learner_lr", last.get("lr", 0.0))
        if self.dqn is not None:
            terms = (("total", "total"), ("huber", "huber"), ("l2", "l2"))
        else:
            value_key = "value_ce" if "value_ce" in last else "value_mse"   # three or more players: ce
            terms = (("total", "total"), ("value", value_key), ("policy", "policy_ce"), ("l2", "l2"),
                     ("opponent", "opponent_ce"), ("ownership", "ownership_ce"), ("score", "score_mse"))
        for term, key in terms:
            if term not in ("opponent", "ownership", "score") or key in last:   # those of the network's heads
                m.set("hopzero_learner_loss", last.get(key, 0.0), term=term)
        m.set("hopzero_replay_window_positions", self.mirror.size)
        m.set("hopzero_replay_window_capacity", self.replay_config.window_positions)
        self._inc_to("hopzero_learner_steps", self.trainer.steps)
        self._inc_to("hopzero_replay_inserted", self._inserted)
        self._inc_to("hopzero_replay_sampled", self._sampled)
        for kind, count in self.mirror.skipped_records().items():
            self._inc_to("hopzero_replay_skipped_records", count, kind=kind)

    def _inc_to(self, name: str, total: float, **tags: str) -> None:
        """Advance a counter to ``total`` (the learner keeps running totals; Ray counters take increments)."""
        key = name + repr(sorted(tags.items()))
        self.metrics.inc(name, total - self._exported.get(key, 0.0), **tags)
        self._exported[key] = total
