"""The replay buffer: one interface, two backends, the learner's local window and the rate limiter.

    actors --add(record)--> [ MemoryReplay (in-process / Ray actor) | RedisReplay (stream) ]
                                         |  poll(): new valid records since the last poll
                                         v
    learner: WindowMirror (last N positions, local numpy rings) --sample()--> Batch
             RatioLimiter: may the learner draw another batch yet?

- :class:`ReplayWriter` / :class:`ReplayReader` are the two protocols; :class:`MemoryReplay` and
  :class:`MemoryReader` the in-process backend, ``learner.replay_redis.RedisReplay`` the Redis one
  (imported lazily here, so the in-process backend needs no ``redis`` package).
- A reader decodes and checks every record (``learner.records``); a bad one is skipped, counted by
  kind and logged, never raised. A reader that finds its buffer gone (restarted empty, recreated)
  or owned by another run bumps its ``epoch``; the mirror answers by emptying its window and
  resetting the limiter, i.e. it warms up again instead of training on what is not there.
- :class:`WindowMirror` follows a reader incrementally and keeps the newest ``window_positions``
  trainable positions in preallocated ring arrays; it never re-reads the buffer per batch.
- :class:`RatioLimiter` is Reverb's ``SampleToInsertRatio`` in positions, with an injected clock.

Details and the measured numbers behind the choices: docs/REPLAY.md.
"""

from __future__ import annotations

import logging
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ccengine.encoding import Encoding
from ccengine.rules import Rules, RulesError
from ccengine.symmetry import reflect_planes, reflect_policy

from .records import GameRecord, RecordError, decode_record, encode_record

if TYPE_CHECKING:
    from .replay_redis import RedisReplay

__all__ = [
    "Backoff",
    "Batch",
    "MemoryReader",
    "MemoryReplay",
    "RatioLimiter",
    "RedisReplay",
    "ReplayReader",
    "ReplayWriter",
    "WindowMirror",
]

log = logging.getLogger(__name__)

Clock = Callable[[], float]


def __getattr__(name: str) -> Any:
    # RedisReplay lives in replay_redis (it imports the redis package); load it on first use.
    if name == "RedisReplay":
        from .replay_redis import RedisReplay

        return RedisReplay
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# Protocols
# ---------------------------------------------------------------------------------------------


@runtime_checkable
class ReplayWriter(Protocol):
    """What an actor holds: it adds finished games."""

    def add(self, record: GameRecord) -> None: ...


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


# ---------------------------------------------------------------------------------------------
# Shared reader machinery: backoff, skip counting, identity
# ---------------------------------------------------------------------------------------------


def _often(n: int) -> bool:
    """Log the 1st, 2nd, 4th, 8th... occurrence: every kind of trouble is seen, none floods the log."""
    return n & (n - 1) == 0


@dataclass
class Backoff:
    """Exponential backoff with jitter that never sleeps: callers ask ``ready()`` before trying.

    The n-th consecutive failure waits ``min(cap, base * 2**(n-1))`` times a uniform factor in
    ``[0.5, 1]`` (the jitter keeps many actors from reconnecting in lock-step after a restart).
    """

    base: float = 0.05
    cap: float = 5.0
    clock: Clock = time.monotonic
    rng: random.Random = field(default_factory=random.Random)
    failures: int = 0
    next_at: float = 0.0

    def ready(self) -> bool:
        return self.clock() >= self.next_at

    def failed(self) -> float:
        """Record a failure; return the delay until the next attempt."""
        self.failures += 1
        delay = min(self.cap, self.base * 2 ** (self.failures - 1)) * self.rng.uniform(0.5, 1.0)
        self.next_at = self.clock() + delay
        return delay

    def succeeded(self) -> None:
        self.failures = 0
        self.next_at = 0.0


class _ReaderBase:
    """Decoding, run filtering, skip counters and the epoch, shared by both readers."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._epoch = 0
        self.skipped: dict[str, int] = {}
        self.records_read = 0
        self.resets = 0

    @property
    def epoch(self) -> int:
        return self._epoch

    def _skip(self, kind: str, where: str, why: str) -> None:
        n = self.skipped[kind] = self.skipped.get(kind, 0) + 1
        if _often(n):
            log.warning("replay: skipped %s record %s (%s; %d %s skipped so far)", kind, where, why, n, kind)

    def _take(self, data: Any, where: str) -> GameRecord | None:
        """Decode one payload; None (counted, logged) when it must not reach the learner."""
        try:
            rec = decode_record(data)
        except RecordError as exc:
            self._skip(exc.kind, where, str(exc))
            return None
        if rec.run_id != self.run_id:
            self._skip("foreign", where, f"run {rec.run_id!r}, not {self.run_id!r}")
            return None
        self.records_read += 1
        return rec

    def _reset(self, why: str) -> None:
        self._epoch += 1
        self.resets += 1
        log.warning("replay: %s; the learner drops its window and warms up again (epoch %d)", why, self._epoch)

    def stats(self) -> dict[str, Any]:
        return {"epoch": self._epoch, "resets": self.resets, "records_read": self.records_read,
                "skipped": dict(self.skipped)}


# ---------------------------------------------------------------------------------------------
# In-process backend
# ---------------------------------------------------------------------------------------------


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

    def run_id(self) -> str:
        return self._run_id

    def incarnation(self) -> str:
        return self._incarnation

    def add_encoded(self, data: bytes) -> int:
        """Append one payload (not decoded here: readers check it); return its id."""
        rid = self._next
        self._items[rid] = bytes(data)
        self._bytes += len(data)
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
        first = self._next - len(self._items)
        start = min(max(cursor, first), self._next)
        stop = min(start + max(max_items, 0), self._next)
        return stop, [self._items[i] for i in range(start, stop)]

    def stats(self) -> dict[str, Any]:
        return {"run_id": self._run_id, "incarnation": self._incarnation, "records": len(self._items),
                "next_id": self._next, "bytes": self._bytes}


class MemoryReader(_ReaderBase):
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


# ---------------------------------------------------------------------------------------------
# Rate limiter
# ---------------------------------------------------------------------------------------------


@dataclass
class RatioLimiter:
    """Samples-to-insert ratio, as Reverb's ``SampleToInsertRatio``, counted in positions.

    The learner may draw ``n`` samples when the window holds at least ``min_size_to_sample``
    positions and, after drawing, ``sampled <= samples_per_insert * (inserted - min_size) +
    error_buffer``: each position is sampled about ``samples_per_insert`` times over its life, so
    training neither overfits a small buffer (too many samples) nor falls behind the actors.
    Choose ``error_buffer >= batch size`` so the first batch after warm-up is allowed. Actors
    are never blocked (a game in flight is not thrown away); ``can_insert`` only reports whether
    they run ahead. Time is read from ``clock`` (injectable), only for the wait metrics.
    """

    samples_per_insert: float
    min_size_to_sample: int
    error_buffer: float
    clock: Clock = time.monotonic
    inserted: int = 0
    sampled: int = 0
    waited_s: float = 0.0
    """Total time the learner spent refused (closed waits)."""
    waits: int = 0
    """Number of closed waits."""
    last_wait_s: float = 0.0
    _blocked_since: float | None = None

    def __post_init__(self) -> None:
        if self.samples_per_insert <= 0 or self.min_size_to_sample < 0 or self.error_buffer < 0:
            raise ValueError("samples_per_insert must be > 0, min_size_to_sample and error_buffer >= 0")

    def on_insert(self, n: int) -> None:
        self.inserted += n

    def reset(self) -> None:
        """The window was emptied: warm up again (counts restart; an open wait goes on)."""
        self.inserted = self.sampled = 0

    def can_sample(self, n: int, size: int) -> bool:
        """Whether ``n`` more samples are allowed with ``size`` positions in the window."""
        floor = self.min_size_to_sample
        if size < max(floor, 1) or self.inserted < floor:
            return False
        return self.sampled + n <= self.samples_per_insert * (self.inserted - floor) + self.error_buffer

    def can_insert(self, n: int) -> bool:
        """Whether ``n`` more inserts keep the actors within the error buffer of the learner."""
        if self.inserted + n <= self.min_size_to_sample:
            return True
        ahead = self.samples_per_insert * (self.inserted + n - self.min_size_to_sample) - self.sampled
        return ahead <= self.error_buffer

    def inserts_needed(self, n: int, size: int) -> int:
        """Positions still to insert before ``n`` samples are allowed (0 when allowed now)."""
        need_ratio = (self.sampled + n - self.error_buffer) / self.samples_per_insert + self.min_size_to_sample
        need = max(self.min_size_to_sample - size, int(np.ceil(need_ratio)) - self.inserted, 0)
        return need

    def try_sample(self, n: int, size: int) -> bool:
        """Count ``n`` samples and return True when allowed; else start (or go on) waiting."""
        now = self.clock()
        if not self.can_sample(n, size):
            if self._blocked_since is None:
                self._blocked_since = now
            return False
        self.sampled += n
        if self._blocked_since is not None:
            self.last_wait_s = now - self._blocked_since
            self.waited_s += self.last_wait_s
            self.waits += 1
            self._blocked_since = None
        return True

    def stats(self) -> dict[str, Any]:
        waiting = 0.0 if self._blocked_since is None else self.clock() - self._blocked_since
        return {"inserted": self.inserted, "sampled": self.sampled, "waited_s": self.waited_s + waiting,
                "waits": self.waits, "last_wait_s": self.last_wait_s, "waiting_s": waiting}


# ---------------------------------------------------------------------------------------------
# The learner's window
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """One training batch, ready for the network (``B`` positions)."""

    planes: np.ndarray
    """float32 ``[B, C, n, n]``: the encoding's input, reflected where ``reflected``."""
    policy: np.ndarray
    """float32 ``[B, policy_size]``: dense search distribution in the network's frame."""
    value: np.ndarray
    """float32 ``[B]``: value target from the mover's view (z, or (z + q) / 2)."""
    weight: np.ndarray
    """float32 ``[B]``: per-position loss weight (1 unless the record carried weights)."""
    reflected: np.ndarray
    """bool ``[B]``: which samples were reflected."""
    index: np.ndarray
    """int64 ``[B]``: the positions' serial numbers in the window (for tests and metrics)."""


class WindowMirror:
    """The learner's local copy of the newest ``window_positions`` trainable positions.

    Storage per position (ring arrays, preallocated): its piece lists with ``history`` states
    (int8 ``[H, 2, k]``: built once at insert time from the record, so a position keeps its
    history planes after older positions of its game are evicted), side to move, z, q,
    weight, and a slice of a second ring holding its sparse policy (int16 index, float32 prob).
    Sparse because a position has ~20-30 targets out of 294 (cc49) or 810 (cc81) indices: about
    0.2 KB a position instead of 1.2 KB (cc49) or 3.2 KB (cc81) dense float32 (docs/REPLAY.md).

    Policy indices are turned into the network's frame at insert time: a record's indices are
    absolute; an encoding with ``rotate`` sees player 1's board rotated, so its destinations
    are rotated too (``e -> cells - 1 - e``), exactly as ``Encoding.move_indices`` does.

    Positions a record does not ``keep``, and pass-only positions (no policy target), are not
    stored: they only feed the history of the positions after them.
    """

    def __init__(
        self,
        reader: ReplayReader | None,
        encoding: Encoding,
        *,
        window_positions: int,
        value_target: str = "z",
        limiter: RatioLimiter | None = None,
        entries_per_position: int = 32,
    ) -> None:
        if window_positions < 1:
            raise ValueError(f"window_positions={window_positions} must be at least 1")
        if value_target not in ("z", "zq"):
            raise ValueError(f"value_target={value_target!r}; valid: z, zq")
        self.reader = reader
        self.encoding = encoding
        self.rules: Rules = encoding.rules
        self.window = window_positions
        self.value_target = value_target
        self.limiter = limiter
        self._epoch = 0 if reader is None else reader.epoch
        w, h, k = window_positions, encoding.history, self.rules.k
        self._hist = np.full((w, h, 2, k), -1, dtype=np.int8)
        self._to_move = np.zeros(w, dtype=np.int8)
        self._z = np.zeros(w, dtype=np.int8)
        self._q = np.zeros(w, dtype=np.float32)
        self._weight = np.ones(w, dtype=np.float32)
        self._pol_start = np.zeros(w, dtype=np.int64)  # serial number of its first entry
        self._pol_len = np.zeros(w, dtype=np.int32)
        cap = max(16, w * entries_per_position)
        self._ent_index = np.zeros(cap, dtype=np.int16 if self.rules.k * self.rules.cells < 2**15 else np.int32)
        self._ent_prob = np.zeros(cap, dtype=np.float32)
        self._positions = 0  # positions inserted since the last clear (serial of the next one)
        self._entries = 0  # policy entries inserted since the last clear
        self.records = 0
        self.skipped: dict[str, int] = {}
        self.warmups = 0
        #: Records of older models are skipped (stage 2 ignores stage-1 games still in flight).
        self.min_model_version = -1

    # -- reading ------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Positions in the window now."""
        return min(self._positions, self.window)

    @property
    def inserted(self) -> int:
        """Positions inserted since the window was last emptied."""
        return self._positions

    def stats(self) -> dict[str, Any]:
        out = {"size": self.size, "inserted": self._positions, "records": self.records, "warmups": self.warmups,
               "skipped": dict(self.skipped), "policy_entries_capacity": len(self._ent_prob)}
        if self.reader is not None:
            out["reader"] = self.reader.stats()
        if self.limiter is not None:
            out["limiter"] = self.limiter.stats()
        return out

    # -- following the buffer -----------------------------------------------------------------

    def clear(self) -> None:
        """Empty the window (the arrays stay allocated)."""
        self._positions = self._entries = 0

    def poll(self, max_records: int = 256) -> int:
        """Take the reader's new records; return the positions added. Warms up again on a reset."""
        if self.reader is None:
            return 0
        records = self.reader.poll(max_records)
        if self.reader.epoch != self._epoch:
            self._epoch = self.reader.epoch
            self.warmups += 1
            log.warning("replay mirror: buffer reset (epoch %d): dropping %d positions, warming up again",
                        self._epoch, self.size)
            self.clear()
            if self.limiter is not None:
                self.limiter.reset()
        return sum(self.add_record(r) for r in records)

    def _skip(self, kind: str, why: str) -> None:
        n = self.skipped[kind] = self.skipped.get(kind, 0) + 1
        if _often(n):
            log.warning("replay mirror: skipped a %s record (%s; %d so far)", kind, why, n)

    def add_record(self, rec: GameRecord) -> int:
        """Insert a (decoded, validated) record's trainable positions; return how many."""
        try:
            rules = Rules.from_dict(rec.rules)
        except (RulesError, TypeError, ValueError) as exc:
            self._skip("malformed", str(exc))
            return 0
        if rules != self.rules:
            self._skip("foreign", f"rules of preset {rec.preset!r} differ from the learner's {self.rules.name!r}")
            return 0
        if rec.model_version < self.min_model_version:
            self.skipped["stale"] = self.skipped.get("stale", 0) + 1  # expected at a stage switch: no log
            return 0
        t_len = rec.num_positions
        counts = np.diff(rec.policy_offsets.astype(np.int64))
        keep = counts > 0 if rec.keep is None else (rec.keep & (counts > 0))
        sel = np.flatnonzero(keep)[-self.window:]  # a record longer than the window keeps its end
        self.records += 1
        if len(sel) == 0:
            return 0
        m = len(sel)

        # History [m, H, 2, k]: state h plies before position t is full[h0 + t - h].
        h = self.encoding.history
        h0 = rec.start_pieces.shape[0]
        full = np.concatenate([rec.start_pieces[::-1], rec.pieces]).astype(np.int8)
        src = (h0 + sel)[:, None] - np.arange(h)[None, :]
        hist = np.where((src >= 0)[:, :, None, None], full[np.maximum(src, 0)], np.int8(-1))

        tm = rec.to_move[sel].astype(np.int64)
        z = np.where(tm == 0, rec.outcome, -rec.outcome).astype(np.int8)

        # Sparse targets of the kept positions, in the network's frame, renormalized
        # (float16 probabilities sum to 1 only within ~1e-3).
        off = rec.policy_offsets.astype(np.int64)
        lens = counts[sel]
        first = np.concatenate([[0], np.cumsum(lens)[:-1]])
        ent = np.repeat(off[sel], lens) + np.arange(lens.sum()) - np.repeat(first, lens)
        idx = rec.policy_index[ent].astype(np.int64)
        prob = rec.policy_prob[ent].astype(np.float32)
        owner_tm = np.repeat(tm, lens)
        if self.encoding.rotate:
            cells = self.rules.cells
            pid, dest = np.divmod(idx, cells)
            idx = np.where(owner_tm == 1, pid * cells + (cells - 1 - dest), idx)
        sums = np.repeat(np.add.reduceat(prob, first), lens)
        prob /= sums

        self._insert(hist, tm, z, rec.root_value[sel], None if rec.weight is None else rec.weight[sel],
                     lens, idx, prob)
        if self.limiter is not None:
            self.limiter.on_insert(m)
        return m

    def _insert(self, hist: np.ndarray, tm: np.ndarray, z: np.ndarray, q: np.ndarray, weight: np.ndarray | None,
                lens: np.ndarray, idx: np.ndarray, prob: np.ndarray) -> None:
        m, w = len(tm), self.window
        serial = self._positions + np.arange(m)
        slots = serial % w
        starts = self._entries + np.concatenate([[0], np.cumsum(lens)[:-1]])
        # The oldest position alive after this insert decides how many entries must stay.
        oldest = max(0, self._positions + m - w)
        oldest_start = self._pol_start[oldest % w] if oldest < self._positions else starts[oldest - self._positions]
        needed = self._entries + len(idx) - int(oldest_start)
        if needed > len(self._ent_prob):
            self._grow(int(oldest_start), needed)
        self._hist[slots] = hist
        self._to_move[slots] = tm
        self._z[slots] = z
        self._q[slots] = q
        self._weight[slots] = 1.0 if weight is None else weight
        self._pol_start[slots] = starts
        self._pol_len[slots] = lens
        cap = len(self._ent_prob)
        where = (self._entries + np.arange(len(idx))) % cap
        self._ent_index[where] = idx
        self._ent_prob[where] = prob
        self._positions += m
        self._entries += len(idx)

    def _grow(self, live_from: int, needed: int) -> None:
        """Enlarge the policy-entry ring, keeping the live entries at their serial numbers."""
        old = len(self._ent_prob)
        cap = max(2 * old, needed)
        serials = np.arange(live_from, self._entries)
        index = np.zeros(cap, dtype=self._ent_index.dtype)
        prob = np.zeros(cap, dtype=np.float32)
        index[serials % cap] = self._ent_index[serials % old]
        prob[serials % cap] = self._ent_prob[serials % old]
        self._ent_index, self._ent_prob = index, prob
        log.info("replay mirror: policy entry ring grown to %d entries", cap)

    # -- sampling -----------------------------------------------------------------------------

    def sample(self, batch_size: int, rng: np.random.Generator, augment: bool = True) -> Batch:
        """``batch_size`` positions drawn uniformly (with replacement) from the window.

        With ``augment``, each sample is reflected with probability 1/2: planes and policy
        together (``ccengine.symmetry``), so the target names the reflected moves.
        """
        size = self.size
        if size == 0:
            raise ValueError("the window is empty: nothing to sample (warm up first)")
        serial = (self._positions - size) + rng.integers(0, size, batch_size)
        slots = serial % self.window
        tm = self._to_move[slots].astype(np.int64)
        planes = self.encoding.encode(self._hist[slots], tm)

        policy = np.zeros((batch_size, self.encoding.policy_size), dtype=np.float32)
        lens = self._pol_len[slots].astype(np.int64)
        rows = np.repeat(np.arange(batch_size), lens)
        first = np.concatenate([[0], np.cumsum(lens)[:-1]])
        ent = (np.repeat(self._pol_start[slots], lens) + np.arange(lens.sum()) - np.repeat(first, lens))
        ent %= len(self._ent_prob)
        policy[rows, self._ent_index[ent].astype(np.int64)] = self._ent_prob[ent]

        z = self._z[slots].astype(np.float32)
        value = z if self.value_target == "z" else 0.5 * (z + self._q[slots])
        flip = rng.random(batch_size) < 0.5 if augment else np.zeros(batch_size, dtype=bool)
        if flip.any():
            planes[flip] = reflect_planes(planes[flip])
            policy[flip] = reflect_policy(self.rules, policy[flip])
        return Batch(planes=planes, policy=policy, value=value.astype(np.float32),
                     weight=self._weight[slots].copy(), reflected=flip, index=serial.astype(np.int64))

    def try_sample(self, batch_size: int, rng: np.random.Generator, augment: bool = True) -> Batch | None:
        """A batch when the limiter allows one (without a limiter: when the window is not empty)."""
        if self.limiter is None:
            return self.sample(batch_size, rng, augment) if self.size else None
        if not self.limiter.try_sample(batch_size, self.size):
            return None
        return self.sample(batch_size, rng, augment)
