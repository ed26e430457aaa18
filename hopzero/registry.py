"""The model registry: which weights are the best and which is the newest candidate.

One instance lives in a Ray actor for the whole run. Weights travel as plain dicts of numpy
arrays (Ray's object store moves them between processes and nodes; nothing is read from disk
per actor). Every version is published once; actors only ask for the best *version* between
moves, a few bytes, and fetch the weights when it changed: each version is published once and the
actors check a version number.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["ModelRegistry", "Weights"]

Weights = dict[str, np.ndarray]


class ModelRegistry:
    """Best and candidate weights by version; a promotion switches the best atomically."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # a threaded Ray actor may serve calls concurrently
        self._best: tuple[int, Weights] | None = None
        self._candidate: tuple[int, Weights] | None = None
        self._promotions = 0
        self._actors_paused: bool | None = None  # None: the learner has not said yet

    def set_best(self, version: int, weights: Weights) -> None:
        """Make ``weights`` the best model (stage 1's network, or the best of a resumed run)."""
        with self._lock:
            self._best = (int(version), weights)

    def publish_candidate(self, version: int, weights: Weights) -> None:
        """Offer new learner weights to the gate (replaces an older, not yet judged candidate)."""
        with self._lock:
            if self._candidate is None or version > self._candidate[0]:
                self._candidate = (int(version), weights)

    def promote(self, version: int, weights: Weights) -> None:
        """Make the gated ``weights`` (model ``version``) the best. The evaluator passes the
        weights it judged: the candidate slot may already hold a newer, unjudged version."""
        with self._lock:
            self._best = (int(version), weights)
            self._promotions += 1

    def best_version(self) -> int:
        """The best model's version, -1 before there is one."""
        with self._lock:
            return -1 if self._best is None else self._best[0]

    def best(self) -> tuple[int, Weights] | None:
        """``(version, weights)`` of the best model."""
        with self._lock:
            return self._best

    def candidate_after(self, version: int) -> tuple[int, Weights] | None:
        """The candidate, if it is newer than ``version``."""
        with self._lock:
            if self._candidate is None or self._candidate[0] <= version:
                return None
            return self._candidate

    def pause_actors(self, paused: bool) -> None:
        """The learner's word on whether actors that honour it (DQN's) should wait: they are
        ahead of it by more than its ratio limiter's error buffer."""
        with self._lock:
            self._actors_paused = bool(paused)

    def actors_paused(self) -> bool | None:
        """Whether actors that honour it should wait for the learner (see :meth:`pause_actors`);
        None until the learner has said (they wait: a learner that starts late would otherwise
        find a backlog that keeps the actors waiting while it works through it)."""
        with self._lock:
            return self._actors_paused

    def stats(self) -> dict[str, Any]:
        """Versions and the promotion count."""
        with self._lock:
            return {
                "best_version": -1 if self._best is None else self._best[0],
                "candidate_version": -1 if self._candidate is None else self._candidate[0],
                "promotions": self._promotions,
                "actors_paused": self._actors_paused,
            }
