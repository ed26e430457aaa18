"""The replay buffer's configuration (the ``replay`` section of a run)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from plumbing.fields import FieldError, check_fields, checked

from .redis_url import PASSWORD_ADVICE, has_password, redact_url

__all__ = ["ReplayConfig", "check_key_prefix"]

#: What a key prefix may hold: printable, no spaces, at most 200 characters (it names Redis keys
#: and appears in commands an operator types, e.g. ``redis-cli DEL <prefix>:run <prefix>:games``).
_KEY_PREFIX = re.compile(r"[A-Za-z0-9_.:\-]{1,200}")


def _redis_url(url: str) -> bool:
    return not url or url.startswith(("redis://", "rediss://", "unix://"))


@dataclass(frozen=True, kw_only=True)
class ReplayConfig:
    """The replay buffer (this package, docs/REPLAY.md)."""

    backend: str = checked("memory", choices=("memory", "redis"))
    """``memory`` (in-process, held by a Ray actor: the embedded default) or ``redis``."""
    redis_url: str = checked("", test=_redis_url, means="empty or a redis://, rediss:// or unix:// URL",
                             bad=("localhost:6379",))
    """``redis://host:port/db``; empty with backend ``redis`` starts a local ``redis-server``. Never
    with a password: the configuration is written to ``config.yaml``, hashed and kept in every
    checkpoint (the password comes from the environment or a file: ``redis_url.PASSWORD_ADVICE``)."""
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
    key_prefix: str = checked("", test=lambda prefix: not prefix or bool(_KEY_PREFIX.fullmatch(prefix)),
                              means="empty or 1-200 characters of A-Z a-z 0-9 _ . : -", bad=("a b", "x" * 201))
    """Redis keys of this run: ``<key_prefix>:run`` and ``<key_prefix>:games``. Empty (the
    default): ``hopzero:<run id>``, one prefix per run directory, the same on every resume. Two
    runs never share a prefix: the second is refused when it starts."""

    send_batch: int = checked(8, ge=1, le=64)
    """Redis backend: an actor sends its finished games once this many are queued, in one round
    trip (1 = each game at once). Batches of 8 take Redis less than half the CPU per game of
    single sends (docs/BENCHMARKS.md, ``hopzero bench replay``), which is what lets one Redis serve
    1,000 actors with 10x to spare. A killed actor loses what it had queued."""
    send_delay_s: float = checked(5.0, ge=0)
    """Redis backend: the longest a finished game waits for its batch, in seconds (checked after
    each self-play step). An actor finishing one game a second sends ~5 per round trip."""

    def __post_init__(self) -> None:
        # Before the generic check, whose message would echo the password.
        if isinstance(self.redis_url, str) and has_password(self.redis_url):
            raise FieldError("redis_url", f"must not hold a password ({redact_url(self.redis_url)}): {PASSWORD_ADVICE}")
        check_fields(self)

    def key_prefix_for(self, run_id: str) -> str:
        """The Redis key prefix of run ``run_id`` (``key_prefix``, or derived from the run id)."""
        prefix = self.key_prefix or f"hopzero:{run_id}"
        check_key_prefix(prefix)
        return prefix


def check_key_prefix(prefix: str) -> None:
    """Raise ``ValueError`` naming the problem when ``prefix`` cannot be a replay key prefix."""
    if not _KEY_PREFIX.fullmatch(prefix):
        raise ValueError(f"replay.key_prefix={prefix!r}: use 1-200 characters of A-Z a-z 0-9 _ . : -")
