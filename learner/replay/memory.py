"""The in-process backend: the store (run as a Ray actor by the driver), its reader and writer."""

from __future__ import annotations

import logging
import secrets
import threading
from typing import Any

from learner.records import GameRecord, encode_record

from .reader_base import ReaderBase

__all__ = ["MemoryReader", "MemoryReplay", "StoreProxy", "StoreWriter"]

log = logging.getLogger("learner.replay")


class MemoryReplay:
    """The in-process buffer: the newest ``max_records`` encoded records under increasing ids.

    Its methods take and return only bytes, ints, strings, lists and dicts, so the driver can
    run it as a Ray actor unchanged (``ray.remote(MemoryReplay)``) for several processes.
    ``incarnation`` is new for every instance: a reader that sees it change knows the buffer
    it followed is gone (e.g. the actor holding it was restarted).
    """

    def __init__(self, run_id: str, max_records: int = 50_000) -> None:
        if max_records < 1:
            raise ValueError(f"max_records={max_records} must be at least 1")
        self._run_id = run_id
        self._incarnation = secrets.token_hex(8)
        self._max = max_records
        self._items: dict[int, bytes] = {}  # id -> payload; insertion order is id order
        self._next = 0
        self._bytes = 0
        # The driver runs it as a threaded Ray actor (max_concurrency > 1): an add and a read must
        # not interleave, or a read sees the new payload before the new id and asks for an evicted one.
        self._lock = threading.Lock()

    def run_id(self) -> str:
        return self._run_id

    def incarnation(self) -> str:
        return self._incarnation

    def add_encoded(self, data: bytes) -> int:
        """Append one payload (not decoded here: readers check it); return its id."""
        payload = bytes(data)
        with self._lock:
            rid = self._next
            self._items[rid] = payload
            self._bytes += len(payload)
            self._next += 1
            while len(self._items) > self._max:
                oldest = next(iter(self._items))
                self._bytes -= len(self._items.pop(oldest))
            return rid

    def add(self, record: GameRecord) -> None:
        """The :class:`ReplayWriter` method, for a writer in the same process."""
        if record.run_id != self._run_id:
            raise ValueError(f"record of run {record.run_id!r} added to the buffer of run {self._run_id!r}")
        self.add_encoded(encode_record(record))

    def read_since(self, cursor: int, max_items: int = 256) -> tuple[int, list[bytes]]:
        """Payloads with ids ``>= cursor`` (from the oldest kept when older ones were evicted).

        Returns ``(new_cursor, payloads)``; the payloads have the contiguous ids
        ``new_cursor - len(payloads) .. new_cursor - 1``. A cursor past the newest id (from an
        earlier incarnation) gives ``(next_id, [])``: the cursor going backwards tells the reader.
        """
        with self._lock:
            first = self._next - len(self._items)
            start = min(max(cursor, first), self._next)
            stop = min(start + max(max_items, 0), self._next)
            return stop, [self._items[i] for i in range(start, stop)]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"run_id": self._run_id, "incarnation": self._incarnation, "records": len(self._items),
                    "next_id": self._next, "bytes": self._bytes}


class MemoryReader(ReaderBase):
    """A :class:`ReplayReader` over a :class:`MemoryReplay`.

    ``store`` is anything with ``run_id()``, ``incarnation()`` and ``read_since()``: the store
    itself, or for a Ray actor a thin proxy whose methods do ``ray.get(actor.m.remote(...))``.
    """

    def __init__(self, store: Any, run_id: str | None = None) -> None:
        super().__init__(store.run_id() if run_id is None else run_id)
        self._store = store
        self._cursor = 0
        self._identity: tuple[str, str] | None = None
        self._foreign = False
        self.missed = 0

    def poll(self, max_items: int = 256) -> list[GameRecord]:
        identity = (self._store.run_id(), self._store.incarnation())
        if identity[0] != self.run_id:
            if not self._foreign:
                self._foreign = True
                self._reset(f"the buffer belongs to run {identity[0]!r}, not {self.run_id!r}")
            return []
        if self._foreign:  # ours again (the foreign store was replaced): read it from the start
            self._foreign = False
            self._cursor = 0
        elif self._identity is not None and identity != self._identity:
            self._reset("the in-process buffer was replaced (new incarnation)")
            self._cursor = 0
        self._identity = identity
        new_cursor, items = self._store.read_since(self._cursor, max_items)
        if new_cursor < self._cursor:
            self._reset(f"the buffer's ids went back from {self._cursor} to {new_cursor}")
            self._cursor = 0
            new_cursor, items = self._store.read_since(0, max_items)
        first = new_cursor - len(items)
        if first > self._cursor:
            self.missed += first - self._cursor
            log.warning("replay: %d records were evicted before the learner read them (%d in all); "
                        "poll more often or keep more records", first - self._cursor, self.missed)
        self._cursor = new_cursor
        out = [self._take(data, f"#{first + i}") for i, data in enumerate(items)]
        return [r for r in out if r is not None]

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "cursor": self._cursor, "missed": self.missed, "foreign_buffer": self._foreign}


class StoreProxy:
    """A :class:`MemoryReplay` Ray actor seen as a local store (what :class:`MemoryReader` expects)."""

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


class StoreWriter:
    """A :class:`ReplayWriter` into the store actor: fire-and-forget, in order per caller (Ray
    keeps a caller's calls to one actor in order), so ``send`` has nothing left to push."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def add(self, record: GameRecord) -> None:
        self.handle.add_encoded.remote(encode_record(record))

    def send(self) -> int:
        return 0
