"""The replay buffer package: one interface, two backends, the learner's window and rate limiter.

    actors --add(record)--> [ MemoryReplay (in-process / Ray actor) | RedisReplay (stream) ]
                                         |  poll(): new valid records since the last poll
                                         v
    learner: WindowMirror (last N positions, local numpy rings) --sample()--> Batch
             RatioLimiter: may the learner draw another batch yet?

Modules: ``protocols`` (:class:`ReplayWriter`, :class:`ReplayReader`), ``memory`` (the in-process
store :class:`MemoryReplay`, run by the driver as a Ray actor, with its reader and writer),
``redis_stream`` (:class:`RedisReplay`, writer and reader in one), ``reader_base`` (what both
readers share), ``window`` (:class:`WindowMirror`), ``limiter`` (:class:`RatioLimiter`),
``link`` (:class:`ReplayLink`: the one way a component opens its writer or reader) and
``config`` (:class:`ReplayConfig`).
- A reader decodes and checks every record (``learner.records``); a bad one is skipped, counted by
  kind and logged, never raised. A reader that finds its buffer gone (restarted empty, recreated)
  or owned by another run bumps its ``epoch``; the mirror answers by emptying its window and
  resetting the limiter, i.e. it warms up again instead of training on what is not there.
- :class:`WindowMirror` follows a reader incrementally and keeps the newest ``window_positions``
  trainable positions in preallocated ring arrays; it never re-reads the buffer per batch.
- :class:`RatioLimiter` is Reverb's ``SampleToInsertRatio`` in positions, with an injected clock.

Details and the measured numbers behind the choices: docs/REPLAY.md.
"""

from .config import ReplayConfig
from .limiter import RatioLimiter
from .link import ReplayLink
from .memory import MemoryReader, MemoryReplay
from .protocols import ReplayReader, ReplayWriter
from .reader_base import Backoff
from .redis_stream import ForeignRunError, RedisReplay
from .window import Batch, WindowMirror

__all__ = [
    "Backoff",
    "Batch",
    "ForeignRunError",
    "MemoryReader",
    "MemoryReplay",
    "RatioLimiter",
    "RedisReplay",
    "ReplayConfig",
    "ReplayLink",
    "ReplayReader",
    "ReplayWriter",
    "WindowMirror",
]
