"""The learner's local window: the newest trainable positions in ring arrays, sampled into batches."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccengine.encoding import Encoding, frame_indices, mover_frame
from ccengine.rules import Rules, RulesError
from ccengine.symmetry import reflect_planes, reflect_policy, seat_reflection
from learner.records import GameRecord

from .limiter import RatioLimiter
from .protocols import ReplayReader
from .reader_base import log_often

__all__ = ["Batch", "WindowMirror"]

log = logging.getLogger("learner.replay")


@dataclass(frozen=True)
class Batch:
    """One training batch, ready for the network (``B`` positions)."""

    planes: np.ndarray
    """float32 ``[B, C, side, side]``: the encoding's input, reflected where ``reflected``."""
    policy: np.ndarray
    """float32 ``[B, policy_size]``: dense search distribution in the network's frame."""
    value: np.ndarray
    """float32 ``[B, P]``: the value target, the result vector (``z``, or its mean with the root
    value vector, ``(z + q) / 2``) in the mover's frame, entry 0 the mover (the trainer turns it
    into what the network's value head outputs: ``learner.training.value_target``)."""
    opponent_policy: np.ndarray | None
    """float32 ``[B, policy_size]``: the next ply's search distribution (the opponent's reply) in
    the frame of the position's mover, all zeros where there is none; None unless the window
    keeps these targets (``opponent_target``)."""
    weight: np.ndarray
    """float32 ``[B]``: per-position loss weight (1 unless the record carried weights)."""
    reflected: np.ndarray
    """bool ``[B]``: which samples were reflected."""
    index: np.ndarray
    """int64 ``[B]``: the positions' serial numbers in the window (for tests and metrics)."""
    aux: Any = None
    """The auxiliary targets (``learner.aux_targets.AuxBatch``), with an ``aux`` store only."""


class WindowMirror:
    """The learner's local copy of the newest ``window_positions`` trainable positions.

    Storage per position (ring arrays, preallocated): its piece lists with ``history`` states
    (int8 ``[H, P, k]``: built once at insert time from the record, so a position keeps its
    history planes after older positions of its game are evicted), side to move, the result
    vector z and the root value vector q (float32 ``[P]`` each, in the mover's frame), weight, and
    a slice of a second ring holding its sparse policy (int16 index, float32 prob).
    Sparse because a position has ~20-30 targets out of 294 (cc49) or 810 (cc81) indices: about
    0.2 KB a position instead of 1.2 KB (cc49) or 3.2 KB (cc81) dense float32 (docs/REPLAY.md).

    Policy indices are turned into the network's frame at insert time: a record's indices are
    absolute; an encoding with ``rotate`` sees the board in the mover's seat frame, so its
    destinations are turned too (``encoding.frame_indices``), exactly as ``Encoding.move_indices`` does.

    Positions a record does not ``keep``, and pass-only positions (no policy target), are not
    stored: they only feed the history of the positions after them.

    With ``opponent_target`` (a network with the opponent head), each position also keeps the
    target of the position after it in its record, the opponent's reply, right after its own
    entries in the ring; its indices are turned into the frame of the position's own mover (the
    frame of its input). The record's next position need not be kept itself; a position with
    none (the record's last, a reply without search) keeps no entries and trains no opponent loss.
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
        opponent_target: bool = False,
        aux: Any = None,
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
        self.opponent_target = opponent_target
        #: Auxiliary targets kept slot for slot (``learner.aux_targets.AuxTargetStore``), or None.
        self.aux = aux
        self._epoch = 0 if reader is None else reader.epoch
        w, h, k, players = window_positions, encoding.history, self.rules.k, self.rules.players
        self._hist = np.full((w, h, players, k), -1, dtype=np.int8)
        self._to_move = np.zeros(w, dtype=np.int8)
        self._z = np.zeros((w, players), dtype=np.float32)  # the result vector, in the mover's frame
        self._q = np.zeros((w, players), dtype=np.float32)  # the root value vector, in the mover's frame
        self._weight = np.ones(w, dtype=np.float32)
        self._pol_start = np.zeros(w, dtype=np.int64)  # serial number of its first entry
        self._pol_len = np.zeros(w, dtype=np.int32)
        self._opp_len = np.zeros(w, dtype=np.int32)  # the opponent target's, after the position's own
        cap = max(16, w * entries_per_position * (2 if opponent_target else 1))
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

    def skipped_records(self) -> dict[str, int]:
        """Records kept from the learner, by kind: those its reader refused (``malformed``,
        ``foreign`` run, ``future`` schema) and those the mirror refused (other rules, ``stale``)."""
        total = dict(self.reader.stats().get("skipped", {})) if self.reader is not None else {}
        for kind, count in self.skipped.items():
            total[kind] = total.get(kind, 0) + count
        return total

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
        if log_often(n):
            log.warning("replay mirror: skipped a %s record (%s; %d so far)", kind, why, n)

    def _admits(self, rec: GameRecord, kind: str, learner: str) -> bool:
        """Whether ``rec`` is a record of ``kind`` for this window's rules; counts and logs why not."""
        if rec.kind != kind:
            self._skip("foreign", f"a {rec.kind} record reached {learner} learner")
            return False
        try:
            rules = Rules.from_dict(rec.rules)
        except (RulesError, TypeError, ValueError) as exc:
            self._skip("malformed", str(exc))
            return False
        if rules != self.rules:
            self._skip("foreign", f"rules of preset {rec.preset!r} differ from the learner's {self.rules.name!r}")
            return False
        return True

    def add_record(self, rec: GameRecord) -> int:
        """Insert a (decoded, validated) record's trainable positions; return how many."""
        if not self._admits(rec, "search", "an AlphaZero"):  # a DQN game's one-hot choices are no search targets
            return 0
        if rec.model_version < self.min_model_version:
            self.skipped["stale"] = self.skipped.get("stale", 0) + 1  # expected at a stage switch: no log
            return 0
        counts = np.diff(rec.policy_offsets.astype(np.int64))
        keep = counts > 0 if rec.keep is None else (rec.keep & (counts > 0))
        sel = np.flatnonzero(keep)[-self.window:]  # a record longer than the window keeps its end
        self.records += 1
        if len(sel) == 0:
            return 0
        m = len(sel)

        # History [m, H, P, k]: state h plies before position t is full[h0 + t - h].
        h = self.encoding.history
        h0 = rec.start_pieces.shape[0]
        full = np.concatenate([rec.start_pieces[::-1], rec.pieces]).astype(np.int8)
        src = (h0 + sel)[:, None] - np.arange(h)[None, :]
        hist = np.where((src >= 0)[:, :, None, None], full[np.maximum(src, 0)], np.int8(-1))

        tm = rec.to_move[sel].astype(np.int64)
        z = mover_frame(np.broadcast_to(rec.scores, (m, self.rules.players)), tm)
        q = mover_frame(rec.root_shares[sel], tm)

        # Sparse targets of the kept positions, in the network's frame, renormalized
        # (float16 probabilities sum to 1 only within ~1e-3).
        lens = counts[sel]
        idx, prob = self._targets(rec, sel, lens, tm)
        opp_lens = np.zeros(m, dtype=np.int64)
        if self.opponent_target:
            # Position t's opponent target is position t + 1's own (None past the record's end),
            # seen from position t's mover.
            nxt = sel + 1
            has = nxt < len(counts)
            opp_lens[has] = counts[nxt[has]]
            opp_idx, opp_prob = self._targets(rec, nxt[has], opp_lens[has], tm[has])
            own = np.repeat(np.arange(m), lens)
            other = np.repeat(np.flatnonzero(has), opp_lens[has])
            # One block per position: its own entries, then its opponent's (a stable sort by
            # position keeps each group's order).
            order = np.argsort(np.concatenate([own * 2, other * 2 + 1]), kind="stable")
            idx = np.concatenate([idx, opp_idx])[order]
            prob = np.concatenate([prob, opp_prob])[order]

        if self.aux is not None:
            self.aux.insert((self._positions + np.arange(m)) % self.window, rec, sel)
        self._insert(hist, tm, z, q, None if rec.weight is None else rec.weight[sel],
                     lens, opp_lens, idx, prob)
        if self.limiter is not None:
            self.limiter.on_insert(m)
        return m

    def _targets(self, rec: GameRecord, rows: np.ndarray, lens: np.ndarray,
                 frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sparse targets of the record's positions ``rows`` (``lens`` entries each),
        concatenated: indices in the network's frame of the player ``frame[i]`` (its seat frame
        where the encoding turns the board), probabilities renormalized per position."""
        if len(rows) == 0 or lens.sum() == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        off = rec.policy_offsets.astype(np.int64)
        first = np.concatenate([[0], np.cumsum(lens)[:-1]])
        ent = np.repeat(off[rows], lens) + np.arange(lens.sum()) - np.repeat(first, lens)
        idx = rec.policy_index[ent].astype(np.int64)
        prob = rec.policy_prob[ent].astype(np.float32)
        idx = frame_indices(self.rules, idx, np.repeat(frame, lens), self.encoding.rotate)
        nonempty = lens > 0
        sums = np.add.reduceat(prob, first[nonempty])
        prob /= np.repeat(sums, lens[nonempty])
        return idx, prob

    def _insert(self, hist: np.ndarray, tm: np.ndarray, z: np.ndarray, q: np.ndarray, weight: np.ndarray | None,
                lens: np.ndarray, opp_lens: np.ndarray, idx: np.ndarray, prob: np.ndarray) -> None:
        m, w = len(tm), self.window
        serial = self._positions + np.arange(m)
        slots = serial % w
        block = lens + opp_lens
        starts = self._entries + np.concatenate([[0], np.cumsum(block)[:-1]])
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
        self._opp_len[slots] = opp_lens
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
        together (``ccengine.symmetry``), so the target names the reflected moves. Three or more
        players: the reflection also permutes the other seats (``seat_reflection``), so their
        occupancy planes and value entries are permuted with it; star4 has no reflection that
        keeps its seating (docs/TRAINING.md) and is not augmented.
        """
        serial, slots, tm = self._draw(batch_size, rng)
        planes = self.encoding.encode(self._hist[slots], tm)

        policy = np.zeros((batch_size, self.encoding.policy_size), dtype=np.float32)
        lens = self._pol_len[slots].astype(np.int64)
        rows = np.repeat(np.arange(batch_size), lens)
        first = np.concatenate([[0], np.cumsum(lens)[:-1]])
        ent = (np.repeat(self._pol_start[slots], lens) + np.arange(lens.sum()) - np.repeat(first, lens))
        ent %= len(self._ent_prob)
        policy[rows, self._ent_index[ent].astype(np.int64)] = self._ent_prob[ent]

        z = self._z[slots]
        value = z.copy() if self.value_target == "z" else 0.5 * (z + self._q[slots])
        opponent = None
        if self.opponent_target:
            opponent = np.zeros((batch_size, self.encoding.policy_size), dtype=np.float32)
            olens = self._opp_len[slots].astype(np.int64)
            rows = np.repeat(np.arange(batch_size), olens)
            first = np.concatenate([[0], np.cumsum(olens)[:-1]])
            ent = (np.repeat(self._pol_start[slots] + lens, olens) + np.arange(olens.sum()) - np.repeat(first, olens))
            ent %= len(self._ent_prob)
            opponent[rows, self._ent_index[ent].astype(np.int64)] = self._ent_prob[ent]
        players = self.rules.players
        perm = seat_reflection(self.rules)
        if perm is None:
            augment = False   # star4: no reflection keeps the mover's view of the seating
        flip = rng.random(batch_size) < 0.5 if augment else np.zeros(batch_size, dtype=bool)
        if flip.any() and perm is not None and (perm != np.arange(players)).any():
            h = self.encoding.history
            order = np.arange(planes.shape[1])
            order[: players * h] = (np.arange(h)[:, None] * players + perm[None, :]).reshape(-1)
            planes[flip] = planes[flip][:, order]
            value[flip] = value[flip][:, perm]
        if flip.any():
            planes[flip] = reflect_planes(planes[flip], self.rules)
            policy[flip] = reflect_policy(self.rules, policy[flip])
            if opponent is not None:
                opponent[flip] = reflect_policy(self.rules, opponent[flip])
        return Batch(planes=planes, policy=policy, value=value.astype(np.float32), opponent_policy=opponent,
                     weight=self._weight[slots].copy(), reflected=flip, index=serial.astype(np.int64),
                     aux=None if self.aux is None else self.aux.sample(slots, tm, flip))

    def _draw(self, batch_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``batch_size`` positions drawn uniformly (with replacement): their serial numbers, ring
        slots and sides to move."""
        size = self.size
        if size == 0:
            raise ValueError("the window is empty: nothing to sample (warm up first)")
        serial = (self._positions - size) + rng.integers(0, size, batch_size)
        slots = serial % self.window
        return serial, slots, self._to_move[slots].astype(np.int64)

    def try_sample(self, batch_size: int, rng: np.random.Generator, augment: bool = True) -> Batch | None:
        """A batch when the limiter allows one (without a limiter: when the window is not empty)."""
        if self.limiter is None:
            return self.sample(batch_size, rng, augment) if self.size else None
        if not self.limiter.try_sample(batch_size, self.size):
            return None
        return self.sample(batch_size, rng, augment)
