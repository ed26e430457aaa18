"""What both readers share: backoff, skip counting by kind, run filtering and the epoch."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from learner.records import GameRecord, RecordError, decode_record

__all__ = ["Backoff", "Clock", "ReaderBase", "log_often"]

log = logging.getLogger("learner.replay")

Clock = Callable[[], float]


def log_often(n: int) -> bool:
    """Log the 1st, 2nd, 4th, 8th... occurrence: every kind of trouble is seen, none floods the log."""
    return n & (n - 1) == 0


@dataclass
class Backoff:
    """Exponential backoff with jitter that never sleeps: callers ask ``ready()`` before trying.

    The n-th consecutive failure waits ``min(cap, base * 2**(n-1))`` times a uniform factor in
    ``[0.5, 1]`` (the jitter keeps many actors from reconnecting in lock-step after a restart).
    """

    base: float = 0.05
    cap: float = 5.0
    clock: Clock = time.monotonic
    rng: random.Random = field(default_factory=random.Random)
    failures: int = 0
    next_at: float = 0.0

    def ready(self) -> bool:
        return self.clock() >= self.next_at

    def failed(self) -> float:
        """Record a failure; return the delay until the next attempt."""
        self.failures += 1
        delay = min(self.cap, self.base * 2 ** (self.failures - 1)) * self.rng.uniform(0.5, 1.0)
        self.next_at = self.clock() + delay
        return delay

    def succeeded(self) -> None:
        self.failures = 0
        self.next_at = 0.0


class ReaderBase:
    """Decoding, run filtering, skip counters and the epoch, shared by both readers."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._epoch = 0
        self.skipped: dict[str, int] = {}
        self.records_read = 0
        self.resets = 0

    @property
    def epoch(self) -> int:
        return self._epoch

    def _skip(self, kind: str, where: str, why: str) -> None:
        n = self.skipped[kind] = self.skipped.get(kind, 0) + 1
        if log_often(n):
            log.warning("replay: skipped %s record %s (%s; %d %s skipped so far)", kind, where, why, n, kind)

    def _take(self, data: Any, where: str) -> GameRecord | None:
        """Decode one payload; None (counted, logged) when it must not reach the learner."""
        try:
            rec = decode_record(data)
        except RecordError as exc:
            self._skip(exc.kind, where, str(exc))
            return None
        if rec.run_id != self.run_id:
            self._skip("foreign", where, f"run {rec.run_id!r}, not {self.run_id!r}")
            return None
        self.records_read += 1
        return rec

    def _reset(self, why: str) -> None:
        self._epoch += 1
        self.resets += 1
        log.warning("replay: %s; the learner drops its window and warms up again (epoch %d)", why, self._epoch)

    def stats(self) -> dict[str, Any]:
        return {"epoch": self._epoch, "resets": self.resets, "records_read": self.records_read,
                "skipped": dict(self.skipped)}
