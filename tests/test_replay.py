"""The in-process replay buffer, the learner's window (sliding, sampling, augmentation) and the limiter."""

from __future__ import annotations

import dataclasses
import sys
import threading

import numpy as np
import pytest
from replay_helpers import random_game_record

from ccengine import Position, encoding_for, new_state, preset
from ccengine.encoding import index_moves
from ccengine.symmetry import reflect_planes, reflect_policy
from learner.records import SCHEMA, GameRecord, encode_record
from learner.replay import Backoff, MemoryReader, MemoryReplay, RatioLimiter, ReplayReader, WindowMirror

RULES = preset("cc49")
ENC = encoding_for(RULES, "general")


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def games(n: int, rules=RULES, run_id: str = "run-a", plies: int = 30, **kw) -> tuple[list[GameRecord], list]:
    """``n`` records and, per record, the tracker's piece lists of each position (the oracle)."""
    recs, lists = [], []
    for s in range(n):
        per: list[np.ndarray] = []
        recs.append(random_game_record(rules, 1000 + s, run_id=run_id, max_plies=plies, skip=s % 4, lists=per, **kw))
        lists.append(per)
    return recs, lists


def expected_positions(recs, lists, enc=ENC):
    """(planes, dense policy, z, q) of every trainable position, in insertion order, built without the mirror
    (z and q: the result vector and the root value vector in the mover's frame)."""
    rules = enc.rules
    out = []
    for rec, per in zip(recs, lists):
        for t in range(rec.num_positions):
            idx, prob = rec.policy(t)
            if len(idx) == 0 or (rec.keep is not None and not rec.keep[t]):
                continue
            tm = int(rec.to_move[t])
            current = per[t][0]
            moves = index_moves(rules, current, idx, tm, rotate=False)  # absolute indices -> moves
            pol = np.zeros(enc.policy_size, np.float32)
            pol[enc.move_indices(current, moves, tm)] = prob.astype(np.float32)
            pol /= pol.sum()
            z, q = np.roll(rec.scores, -tm), np.roll(rec.root_shares[t], -tm)  # the mover's frame: mover first
            out.append((enc.encode_one(per[t][: enc.history], tm), pol, z, q))
    return out


def mirror_of(recs, window: int, enc=ENC, **kw) -> tuple[WindowMirror, MemoryReplay]:
    store = MemoryReplay("run-a")
    for r in recs:
        store.add(r)
    mirror = WindowMirror(MemoryReader(store), enc, window_positions=window, **kw)
    while mirror.poll(max_records=3):  # a few records per poll: incremental following
        pass
    return mirror, store


# ---------------------------------------------------------------------------------------------
# MemoryReplay and its reader
# ---------------------------------------------------------------------------------------------


def test_memory_replay_ids_and_eviction():
    store = MemoryReplay("run-a", max_records=3)
    ids = [store.add_encoded(bytes([i])) for i in range(5)]
    assert ids == [0, 1, 2, 3, 4]
    assert store.read_since(0, 10) == (5, [b"\x02", b"\x03", b"\x04"])  # 0 and 1 evicted
    assert store.read_since(3, 1) == (4, [b"\x03"])
    assert store.read_since(5, 10) == (5, [])
    assert store.read_since(99, 10) == (5, [])  # a cursor from another incarnation comes back behind
    assert store.stats()["records"] == 3 and store.stats()["bytes"] == 3
    assert isinstance(MemoryReader(store), ReplayReader)


def test_reader_skips_bad_records_in_the_middle_and_counts_them():
    recs, lists = games(3)
    store = MemoryReplay("run-a")
    store.add(recs[0])
    good = encode_record(recs[1])
    store.add_encoded(good[: len(good) // 2])  # truncated
    store.add_encoded(b"\x80\x04\x95 not a record")  # a pickle header
    store.add_encoded(encode_record(dataclasses.replace(recs[1], run_id="run-b")))  # another run's
    doc_future = good.replace(b"\xa6schema" + bytes([SCHEMA]), b"\xa6schema\x09")
    assert doc_future != good
    store.add_encoded(doc_future)
    store.add(recs[1])
    store.add(recs[2])
    mirror = WindowMirror(MemoryReader(store), ENC, window_positions=10_000)
    added = mirror.poll()
    assert added == len(expected_positions(recs, lists)) == mirror.size
    stats = mirror.stats()
    assert stats["records"] == 3
    assert stats["reader"]["skipped"] == {"malformed": 2, "foreign": 1, "future": 1}
    assert mirror.poll() == 0  # nothing new, nothing re-read


def test_mirror_skips_records_of_other_rules():
    cc81 = random_game_record(preset("cc81"), 3, max_plies=6)
    mirror = WindowMirror(None, ENC, window_positions=100)
    assert mirror.add_record(cc81) == 0
    assert mirror.stats()["skipped"] == {"foreign": 1}


def test_reader_counts_records_evicted_before_it_read_them(caplog):
    recs, _ = games(2, plies=4)
    store = MemoryReplay("run-a", max_records=2)
    reader = MemoryReader(store)
    for _ in range(5):
        store.add(recs[0])
    assert len(reader.poll()) == 2
    assert reader.missed == 3 and reader.epoch == 0


def test_a_replaced_store_makes_the_mirror_warm_up_again():
    recs, _ = games(4, plies=20)
    holder = {"store": MemoryReplay("run-a")}

    class Proxy:  # what the driver hands the reader when the store is a (restartable) Ray actor
        def __getattr__(self, name):
            return getattr(holder["store"], name)

    limiter = RatioLimiter(samples_per_insert=4, min_size_to_sample=20, error_buffer=16)
    mirror = WindowMirror(MemoryReader(Proxy()), ENC, window_positions=1000, limiter=limiter)
    rng = np.random.default_rng(0)
    for r in recs[:2]:
        holder["store"].add(r)
    mirror.poll()
    assert mirror.try_sample(16, rng) is not None
    holder["store"] = MemoryReplay("run-a")  # restarted: empty, new incarnation
    mirror.poll()
    assert mirror.size == 0 and mirror.warmups == 1 and mirror.reader.epoch == 1
    assert mirror.try_sample(16, rng) is None  # warming up, not training on nothing
    holder["store"].add(recs[2])
    holder["store"].add(recs[3])
    n = mirror.poll()
    assert mirror.size == n == limiter.inserted
    assert (mirror.try_sample(16, rng) is not None) == (n >= 20)


def test_a_foreign_store_is_detected_and_not_read():
    recs, _ = games(1, plies=6)
    store = MemoryReplay("run-b")
    store.add(dataclasses.replace(recs[0], run_id="run-b"))
    reader = MemoryReader(store, run_id="run-a")
    assert reader.poll() == [] and reader.epoch == 1 and reader.stats()["foreign_buffer"]
    assert reader.poll() == [] and reader.epoch == 1  # detected once


# ---------------------------------------------------------------------------------------------
# The window: sliding, content, sampling
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["general", "paper"])
def test_window_slides_and_holds_the_newest_positions_exactly(encoding):
    enc = encoding_for(RULES, encoding)
    recs, lists = games(8, plies=40, keep_fraction=0.8, simulations=60)
    expected = expected_positions(recs, lists, enc)
    window = 90
    # entries_per_position=1 forces the policy-entry ring to grow (and wrap) while sliding.
    mirror, _ = mirror_of(recs, window, enc, entries_per_position=1)
    total = len(expected)
    assert total > 2 * window
    assert mirror.inserted == total and mirror.size == window
    batch = mirror.sample(3000, np.random.default_rng(1), augment=False)
    assert batch.index.min() >= total - window and batch.index.max() < total  # oldest evicted
    assert len(np.unique(batch.index)) == window
    for b in range(0, 3000, 7):
        planes, pol, z, _ = expected[batch.index[b]]
        np.testing.assert_array_equal(batch.planes[b], planes)
        np.testing.assert_allclose(batch.policy[b], pol, atol=1e-6)
        np.testing.assert_array_equal(batch.value[b], z)
    assert not batch.reflected.any() and (batch.weight == 1).all()


def test_value_targets_weights_and_keep_mask():
    recs, lists = games(3, plies=30, keep_fraction=0.5, weighted=True)
    expected = expected_positions(recs, lists)
    mirror, _ = mirror_of(recs, 1000, value_target="zq")
    assert mirror.size == len(expected)  # only kept positions with a target are stored
    assert mirror.size < sum(r.num_positions for r in recs)
    weights = np.concatenate([r.weight[(r.keep) & (np.diff(r.policy_offsets) > 0)] for r in recs])
    batch = mirror.sample(200, np.random.default_rng(2), augment=False)
    for b in range(200):
        _, _, z, q = expected[batch.index[b]]
        np.testing.assert_allclose(batch.value[b], 0.5 * (z + q), rtol=1e-6)
        assert batch.weight[b] == weights[batch.index[b]]


def test_a_record_longer_than_the_window_keeps_its_end():
    recs, lists = games(1, plies=60)
    expected = expected_positions(recs, lists)
    mirror, _ = mirror_of(recs, 10)
    assert mirror.size == 10
    batch = mirror.sample(100, np.random.default_rng(0), augment=False)
    for b in range(100):
        # serials restart at the record's kept positions: the last 10 of the game
        np.testing.assert_array_equal(batch.planes[b], expected[len(expected) - 10 + batch.index[b]][0])


def test_sampling_is_uniform_over_the_window():
    recs, _ = games(3, plies=30)
    window = 40
    mirror, _ = mirror_of(recs, window)
    draws = 40_000
    batch = mirror.sample(draws, np.random.default_rng(12345), augment=False)
    counts = np.bincount(batch.index - (mirror.inserted - window), minlength=window)
    assert len(counts) == window
    chi2 = float(((counts - draws / window) ** 2 / (draws / window)).sum())
    assert chi2 < 72.05  # chi-square, 39 degrees of freedom, p = 0.001


def test_augmentation_reflects_planes_and_policy_together():
    recs, _ = games(4, plies=30)
    mirror, _ = mirror_of(recs, 1000)
    plain = mirror.sample(400, np.random.default_rng(7), augment=False)
    aug = mirror.sample(400, np.random.default_rng(7), augment=True)
    np.testing.assert_array_equal(plain.index, aug.index)  # same draws, then the coin flips
    f = aug.reflected
    assert 150 < f.sum() < 250
    np.testing.assert_array_equal(aug.planes[f], reflect_planes(plain.planes[f]))
    np.testing.assert_array_equal(aug.policy[f], reflect_policy(RULES, plain.policy[f]))
    np.testing.assert_array_equal(aug.planes[~f], plain.planes[~f])
    np.testing.assert_array_equal(aug.policy[~f], plain.policy[~f])
    np.testing.assert_array_equal(aug.value, plain.value)


def test_reflected_targets_name_legal_moves_of_the_reflected_board():
    """End to end with the paper encoding (absolute frame): read the board off the planes, ask the
    engine for its legal moves; every policy target must be one. A forgotten policy reflection
    (the seed paper's code) fails this."""
    enc = encoding_for(RULES, "paper")
    recs, _ = games(3, plies=30)
    mirror, _ = mirror_of(recs, 1000, enc)
    batch = mirror.sample(60, np.random.default_rng(3), augment=True)
    assert batch.reflected.any()
    cells = RULES.cells
    for b in range(60):
        ids_own = batch.planes[b, 0].reshape(-1).astype(int)  # ID + 1 of the mover's pieces
        ids_opp = batch.planes[b, 1].reshape(-1).astype(int)
        tm = int(batch.planes[b, -1, 0, 0])
        board = np.full(cells, -1)
        board[ids_own > 0] = tm
        board[ids_opp > 0] = 1 - tm
        current = np.zeros((2, RULES.k), dtype=np.int64)
        current[tm, ids_own[ids_own > 0] - 1] = np.flatnonzero(ids_own > 0)
        current[1 - tm, ids_opp[ids_opp > 0] - 1] = np.flatnonzero(ids_opp > 0)
        state = new_state(RULES, Position(tuple(int(v) for v in board), tm, 0))
        legal = set(enc.move_indices(current, state.legal_moves(), tm).tolist())
        assert set(np.flatnonzero(batch.policy[b]).tolist()) <= legal


# ---------------------------------------------------------------------------------------------
# The limiter and the backoff
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "inserted, sampled, size, n, allowed",
    [
        (99, 0, 99, 1, False),  # below min_size
        (100, 0, 100, 10, True),  # at min_size: error buffer 10 allows 10
        (100, 0, 100, 11, False),
        (110, 10, 110, 40, True),  # 4 * 10 + 10 = 50 >= 10 + 40
        (110, 10, 110, 41, False),
        (200, 0, 50, 1, False),  # enough inserted but the window holds fewer than min_size
    ],
)
def test_ratio_limiter_arithmetic(inserted, sampled, size, n, allowed):
    lim = RatioLimiter(samples_per_insert=4, min_size_to_sample=100, error_buffer=10)
    lim.inserted, lim.sampled = inserted, sampled
    assert lim.can_sample(n, size) is allowed
    if not allowed and size >= 100:
        need = lim.inserts_needed(n, size)
        lim.inserted += need
        assert lim.can_sample(n, size + need) and (need == 0 or not _can_with(lim, -1, n, size + need))


def _can_with(lim: RatioLimiter, d_inserted: int, n: int, size: int) -> bool:
    lim.inserted += d_inserted
    try:
        return lim.can_sample(n, size)
    finally:
        lim.inserted -= d_inserted


def test_ratio_limiter_inserts_and_waits():
    clock = FakeClock()
    lim = RatioLimiter(samples_per_insert=2, min_size_to_sample=10, error_buffer=4, clock=clock)
    assert lim.can_insert(10) and lim.can_insert(12) and not lim.can_insert(13)  # 2 * 3 - 0 > 4
    assert not lim.try_sample(4, 0)
    clock.t += 3.0
    lim.on_insert(10)
    assert lim.try_sample(4, 10)  # 4 <= 2 * 0 + 4
    assert lim.last_wait_s == 3.0 and lim.waits == 1 and lim.sampled == 4
    assert not lim.try_sample(4, 10)
    clock.t += 0.5
    assert lim.stats()["waiting_s"] == 0.5
    lim.on_insert(2)
    assert lim.try_sample(4, 12)
    assert lim.waited_s == 3.5 and lim.waits == 2
    lim.reset()
    assert (lim.inserted, lim.sampled) == (0, 0) and not lim.can_sample(1, 12)
    with pytest.raises(ValueError):
        RatioLimiter(samples_per_insert=0, min_size_to_sample=1, error_buffer=1)


def test_backoff_grows_with_jitter_and_caps():
    clock = FakeClock()
    b = Backoff(base=0.1, cap=1.0, clock=clock)
    assert b.ready()
    delays = [b.failed() for _ in range(8)]
    for i, d in enumerate(delays):
        top = min(1.0, 0.1 * 2**i)
        assert 0.5 * top <= d <= top
    assert not b.ready()
    clock.t += 1.0
    assert b.ready()
    b.succeeded()
    assert b.failures == 0 and b.ready()


def test_concurrent_adds_and_reads_keep_the_ids_contiguous():
    """The driver runs the store as a threaded Ray actor (max_concurrency > 1): actors add while
    the learner reads. A read between an add's insert and its id step asked for an evicted id
    (KeyError: the learner's loop died five times in a demo run)."""
    store = MemoryReplay("run", max_records=8)
    errors: list[BaseException] = []
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible

    def write() -> None:
        for _ in range(20_000):
            store.add_encoded(b"x")

    def read() -> None:
        cursor = 0
        try:
            for _ in range(20_000):
                cursor, items = store.read_since(cursor, 4)
                assert len(items) <= 4
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=f) for f in (write, write, read, read)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:1]
    assert store.stats()["next_id"] == 40_000 and store.stats()["records"] == 8
