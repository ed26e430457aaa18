"""Where searches run: three thread pools, and the limit on analyses.

- ``engine``: the engine seats' moves of every room (``Limits.engine_threads`` threads): a room's
  engine waits its turn behind the others, as a player waits at a busy table;
- ``analysis``: the analyses and hints browsers ask for, at most ``Limits.max_searches`` at once
  (:class:`SearchSlots`: one more is refused with a message, never queued);
- ``evals``: one thread that evaluates every position of the games people watch (the win-chance
  graph), so that it never takes a core from a reply.

The event loop never searches: it hands a search to a pool and awaits it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .limits import Limits

__all__ = ["Pools", "SearchSlots"]


class SearchSlots:
    """The analyses running now, at most ``limit``. :meth:`take` is called on the event loop
    when a search is accepted and answers at once (no await between the check and the count, so
    eight requests arriving together cannot all pass a check made before any of them counted)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self) -> bool:
        """Count one more analysis if there is room; False when the server is at its limit."""
        if self.used >= self.limit:
            return False
        self.used += 1
        return True

    def give_back(self) -> None:
        self.used -= 1


class Pools:
    """The server's thread pools (see the module docstring)."""

    def __init__(self, limits: Limits) -> None:
        self.engine = ThreadPoolExecutor(max_workers=limits.engine_threads, thread_name_prefix="hopzero-engine")
        self.analysis = ThreadPoolExecutor(max_workers=limits.max_searches, thread_name_prefix="hopzero-analysis")
        self.evals = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hopzero-evals")
        self.slots = SearchSlots(limits.max_searches)

    def shutdown(self) -> None:
        for pool in (self.engine, self.analysis, self.evals):
            pool.shutdown(wait=False, cancel_futures=True)
