"""Game records (learner.records): round trips of real games, and every kind of bad record refused."""

from __future__ import annotations

import dataclasses
import json
import pickle
import zlib
from pathlib import Path

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ccengine import preset
from learner.records import (
    MAGIC,
    SCHEMA,
    GameRecord,
    RecordError,
    decode_record,
    encode_record,
    make_record,
)
from replay_helpers import random_game_record

RULES = preset("cc49")


@pytest.fixture(scope="module")
def record() -> GameRecord:
    return random_game_record(RULES, 7, max_plies=30, skip=3, keep_fraction=0.5, weighted=True)


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(["cc49", "paper", "small-4-3", "small-5-6", "small-6-1", "cc81"]),
    seed=st.integers(0, 2**32 - 1),
    plies=st.integers(1, 40),
    skip=st.integers(0, 6),
    history=st.integers(0, 4),
    keep=st.sampled_from([None, 0.3]),
    weighted=st.booleans(),
    sims=st.sampled_from([0, 50]),
    prob_dtype=st.sampled_from(["float16", "float32"]),
    codec=st.sampled_from(["zlib", "none"]),
)
def test_round_trip_of_random_games(name, seed, plies, skip, history, keep, weighted, sims, prob_dtype, codec):
    rules = preset(name)
    # A game that is over before its first recorded ply has no record (small boards end fast).
    assume(_game_lasts(rules, seed, skip + 1))
    rec = random_game_record(rules, seed, max_plies=skip + plies, skip=skip, history=history, keep_fraction=keep,
                             weighted=weighted, simulations=sims, prob_dtype=prob_dtype)
    data = encode_record(rec, codec=codec)
    back = decode_record(data)
    assert back.same_as(rec)
    assert back.policy_prob.dtype == np.dtype(prob_dtype)
    assert not back.pieces.flags.writeable
    assert encode_record(back, codec=codec) == data  # deterministic bytes


def test_record_content(record):
    t = record.num_positions
    assert record.pieces.shape == (t, 2, 6) and record.pieces.dtype == np.int8
    assert record.start_pieces.shape == (3, 2, 6)
    assert record.policy_offsets[-1] == len(record.policy_index) == len(record.policy_prob)
    idx, prob = record.policy(0)
    assert len(idx) > 0 and abs(float(prob.astype(np.float64).sum()) - 1) < 1e-2
    assert record.policy_index.dtype == np.int16
    assert record.plies == t + 3


def test_make_record_validates():
    start = RULES.geometry.start_board()
    pieces = np.array([[[i for i in range(49) if start[i] == p] for p in (0, 1)]])
    with pytest.raises(RecordError, match="scores does not sum to 1"):
        make_record(run_id="r", rules=RULES, config_hash="c", model_version=0, actor="a", seed=1,
                    pieces=pieces, to_move=[0], policies=[([1], [1.0])], scores=(1.0, 1.0), root_shares=None,
                    plies=1)


def test_encode_refuses_an_invalid_record(record):
    with pytest.raises(RecordError, match="root_shares has a value outside"):
        encode_record(dataclasses.replace(record, root_shares=np.full((record.num_positions, 2), 2.0, np.float32)))


# ---------------------------------------------------------------------------------------------
# Bad records: each is refused with a message that names the problem
# ---------------------------------------------------------------------------------------------


def _doc(rec: GameRecord, codec: str = "none") -> dict:
    return msgpack.unpackb(encode_record(rec, codec=codec), raw=False)


def _arrays(doc: dict) -> dict[str, np.ndarray]:
    out, off = {}, 0
    for name, dtype, shape in doc["arrays"]:
        dt = np.dtype(dtype)
        n = int(np.prod(shape)) * dt.itemsize
        out[name] = np.frombuffer(doc["data"], dt, offset=off, count=int(np.prod(shape))).reshape(shape).copy()
        off += n
    return out


def _pack(doc: dict, arrays: dict[str, np.ndarray] | None = None) -> bytes:
    """Re-pack a record document, bypassing validation (what a buggy or hostile writer could send)."""
    doc = dict(doc)
    if arrays is not None:
        doc["arrays"] = [[n, a.dtype.str, list(a.shape)] for n, a in arrays.items()]
        doc["data"] = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
        doc["size"] = len(doc["data"])
        doc["codec"] = "none"
    return msgpack.packb(doc, use_bin_type=True)


def _refused(data: bytes, pattern: str, kind: str = "malformed") -> None:
    with pytest.raises(RecordError, match=pattern) as info:
        decode_record(data)
    assert info.value.kind == kind


def _with(record: GameRecord, pattern: str, kind: str = "malformed", **changes) -> None:
    doc = _doc(record)
    arrays = _arrays(doc)
    for name, value in changes.items():
        if value is None:
            del arrays[name]
        else:
            arrays[name] = value
    _refused(_pack(doc, arrays), pattern, kind)


def test_truncated_bytes_are_refused(record):
    for codec in ("zlib", "none"):
        data = encode_record(record, codec=codec)
        for cut in sorted({1, 2, 10, len(data) // 3, len(data) // 2, len(data) - 40, len(data) - 1}):
            with pytest.raises(RecordError):
                decode_record(data[:cut])
    _refused(b"", "not a msgpack record")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_are_refused(data):
    with pytest.raises(RecordError):
        decode_record(data)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_corrupted_bytes_decode_or_raise_record_error(record, data):
    """Flip bytes anywhere in a valid uncompressed record: a RecordError or a valid record, nothing else."""
    raw = bytearray(encode_record(record, codec="none"))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        back = decode_record(bytes(raw))
    except RecordError:
        return
    encode_record(back)  # whatever got through is a record the writer side would accept too


class _Trap:
    """Unpickling this would create a marker file: the decoder must never unpickle."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pickle_payload_is_refused_without_unpickling(tmp_path, record):
    marker = tmp_path / "unpickled"
    for payload in (pickle.dumps(_Trap(str(marker))), pickle.dumps(record), pickle.dumps({"magic": MAGIC})):
        with pytest.raises(RecordError):
            decode_record(payload)
    assert not marker.exists()


def test_foreign_and_future_records(record):
    doc = _doc(record)
    _refused(_pack({**doc, "magic": "other.game"}), "not a hopzero game record", "foreign")
    _refused(msgpack.packb([1, 2, 3]), "not a map", "foreign")
    _refused(msgpack.packb({"hello": "world"}), "magic", "foreign")
    _refused(_pack({**doc, "schema": SCHEMA + 1}), f"schema {SCHEMA + 1} is newer", "future")
    _refused(_pack({**doc, "schema": 0}), "schema 0")
    _refused(_pack({**doc, "codec": "lzma"}), "unknown codec")


def test_bad_metadata(record):
    doc = _doc(record)
    _refused(_pack({**doc, "meta": {**doc["meta"], "seed": -1}}), "seed")
    _refused(_pack({**doc, "meta": {**doc["meta"], "run_id": 5}}), "run_id is int")
    _refused(_pack({**doc, "meta": {**doc["meta"], "rules": {"n": 2}}}), "rules")
    _refused(_pack({**doc, "meta": {**doc["meta"], "rules": {**doc["meta"]["rules"], "n": 7.0}}}), "n is float")
    _refused(_pack({**doc, "meta": {**doc["meta"], "plies": 1}}), "plies")
    meta = dict(doc["meta"])
    del meta["actor"]
    _refused(_pack({**doc, "meta": meta}), "meta lacks \\['actor'\\]")
    # Rules of another board: the piece lists no longer fit k.
    _refused(_pack({**doc, "meta": {**doc["meta"], "rules": preset("cc81").to_dict()}}), "shape")


def test_inconsistent_shapes_and_dtypes(record):
    a = _arrays(_doc(record))
    t = record.num_positions
    _with(record, "to_move has shape", to_move=a["to_move"][:-1])
    _with(record, "pieces has shape", pieces=a["pieces"][:, :, :5].copy())
    _with(record, "root_shares has shape", root_shares=np.zeros((t + 1, 2), np.float32))
    _with(record, "policy_prob has dtype", policy_prob=a["policy_prob"].astype(np.float64))
    _with(record, "policy_index .* and policy_prob .* differ", policy_prob=a["policy_prob"][:-1])
    _with(record, "arrays missing", root_shares=None)
    _with(record, "unknown or repeated array 'root_value'", root_value=np.zeros(t, np.float32))  # a schema-3 field
    _with(record, "keep has bytes other than 0/1", keep=np.full(t, 2, np.uint8).view(bool))
    _with(record, "start_pieces has shape", start_pieces=np.zeros((2, 6), np.int8))


def test_bad_blob(record):
    doc = _doc(record)
    _refused(_pack({**doc, "size": doc["size"] + 1}), "runs past the end|holds")
    _refused(_pack({**doc, "data": doc["data"] + b"\0\0"}), "holds|no array claims")
    zdoc = _doc(record, codec="zlib")
    _refused(_pack({**zdoc, "data": zdoc["data"][:-5]}), "zlib")
    bomb = zlib.compress(b"\0" * (4 << 20))
    _refused(_pack({**zdoc, "data": bomb, "size": 100}), "zlib data is truncated|trailing|holds")
    _refused(_pack({**doc, "arrays": doc["arrays"] + [["extra", "<i4", [1]]]}), "unknown or repeated array")


def test_bad_offsets(record):
    off = _arrays(_doc(record))["policy_offsets"]
    bad = off.copy()
    bad[2], bad[3] = off[3], off[2]
    _with(record, "policy_offsets not monotone", policy_offsets=bad)
    _with(record, "policy_offsets not monotone", policy_offsets=(off + 1).astype(np.int32))
    short = off.copy()
    short[-1] -= 1
    _with(record, "policy_offsets not monotone", policy_offsets=short)


def test_bad_policy_values(record):
    a = _arrays(_doc(record))
    prob = a["policy_prob"].copy()
    prob[3] = np.nan
    _with(record, "policy_prob has a negative or non-finite value", policy_prob=prob)
    prob = a["policy_prob"].copy()
    prob[: a["policy_offsets"][1]] *= 2
    _with(record, "policy_prob of position 0 sums to", policy_prob=prob)
    idx = a["policy_index"].copy()
    idx[0] = 6 * 49
    _with(record, "policy_index outside 0..293", policy_index=idx)
    idx[0] = -1
    _with(record, "policy_index outside", policy_index=idx)
    idx = a["policy_index"].copy()
    idx[1] = idx[0]
    _with(record, "repeats a move", policy_index=idx)


def test_bad_values_and_positions(record):
    a = _arrays(_doc(record))
    rs = a["root_shares"].copy()
    rs[0] = (1.5, -0.5)
    _with(record, "root_shares has a value outside", root_shares=rs)
    rs[0] = (np.inf, 0.0)
    _with(record, "root_shares has a value outside", root_shares=rs)
    rs[0] = (0.25, 0.25)
    _with(record, "root_shares does not sum to 1", root_shares=rs)
    _with(record, "scores does not sum to 1", scores=np.array([1.0, 1.0], np.float32))
    w = a["weight"].copy()
    w[0] = -1
    _with(record, "weight", weight=w)
    tm = a["to_move"].copy()
    tm[1] = tm[0]
    _with(record, "to_move does not alternate", to_move=tm)
    p = a["pieces"].copy()
    p[2, 0, 0] = 49
    _with(record, r"pieces\[2\] has a cell outside", pieces=p)
    p = a["pieces"].copy()
    p[2, 0, 0] = p[2, 1, 0]
    _with(record, "two pieces on one cell", pieces=p)
    p = a["pieces"].copy()
    p[4:, 0, [0, 1]] = p[4:, 0, [1, 0]]  # IDs swapped mid-game: the tracking is broken
    _with(record, "does not follow from state", pieces=p)
    sp = a["start_pieces"].copy()
    sp[0, 0, 0] = -1
    _with(record, "some pieces missing", start_pieces=sp)


def _game_lasts(rules, seed: int, plies: int) -> bool:
    """Whether the random game of ``random_game_record`` is still going after ``plies`` plies."""
    try:
        random_game_record(rules, seed, max_plies=plies, skip=plies - 1)
    except RecordError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Records written before: schema 3 (two players: outcome and root_value)
# ---------------------------------------------------------------------------------------------

OLD = Path(__file__).parent / "data" / "records-schema3"


def _old_records():
    return json.loads((OLD / "manifest.json").read_text())


@pytest.mark.parametrize("entry", _old_records(), ids=lambda e: e["file"])
def test_records_of_the_schema_before_read_as_result_vectors(entry):
    """Real records of the actors as they were (self-play and stage 1 on cc49, star2 and star3, DQN on
    paper), with the figures those actors wrote: decoded into today's layout, the result vector
    and the root value vectors say what ``outcome`` and ``root_value`` said."""
    data = (OLD / entry["file"]).read_bytes()
    assert msgpack.unpackb(data, raw=False)["schema"] == 3
    rec = decode_record(data)
    assert (rec.kind, rec.num_positions, rec.plies, rec.preset) == (entry["kind"], entry["positions"], entry["plies"],
                                                                    entry["preset"])
    players = preset(entry["preset"]).players
    if entry["scores"] is None:  # a two-player record: outcome +1 / 0 / -1 from player 0's side
        assert list(rec.scores) == [(1 + entry["outcome"]) / 2, (1 - entry["outcome"]) / 2]
        mover = int(rec.to_move[0])
        assert 2 * rec.root_shares[0, mover] - 1 == pytest.approx(entry["root_value_first"], abs=1e-6)
    else:
        assert list(rec.scores) == pytest.approx(entry["scores"])
    assert rec.root_shares.shape == (rec.num_positions, players)
    again = decode_record(encode_record(rec))  # written again: schema 4, the same record
    assert again.same_as(rec) and msgpack.unpackb(encode_record(rec), raw=False)["schema"] == SCHEMA


@pytest.mark.parametrize("entry", [e for e in _old_records() if e["kind"] == "search"], ids=lambda e: e["file"])
def test_records_of_the_schema_before_train_on_the_targets_they_gave(entry):
    """The learner's window took, from each old record, value targets z (outcome) and q (root value)
    in the mover's view (recorded then): the shares it takes now are those, in the mover's frame."""
    from ccengine.encoding import encoding_for
    from learner.replay.window import WindowMirror

    rules = preset(entry["preset"])
    then = json.loads((OLD / "window_targets.json").read_text())[entry["file"]]
    window = WindowMirror(None, encoding_for(rules, "general", history=2), window_positions=4096, value_target="zq")
    n = window.add_record(decode_record((OLD / entry["file"]).read_bytes()))
    assert n == then["positions"] and window._to_move[:n].tolist() == then["to_move"]
    z, q = window._z[:n], window._q[:n]
    if rules.players == 2:  # then: the mover's z in {-1, 0, 1} and q on [-1, 1]
        assert (z[:, 0] - z[:, 1]).tolist() == then["z"]
        assert (q[:, 0] - q[:, 1]).tolist() == pytest.approx(then["q"], abs=1e-6)
    else:  # then already the vectors, in the mover's frame
        np.testing.assert_allclose(z, then["z"], atol=1e-7)
        np.testing.assert_allclose(q, then["q"], atol=1e-7)


def test_an_old_record_with_bad_results_is_refused(record):
    """The reading of schema-3 fields is as strict as today's: a broken outcome or root value is refused."""
    data = (OLD / "selfplay-cc49.msgpack").read_bytes()
    doc = msgpack.unpackb(data, raw=False)
    _refused(_pack({**doc, "meta": {**doc["meta"], "outcome": 2}}), "outcome 2 is not -1, 0 or 1")
    meta = dict(doc["meta"])
    del meta["outcome"]
    _refused(_pack({**doc, "meta": meta}), r"meta lacks \['outcome'\]")
    arrays = _arrays({**doc, "data": zlib.decompress(doc["data"]) if doc["codec"] == "zlib" else doc["data"]})
    bad = arrays["root_value"].copy()
    bad[0] = 1.5
    _refused(_pack(doc, {**arrays, "root_value": bad}), r"root_value has a value outside \[-1, 1\]")
    del arrays["root_value"]
    _refused(_pack(doc, arrays), "root_value is missing")
