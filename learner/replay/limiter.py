"""The learner's rate limiter: samples per inserted position, as Reverb's ``SampleToInsertRatio``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .reader_base import Clock

__all__ = ["RatioLimiter"]


@dataclass
class RatioLimiter:
    """Samples-to-insert ratio, as Reverb's ``SampleToInsertRatio``, counted in positions.

    The learner may draw ``n`` samples when the window holds at least ``min_size_to_sample``
    positions and, after drawing, ``sampled <= samples_per_insert * (inserted - min_size) +
    error_buffer``: each position is sampled about ``samples_per_insert`` times over its life, so
    training neither overfits a small buffer (too many samples) nor falls behind the actors.
    Choose ``error_buffer >= batch size`` so the first batch after warm-up is allowed. Actors
    are never blocked (a game in flight is not thrown away); ``can_insert`` only reports whether
    they run ahead. Time is read from ``clock`` (injectable), only for the wait metrics.
    """

    samples_per_insert: float
    min_size_to_sample: int
    error_buffer: float
    clock: Clock = time.monotonic
    inserted: int = 0
    sampled: int = 0
    waited_s: float = 0.0
    """Total time the learner spent refused (closed waits)."""
    waits: int = 0
    """Number of closed waits."""
    last_wait_s: float = 0.0
    _blocked_since: float | None = None

    def __post_init__(self) -> None:
        if self.samples_per_insert <= 0 or self.min_size_to_sample < 0 or self.error_buffer < 0:
            raise ValueError("samples_per_insert must be > 0, min_size_to_sample and error_buffer >= 0")

    def on_insert(self, n: int) -> None:
        self.inserted += n

    def reset(self) -> None:
        """The window was emptied: warm up again (counts restart; an open wait goes on)."""
        self.inserted = self.sampled = 0

    def can_sample(self, n: int, size: int) -> bool:
        """Whether ``n`` more samples are allowed with ``size`` positions in the window."""
        floor = self.min_size_to_sample
        if size < max(floor, 1) or self.inserted < floor:
            return False
        return self.sampled + n <= self.samples_per_insert * (self.inserted - floor) + self.error_buffer

    def can_insert(self, n: int) -> bool:
        """Whether ``n`` more inserts keep the actors within the error buffer of the learner."""
        if self.inserted + n <= self.min_size_to_sample:
            return True
        ahead = self.samples_per_insert * (self.inserted + n - self.min_size_to_sample) - self.sampled
        return ahead <= self.error_buffer

    def inserts_needed(self, n: int, size: int) -> int:
        """Positions still to insert before ``n`` samples are allowed (0 when allowed now)."""
        need_ratio = (self.sampled + n - self.error_buffer) / self.samples_per_insert + self.min_size_to_sample
        need = max(self.min_size_to_sample - size, int(np.ceil(need_ratio)) - self.inserted, 0)
        return need

    def try_sample(self, n: int, size: int) -> bool:
        """Count ``n`` samples and return True when allowed; else start (or go on) waiting."""
        now = self.clock()
        if not self.can_sample(n, size):
            if self._blocked_since is None:
                self._blocked_since = now
            return False
        self.sampled += n
        if self._blocked_since is not None:
            self.last_wait_s = now - self._blocked_since
            self.waited_s += self.last_wait_s
            self.waits += 1
            self._blocked_since = None
        return True

    def stats(self) -> dict[str, Any]:
        waiting = 0.0 if self._blocked_since is None else self.clock() - self._blocked_since
        return {"inserted": self.inserted, "sampled": self.sampled, "waited_s": self.waited_s + waiting,
                "waits": self.waits, "last_wait_s": self.last_wait_s, "waiting_s": waiting}
