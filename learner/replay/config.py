"""The replay buffer's configuration (the ``replay`` section of a run)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ReplayConfig"]


@dataclass(frozen=True, kw_only=True)
class ReplayConfig:
    """The replay buffer (this package, docs/REPLAY.md)."""

    backend: str = "memory"
    """``memory`` (in-process, held by a Ray actor: the embedded default) or ``redis``."""
    redis_url: str = ""
    """``redis://host:port/db``; empty with backend ``redis`` starts a local ``redis-server``."""
    window_positions: int = 200_000
    """Sliding window, in positions (paper: the last episode's ~7,000 examples)."""
    min_positions: int = 2_000
    """Warm-up: no training until the window holds this many positions."""
    samples_per_insert: float = 8.0
    """Positions sampled per position inserted (Reverb's ratio limiter)."""
    error_buffer: int = 8192
    """Slack of the ratio limiter, in samples."""
    value_target: str = "z"
    """``z`` (game outcome; paper) or ``zq`` (mean of outcome and root value)."""
    augment: bool = True
    """Random reflection of each sample (paper: the data set doubled by reflection)."""
