"""The Redis backend of the replay buffer: one stream of game records and one run-identity key.

Layout under a ``prefix``, one per run (a run's is ``ReplayConfig.key_prefix_for(run_id)``,
``hopzero:<run id>`` unless set; docs/REPLAY.md):

- ``<prefix>:run``  hash ``{run_id, incarnation, created}``. Created if absent (NX semantics) by
  the first writer or reader of a run; ``incarnation`` is a fresh random token each time it is
  created, so a Redis that lost everything and was re-registered is told apart from the one a
  reader followed, even when the run id is the same.
- ``<prefix>:games`` stream, one entry per record: ``XADD ... MAXLEN ~ max_records * data <bytes>``.
  Writers append through one Lua script that creates the run key when absent and refuses to
  append to another run's buffer: check and append are atomic and cost one round trip.

Nothing here blocks or raises on a lost connection: every call is gated by a :class:`Backoff`
(exponential, jittered, non-sleeping). A writer keeps records in a bounded pending queue until
Redis is back; a reader returns ``[]`` and tries again later. What a reader detects and does:

==============================================  ============================================
what it sees                                    what it does
==============================================  ============================================
run key absent (restart without persistence)    re-registers the run, reads from the start,
                                                bumps ``epoch`` (the mirror warms up again)
same run, new incarnation                       same (the buffer was lost and re-created)
stream gone or its ids behind the cursor        same (stream flushed or re-created)
another run's key                               logs an error, reads nothing, bumps ``epoch``
entries trimmed before they were read           counts them (``missed``), logs, goes on
a record that fails ``decode_record``           skips, counts by kind, logs, goes on
==============================================  ============================================
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import deque
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from learner.records import GameRecord, encode_record

from .reader_base import Backoff, Clock, ReaderBase, log_often
from .redis_url import redact_url

__all__ = ["ForeignRunError", "RedisReplay", "connect", "foreign_message", "redact_url"]

log = logging.getLogger(__name__)

# Errors that mean "Redis is not there right now" (BusyLoadingError, a server still loading its
# append-only file, is a ConnectionError subclass in redis-py).
_TRANSIENT = (RedisConnectionError, RedisTimeoutError, OSError)

_FOREIGN = "HOPZERO_FOREIGN_RUN"

# KEYS: run, games. ARGV: run_id, incarnation (used only when creating), created, maxlen, payloads...
_ADD_SCRIPT = """
local ok, rid = pcall(redis.call, 'HGET', KEYS[1], 'run_id')
if not ok then return redis.error_reply('HOPZERO_FOREIGN_RUN <not a hopzero run key>') end
if not rid then
  redis.call('HSET', KEYS[1], 'run_id', ARGV[1], 'incarnation', ARGV[2], 'created', ARGV[3])
  rid = ARGV[1]
end
if rid ~= ARGV[1] then return redis.error_reply('HOPZERO_FOREIGN_RUN ' .. rid) end
local ids = {}
for i = 5, #ARGV do
  ids[#ids + 1] = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'data', ARGV[i])
end
return ids
"""


class ForeignRunError(RuntimeError):
    """The buffer under this prefix belongs to another run: a writer must not add to it."""

    def __init__(self, prefix: str, owner: str, run_id: str) -> None:
        super().__init__(foreign_message(prefix, owner, run_id))
        self.prefix, self.owner, self.run_id = prefix, owner, run_id


def foreign_message(prefix: str, owner: str, run_id: str) -> str:
    """One line: whose buffer this is, and the two ways out."""
    return (f"Redis key prefix {prefix!r} belongs to run {owner!r}, not to run {run_id!r}: set another "
            f"replay.key_prefix (empty, the default, gives each run its own) or delete the old run's keys "
            f"(redis-cli DEL {prefix}:run {prefix}:games)")


def connect(url: str, *, socket_timeout: float = 5.0) -> redis.Redis:
    """A client for ``url`` (``redis://host:port/db``) as the replay wants it.

    Binary responses (records are bytes), short timeouts, and redis-py's own retries off: a
    retry loop inside a call would block the learner; :class:`Backoff` retries across calls.
    """
    return redis.Redis.from_url(
        url, decode_responses=False, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout,
        retry=Retry(NoBackoff(), 0),
    )


def _sid(raw: bytes | str | None) -> tuple[int, int]:
    """A stream id ``ms-seq`` as a comparable tuple."""
    if raw is None:
        return (0, 0)
    text = raw.decode() if isinstance(raw, bytes) else raw
    ms, _, seq = text.partition("-")
    return (int(ms), int(seq or 0))


def _sid_str(sid: tuple[int, int]) -> str:
    return f"{sid[0]}-{sid[1]}"


def _text(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


class RedisReplay(ReaderBase):
    """Writer (actors) and reader (learner) of one run's records in Redis.

    Each instance has its own read cursor; actors only ``add``, the learner only ``poll``.
    ``max_records`` bounds the stream (approximately, Redis trims whole nodes): choose about
    ``1.5 * window_positions / positions kept per game`` so a restarted learner refills its window.
    ``send_batch``/``send_delay_s``: a writer sends once ``send_batch`` records are queued or the
    oldest queued one has waited ``send_delay_s`` seconds, all of them in one round trip (Redis
    spends less than half the CPU per record on batches of 8: docs/BENCHMARKS.md); the default
    ``1`` sends each record at once. ``batch``: the most records of one round trip.
    """

    def __init__(
        self,
        client: redis.Redis | str,
        *,
        run_id: str,
        prefix: str = "hopzero",
        max_records: int = 20_000,
        pending_max: int = 1_000,
        batch: int = 64,
        send_batch: int = 1,
        send_delay_s: float = 0.0,
        clock: Clock = time.monotonic,
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__(run_id)
        self.client = connect(client) if isinstance(client, str) else client
        if self.client.get_connection_kwargs().get("decode_responses"):
            raise ValueError("the replay needs a client with decode_responses=False (records are bytes)")
        self.prefix = prefix
        self.run_key = f"{prefix}:run"
        self.games_key = f"{prefix}:games"
        self.max_records = max_records
        if not 1 <= send_batch <= batch:
            raise ValueError(f"send_batch={send_batch} must be in 1..batch ({batch})")
        if send_delay_s < 0:
            raise ValueError(f"send_delay_s={send_delay_s} must be >= 0")
        self.batch = batch
        self.send_batch = send_batch
        self.send_delay_s = send_delay_s
        self.clock = clock
        self.backoff = backoff or Backoff(clock=clock)
        self._add = self.client.register_script(_ADD_SCRIPT)
        # writer side
        self._pending: deque[bytes] = deque()
        self._oldest_at = 0.0  # when the oldest queued record was queued
        self.pending_max = pending_max
        self.added = 0
        self.dropped = 0
        self.connection_errors = 0
        self._down_since: float | None = None  # clock time of the first failure of an outage
        # reader side
        self._cursor = (0, 0)
        self._incarnation: str | None = None  # the buffer being followed
        self._consumed = 0  # entries at or before the cursor in this incarnation (read or missed)
        self._foreign: str | None = None
        self.missed = 0

    # -- shared -------------------------------------------------------------------------------

    def _down(self, what: str, exc: Exception) -> None:
        self.connection_errors += 1
        if self._down_since is None:
            self._down_since = self.clock()
        delay = self.backoff.failed()
        if log_often(self.backoff.failures):
            log.warning("replay: Redis unreachable during %s (%s: %s); retry in %.2fs (failure %d)",
                        what, type(exc).__name__, exc, delay, self.backoff.failures)

    def _up(self) -> None:
        if self._down_since is not None:
            log.warning("replay: Redis reachable again after %.0f s (%d failed attempts)",
                        self.clock() - self._down_since, self.backoff.failures)
            self._down_since = None
        self.backoff.succeeded()

    @property
    def unreachable_s(self) -> float:
        """How long Redis has been unreachable (since the first failed call of this outage); 0
        while it answers."""
        return 0.0 if self._down_since is None else max(self.clock() - self._down_since, 0.0)

    def _run_args(self) -> list[Any]:
        return [self.run_id, secrets.token_hex(8), str(time.time()), self.max_records]

    # -- writer -------------------------------------------------------------------------------

    def add(self, record: GameRecord) -> None:
        """Queue one record and send what is queued (when Redis is reachable); never blocks."""
        if record.run_id != self.run_id:
            raise ValueError(f"record of run {record.run_id!r} added to the buffer of run {self.run_id!r}")
        self.add_encoded(encode_record(record))

    def add_encoded(self, data: bytes) -> None:
        """Queue one encoded record (the oldest queued one is dropped when the queue is full)."""
        if len(self._pending) >= self.pending_max:
            self._pending.popleft()
            self.dropped += 1
            if log_often(self.dropped):
                log.warning("replay: pending queue full while Redis is away: %d records dropped", self.dropped)
        if not self._pending:
            self._oldest_at = self.clock()
        self._pending.append(bytes(data))
        self.send()

    def send(self, *, force: bool = False) -> int:
        """Send the queued records when they are due (``send_batch`` of them, or the oldest
        ``send_delay_s`` old; ``force``: now); return how many are still queued.

        Raises :class:`ForeignRunError` when another run owns the prefix.
        """
        due = force or len(self._pending) >= self.send_batch or self.clock() - self._oldest_at >= self.send_delay_s
        while due and self._pending and self.backoff.ready():
            chunk = [self._pending[i] for i in range(min(self.batch, len(self._pending)))]
            try:
                self._add(keys=[self.run_key, self.games_key], args=[*self._run_args(), *chunk])
            except ResponseError as exc:
                if str(exc).startswith(_FOREIGN):
                    raise ForeignRunError(self.prefix, str(exc)[len(_FOREIGN) + 1:], self.run_id) from None
                self._down("add", exc)  # e.g. OOM: keep the records queued and try later
                break
            except _TRANSIENT as exc:
                self._down("add", exc)
                break
            self._up()
            for _ in chunk:
                self._pending.popleft()
            self.added += len(chunk)
        return len(self._pending)

    def flush(self, timeout: float = 10.0) -> bool:
        """Block (sleeping through backoffs) until the queue is sent or ``timeout``; True when empty."""
        deadline = time.monotonic() + timeout
        while self.send(force=True) and time.monotonic() < deadline:
            time.sleep(max(0.0, min(self.backoff.next_at - self.backoff.clock(), deadline - time.monotonic(), 1.0)))
        return not self._pending

    @property
    def pending(self) -> int:
        return len(self._pending)

    # -- reader -------------------------------------------------------------------------------

    def claim(self) -> None:
        """Register this run under the prefix now, or raise :class:`ForeignRunError` when another
        run holds it (what a driver does before it starts any component). Unlike the rest of this
        class it raises when Redis cannot be reached: the caller decides how long to wait."""
        try:
            self._add(keys=[self.run_key, self.games_key], args=self._run_args())
        except ResponseError as exc:
            if str(exc).startswith(_FOREIGN):
                raise ForeignRunError(self.prefix, str(exc)[len(_FOREIGN) + 1:], self.run_id) from None
            raise

    def _register(self) -> None:
        """Create the run key when absent (the same script as ``add``, with no records)."""
        try:
            self.claim()
        except ForeignRunError:
            pass  # _identity's next snapshot sees the owner and says so

    def _restart(self, why: str) -> None:
        """The followed buffer is gone: start over from the stream's beginning."""
        self._reset(why)
        self._cursor = (0, 0)
        self._consumed = 0
        self._incarnation = None

    def poll(self, max_items: int = 256) -> list[GameRecord]:
        """New valid records since the last poll (``[]`` while Redis is away or in backoff)."""
        if not self.backoff.ready():
            return []
        try:
            out = self._poll(max_items)
        except (*_TRANSIENT, redis.RedisError) as exc:  # the learner never stops for Redis
            self._down("poll", exc)
            return []
        self._up()
        return out

    def _poll(self, max_items: int) -> list[GameRecord]:
        for _ in range(2):  # a second pass after a restart reads the new buffer at once
            # One transaction: identity, stream counters and entries are one consistent snapshot.
            pipe = self.client.pipeline(transaction=True)
            pipe.hgetall(self.run_key)
            pipe.xinfo_stream(self.games_key)
            pipe.xread({self.games_key: _sid_str(self._cursor)}, count=max_items)
            ident, info, entries = pipe.execute(raise_on_error=False)
            verdict = self._identity(ident)
            if verdict == "foreign":
                return []
            if verdict == "again" or not self._stream_ok(info):
                continue
            return self._consume(entries, info)
        return []

    def _identity(self, ident: Any) -> str:
        """Compare the run key with the buffer being followed and act on a difference.

        Returns ``ok`` (read on), ``again`` (the identity changed: take a new snapshot) or
        ``foreign`` (another run owns the prefix: read nothing).
        """
        if isinstance(ident, Exception):  # e.g. WRONGTYPE: someone else's key under our name
            ident = {b"run_id": b"<not a hopzero run key>"}
        run = _text(ident.get(b"run_id")) if ident else None
        inc = _text(ident.get(b"incarnation")) if ident else None
        if run is None:
            if self._incarnation is not None:
                self._restart("the run key is gone: Redis restarted without persistence or was flushed")
            self._foreign = None
            self._register()  # (on first contact with an empty Redis there is nothing to warm up from)
            return "again"
        if run != self.run_id:
            if self._foreign != run:
                log.error("replay: %s; reading nothing until it is ours",
                          foreign_message(self.prefix, run, self.run_id))
                self._foreign = run
                self._restart(f"foreign run {run!r} owns the buffer")
            return "foreign"
        if self._foreign is not None:
            log.warning("replay: the buffer belongs to run %r again; reading it from the start", self.run_id)
            self._foreign = None
        if self._incarnation is None:
            self._incarnation = inc
        elif inc != self._incarnation:
            self._restart("the buffer was lost and re-created (new incarnation of the run key)")
            return "again"
        return "ok"

    def _stream_ok(self, info: Any) -> bool:
        """Check the stream still holds what the cursor says; restart when it does not."""
        if isinstance(info, Exception):  # no stream yet (or it was deleted)
            if self._cursor != (0, 0):
                self._restart("the games stream is gone")
                return False
            return True
        last = _sid(info.get("last-generated-id"))
        added = info.get("entries-added")  # Redis >= 7
        if last < self._cursor or (added is not None and int(added) < self._consumed):
            self._restart("the games stream was re-created (its ids are behind the learner's cursor)")
            return False
        return True

    def _consume(self, entries: Any, info: Any) -> list[GameRecord]:
        if not isinstance(info, Exception) and info.get("first-entry") and "entries-added" in info:
            first = _sid(info["first-entry"][0])
            if first > self._cursor:
                # Trimming removes from the head, so everything up to the cursor is gone and the
                # rest of the trimmed entries were never read.
                lost = int(info["entries-added"]) - int(info["length"]) - self._consumed
                if lost > 0:
                    self._consumed += lost
                    if self._cursor == (0, 0) and self.records_read == 0:
                        log.info("replay: joining run %r: %d older records already trimmed", self.run_id, lost)
                    else:
                        self.missed += lost
                        log.warning("replay: %d records were trimmed before the learner read them (%d in all); "
                                    "raise max_records or poll more often", lost, self.missed)
        if isinstance(entries, Exception):
            raise entries  # e.g. WRONGTYPE: poll() logs it and backs off
        if isinstance(entries, dict):  # RESP3 shape
            entries = list(entries.items())
        out = []
        for _stream, items in entries or []:
            for sid, fields in items:
                self._cursor = _sid(sid)
                self._consumed += 1
                data = fields.get(b"data") if isinstance(fields, dict) else None
                rec = self._take(data, f"{_text(sid)}") if data is not None else None
                if data is None:
                    self._skip("malformed", _text(sid), "entry without a data field")
                if rec is not None:
                    out.append(rec)
        return out

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "cursor": _sid_str(self._cursor), "missed": self.missed, "added": self.added,
                "pending": len(self._pending), "dropped": self.dropped,
                "connection_errors": self.connection_errors, "unreachable_s": round(self.unreachable_s, 1),
                "foreign_run": self._foreign}
