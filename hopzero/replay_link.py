"""How a component reaches the replay buffer: the embedded store in a Ray actor, or Redis.

``memory``: one ``MemoryReplay`` lives in a Ray actor (the embedded default, no servers);
writers send encoded records to it without waiting, readers fetch what is new since their
cursor. ``redis``: every component talks to the Redis server itself (``RedisReplay``), so
actors on any node of a cluster write to the same buffer.
"""

from __future__ import annotations

from typing import Any

from learner.records import GameRecord, encode_record
from learner.replay import MemoryReader, ReplayReader

__all__ = ["ReplayLink", "StoreProxy"]


class StoreProxy:
    """A ``MemoryReplay`` Ray actor seen as a local store (what ``MemoryReader`` expects)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def _call(self, method: str, *args: Any) -> Any:
        import ray

        return ray.get(getattr(self.handle, method).remote(*args))

    def run_id(self) -> str:
        return self._call("run_id")

    def incarnation(self) -> str:
        return self._call("incarnation")

    def read_since(self, cursor: int, max_items: int) -> tuple[int, list[bytes]]:
        return self._call("read_since", cursor, max_items)

    def stats(self) -> dict[str, Any]:
        return self._call("stats")


class _StoreWriter:
    """Fire-and-forget writes into the store actor (Ray keeps them in order per caller)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def add(self, record: GameRecord) -> None:
        self.handle.add_encoded.remote(encode_record(record))


class ReplayLink:
    """The replay settings a component needs to open its writer or reader (picklable for Ray)."""

    def __init__(self, backend: str, run_id: str, *, store: Any = None, redis_url: str = "") -> None:
        if backend not in ("memory", "redis"):
            raise ValueError(f"replay backend {backend!r}; valid: memory, redis")
        if backend == "memory" and store is None:
            raise ValueError("the memory backend needs the store actor")
        if backend == "redis" and not redis_url:
            raise ValueError("the redis backend needs a redis URL")
        self.backend = backend
        self.run_id = run_id
        self.store = store
        self.redis_url = redis_url

    def writer(self) -> Any:
        """Something with ``add(record)``."""
        if self.backend == "memory":
            return _StoreWriter(self.store)
        return self._redis()

    def reader(self) -> ReplayReader:
        """A reader that follows the buffer from its oldest record."""
        if self.backend == "memory":
            return MemoryReader(StoreProxy(self.store), run_id=self.run_id)
        return self._redis()

    def _redis(self) -> Any:
        from learner.replay_redis import RedisReplay

        return RedisReplay(self.redis_url, run_id=self.run_id)
