"""The two replay protocols: what an actor writes to and what the learner's mirror reads from."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from learner.records import GameRecord

__all__ = ["ReplayReader", "ReplayWriter"]


@runtime_checkable
class ReplayWriter(Protocol):
    """What an actor holds: it adds finished games, and ``send`` pushes what is pending now.

    Every backend implements both (the in-process writer sends at once and its ``send`` is a
    no-op), so callers never ask which backend they hold.
    """

    def add(self, record: GameRecord) -> None: ...

    def send(self) -> int: ...


@runtime_checkable
class ReplayReader(Protocol):
    """What the learner's mirror holds: new valid records since the last poll.

    ``epoch`` counts the times the buffer was found gone or foreign; when it changes, what the
    reader delivered before no longer describes the buffer and the consumer warms up again.
    ``poll`` never raises for bad records or (Redis) lost connections.
    """

    @property
    def epoch(self) -> int: ...

    def poll(self, max_items: int = 256) -> list[GameRecord]: ...

    def stats(self) -> dict[str, Any]: ...
