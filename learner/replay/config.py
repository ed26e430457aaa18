"""The replay buffer's configuration (the ``replay`` section of a run)."""

from __future__ import annotations

from dataclasses import dataclass

from ccengine.fields import check_fields, checked

__all__ = ["ReplayConfig"]


def _redis_url(url: str) -> bool:
    return not url or url.startswith(("redis://", "rediss://", "unix://"))


@dataclass(frozen=True, kw_only=True)
class ReplayConfig:
    """The replay buffer (this package, docs/REPLAY.md)."""

    backend: str = checked("memory", choices=("memory", "redis"))
    """``memory`` (in-process, held by a Ray actor: the embedded default) or ``redis``."""
    redis_url: str = checked("", test=_redis_url, means="empty or a redis://, rediss:// or unix:// URL",
                             bad=("localhost:6379",))
    """``redis://host:port/db``; empty with backend ``redis`` starts a local ``redis-server``."""
    window_positions: int = checked(200_000, ge=1)
    """Sliding window, in positions (paper: the last episode's ~7,000 examples)."""
    min_positions: int = checked(2_000, ge=0)
    """Warm-up: no training until the window holds this many positions."""
    samples_per_insert: float = checked(8.0, gt=0)
    """Positions sampled per position inserted (Reverb's ratio limiter)."""
    error_buffer: int = checked(8192, ge=0)
    """Slack of the ratio limiter, in samples."""
    value_target: str = checked("z", choices=("z", "zq"))
    """``z`` (game outcome; paper) or ``zq`` (mean of outcome and root value)."""
    augment: bool = checked(True)
    """Random reflection of each sample (paper: the data set doubled by reflection)."""

    def __post_init__(self) -> None:
        check_fields(self)
