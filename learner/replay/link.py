"""How a component reaches the replay buffer: the embedded store in a Ray actor, or Redis.

``memory``: one ``MemoryReplay`` lives in a Ray actor (the embedded default, no servers);
writers send encoded records to it without waiting, readers fetch what is new since their
cursor. ``redis``: every component talks to the Redis server itself (``RedisReplay``), so
actors on any node of a cluster write to the same buffer.
"""

from __future__ import annotations

from typing import Any

from .config import check_key_prefix
from .memory import MemoryReader, StoreProxy, StoreWriter
from .protocols import ReplayReader, ReplayWriter

__all__ = ["ReplayLink"]


class ReplayLink:
    """The replay settings a component needs to open its writer or reader (picklable for Ray)."""

    def __init__(
        self,
        backend: str,
        run_id: str,
        *,
        store: str = "",
        redis_url: str = "",
        key_prefix: str = "",
        send_batch: int = 1,
        send_delay_s: float = 0.0,
    ) -> None:
        """``store``: the name of the ``MemoryReplay`` Ray actor (memory backend); a name rather
        than a handle, so that the link is plain data that a restarted actor can be given again.
        ``key_prefix``: the run's Redis keys (``ReplayConfig.key_prefix_for``; redis backend).
        ``send_batch``/``send_delay_s``: how a Redis writer batches its records (``ReplayConfig``)."""
        if backend not in ("memory", "redis"):
            raise ValueError(f"replay backend {backend!r}; valid: memory, redis")
        if backend == "memory" and not store:
            raise ValueError("the memory backend needs the store actor")
        if backend == "redis" and not redis_url:
            raise ValueError("the redis backend needs a redis URL")
        if backend == "redis":
            check_key_prefix(key_prefix)
        self.backend = backend
        self.run_id = run_id
        self.store = store
        self.redis_url = redis_url
        self.key_prefix = key_prefix
        self.send_batch = send_batch
        self.send_delay_s = send_delay_s

    def describe(self) -> str:
        """The backend in a few words, for the driver's first line (no URL: it may hold a password)."""
        return "memory" if self.backend == "memory" else f"redis, keys {self.key_prefix}:*"

    def writer(self) -> ReplayWriter:
        """The writer an actor adds its finished games to."""
        if self.backend == "memory":
            return StoreWriter(self._store())
        return self._redis()

    def reader(self) -> ReplayReader:
        """A reader that follows the buffer from its oldest record."""
        if self.backend == "memory":
            return MemoryReader(StoreProxy(self._store()), run_id=self.run_id)
        return self._redis()

    def _store(self) -> Any:
        import ray

        return ray.get_actor(self.store)

    def _redis(self) -> Any:
        from .redis_stream import RedisReplay  # the redis package only where Redis is used

        return RedisReplay(self.redis_url, run_id=self.run_id, prefix=self.key_prefix, send_batch=self.send_batch,
                           send_delay_s=self.send_delay_s)
