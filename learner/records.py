"""Game records: what a self-play actor sends to the replay buffer, and its checked wire format.

A record is one game (or the recorded stretch of one): the piece list of every recorded position,
the search's visit distribution over the legal moves (sparse), the search's root value vectors and
the game's result vector, plus who made it (run, preset, rules, config hash, model version, actor,
seed, versions).

Wire format (schema 4; the table is in docs/REPLAY.md): one msgpack map

    {"magic": "hopzero.game", "schema": 4, "meta": {...},
     "arrays": [[name, dtype, shape], ...], "codec": "zlib" | "none", "size": N, "data": <bytes>}

``data`` is the concatenation of the arrays' raw little-endian bytes in the order of
``arrays``, compressed as one blob when ``codec`` is ``zlib`` (the default: 1.6-2.2x smaller
for under 1 ms of an actor's CPU per game and ~0.05 ms of the learner's; docs/REPLAY.md).
Never pickle: the buffer is shared state, and unpickling data from it would run code.
:func:`decode_record` trusts nothing in the bytes and checks every field before a record
reaches the learner; a failure raises :class:`RecordError` whose ``kind`` says which counter it
belongs to (``malformed``, ``foreign``, ``future``).

Two kinds of record (``meta.kind``, schema 2; a schema-1 record is a ``search`` record):

- ``search``: a game of the tree search (or stage 1's greedy games): ``policy_*`` is the
  training target of each position (the visit distribution), ``reward`` is absent.
- ``dqn``: a whole game of DQN acting (``learner.dqn``): at each position where the learning side
  chose, ``policy_index`` lists *every* legal move and ``policy_prob`` is 1 on the move played and
  0 on the others (so the record holds the action and the legal moves its Q maximum ranges over);
  a position of the opponent (``greedy``) has no entries. ``reward`` (float32 ``[T]``) is what the
  mover of each position received for its move, the end-of-game reward included in each side's
  last move. The record covers the game from its start (``T == plies``, no ``start_pieces``).

A learner refuses records of the other kind (they would be read as the wrong targets).

Conventions: policy indices are ``piece_id * cells + e`` in ABSOLUTE board coordinates (never
rotated for another player's view; that is the encoder's business, applied when training targets
are built). Cells are the rules' own numbering, so the format serves every board: on the 121-hole
star a piece list holds star cells (0..120, int8; its board is the COMPACT121 position of the same
cells) and an index is below ``10 * 121 = 1210`` (int16), and ``rules`` says which board it is.
Piece lists hold one row per player (``[T, P, k]``) and ``to_move`` cycles ``0, 1, .., P - 1``.

Results, for two players as for six: ``scores``, float32 ``[P]``, is the game's result vector by
absolute seat (``State.scores()``: the winners share 1, a draw splits it); ``root_shares``, float32
``[T, P]``, is the search's root value vector of each position (each absolute seat's expected
share; ``1 / P`` each where no search ran, and for stage 1's games the result vector itself).

Records written before (schemas 1 to 3) still read: :func:`decode_record` turns them into this
layout. Their two-player results were ``outcome`` (+1 / 0 / -1 from player 0's side) and
``root_value`` (the root value on ``[-1, 1]`` from the mover's view): ``scores`` is ``(1, 0)``,
``(1/2, 1/2)`` or ``(0, 1)``, and the mover's share ``(1 + root_value) / 2``. Their records of
three or more players (schema 3) already held ``scores`` and ``root_shares``.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import msgpack
import numpy as np

from plumbing.fields import field_check
from ccengine.rules import Rules, RulesError

__all__ = [
    "CODECS",
    "MAGIC",
    "MAX_RECORD_BYTES",
    "KINDS",
    "SCHEMA",
    "GameRecord",
    "RecordError",
    "decode_record",
    "encode_record",
    "make_record",
    "validate_record",
    "versions_now",
]

#: Format tag of every record; anything else is someone else's data.
MAGIC = "hopzero.game"
#: Current schema. A reader accepts ``1..SCHEMA`` and refuses newer records ("future").
#: Schema 2 added ``meta.kind`` and the ``reward`` array (DQN records), schema 3 the result vectors
#: of three or more players, schema 4 made them the one result of every record (module docstring).
SCHEMA = 4
#: Record kinds (``GameRecord.kind``); schema-1 records are all ``search``.
KINDS = ("search", "dqn")
#: Codecs of the ``data`` blob a reader understands.
CODECS = ("none", "zlib")
#: Largest record accepted, packed or unpacked (a 200-ply cc81 game is ~30 KiB).
MAX_RECORD_BYTES = 16 << 20
#: Tolerance on the sum of one position's probabilities (float16 rounding is ~5e-4).
PROB_SUM_TOL = 1e-2
#: Longest history before the first recorded position a record may carry.
MAX_START_HISTORY = 64

_PROB_DTYPES = (np.dtype("<f2"), np.dtype("<f4"))
_INDEX_DTYPES = (np.dtype("<i2"), np.dtype("<i4"))

# name -> allowed dtypes; the order is the layout of ``data``.
_ARRAYS: dict[str, tuple[np.dtype, ...]] = {
    "start_pieces": (np.dtype("i1"),),
    "pieces": (np.dtype("i1"),),
    "to_move": (np.dtype("i1"),),
    "policy_offsets": (np.dtype("<i4"),),
    "policy_index": _INDEX_DTYPES,
    "policy_prob": _PROB_DTYPES,
    "scores": (np.dtype("<f4"),),
    "root_shares": (np.dtype("<f4"),),
    "weight": (np.dtype("<f4"),),
    "keep": (np.dtype("?"),),
    "reward": (np.dtype("<f4"),),
}
_OPTIONAL = ("weight", "keep", "reward")
#: What records before schema 4 held for two players (read, turned into ``scores`` and ``root_shares``).
_LEGACY_ARRAYS: dict[str, tuple[np.dtype, ...]] = {"root_value": (np.dtype("<f4"),)}
#: Tolerance on the sum of a result vector or a root value vector (float32 rounding).
SCORE_SUM_TOL = 1e-3
_META_TYPES: dict[str, type | tuple[type, ...]] = {
    "run_id": str,
    "preset": str,
    "rules": dict,
    "config_hash": str,
    "model_version": int,
    "actor": str,
    "seed": int,
    "versions": dict,
    "plies": int,
}


class RecordError(ValueError):
    """A record that must not reach the learner; ``kind`` names the skip counter it counts in."""

    def __init__(self, message: str, kind: str = "malformed") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, eq=False)
class GameRecord:
    """One game's training data and provenance. Arrays are read-only; compare with :meth:`same_as`.

    ``T`` recorded positions, consecutive plies of one game; ``k`` pieces a side.
    """

    run_id: str
    """The training run that produced it (the replay buffer's identity)."""
    preset: str
    """Preset name the rules came from (informational: ``rules`` is authoritative)."""
    rules: dict[str, Any]
    """``Rules.to_dict()`` of the game."""
    config_hash: str
    """Hash of the run's whole config."""
    model_version: int
    """Network version that played (-1: no network, e.g. heuristic stage-1 data)."""
    actor: str
    """Name of the actor that played it."""
    seed: int
    """The game's seed, ``0 <= seed < 2**64``."""
    versions: dict[str, str]
    """Software versions (hopzero, numpy, torch) of the actor."""
    start_pieces: np.ndarray
    """int8 ``[H0, P, k]``: piece lists of the ``H0`` states before the first recorded position,
    newest first; a row of -1 where that state does not exist (before the game start)."""
    pieces: np.ndarray
    """int8 ``[T, P, k]`` (P = players): piece list of each recorded position, piece IDs tracked through the game."""
    to_move: np.ndarray
    """int8 ``[T]``: side to move (cycles through the players: passes are plies too)."""
    policy_offsets: np.ndarray
    """int32 ``[T + 1]``: position ``t``'s targets are ``policy_*[offsets[t]:offsets[t+1]]``."""
    policy_index: np.ndarray
    """int16/int32 ``[S]``: policy indices ``id * cells + e``, absolute coordinates, unique per position."""
    policy_prob: np.ndarray
    """float16/float32 ``[S]``: search visit distribution; sums to 1 per position (empty: no target)."""
    scores: np.ndarray
    """float32 ``[P]``: the game's result vector by absolute seat (sums to 1)."""
    root_shares: np.ndarray
    """float32 ``[T, P]``: the search's root value vector of each position by absolute seat (each
    sums to 1; ``1 / P`` each where no search ran)."""
    plies: int
    """Plies of the whole game (passes included); ``T <= plies``."""
    weight: np.ndarray | None = None
    """Optional float32 ``[T]`` per-position loss weight, finite and >= 0."""
    keep: np.ndarray | None = None
    """Optional bool ``[T]``: positions to train on (stage-1 data keeps a few percent); the
    others are there for the history planes only."""
    reward: np.ndarray | None = None
    """float32 ``[T]`` in a ``dqn`` record (absent otherwise): the mover's reward for its move."""
    kind: str = "search"
    """``search`` or ``dqn`` (see the module docstring)."""

    @property
    def num_positions(self) -> int:
        return int(self.pieces.shape[0])

    @property
    def k(self) -> int:
        return int(self.pieces.shape[2])

    def policy(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, probs)`` of position ``t``."""
        a, b = int(self.policy_offsets[t]), int(self.policy_offsets[t + 1])
        return self.policy_index[a:b], self.policy_prob[a:b]

    def same_as(self, other: GameRecord) -> bool:
        """Field-by-field equality (arrays by value, dtypes included)."""
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
                    return False
                if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True


def versions_now() -> dict[str, str]:
    """Versions of hopzero, numpy and torch (when importable) in this process."""
    from importlib import metadata

    out = {"numpy": np.__version__}
    for name in ("hopzero", "torch"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.flags.writeable:
        a = a.copy()
        a.setflags(write=False)
    return a


def make_record(
    *,
    run_id: str,
    rules: Rules,
    config_hash: str,
    model_version: int,
    actor: str,
    seed: int,
    pieces: np.ndarray,
    to_move: np.ndarray | Sequence[int],
    policies: Sequence[tuple[np.ndarray | Sequence[int], np.ndarray | Sequence[float]]],
    scores: np.ndarray | Sequence[float],
    root_shares: np.ndarray | Sequence[Sequence[float]] | None,
    plies: int,
    start_pieces: np.ndarray | None = None,
    weight: np.ndarray | Sequence[float] | None = None,
    keep: np.ndarray | Sequence[bool] | None = None,
    versions: Mapping[str, str] | None = None,
    prob_dtype: str = "float16",
    reward: np.ndarray | Sequence[float] | None = None,
    kind: str = "search",
) -> GameRecord:
    """Build and validate a record from per-position ``(indices, probs)`` pairs (absolute indices).

    Casts to the wire dtypes (int8 pieces, int16 indices, ``prob_dtype`` probabilities:
    float16 keeps ~3 significant digits, enough for visit fractions of a few hundred
    simulations). ``start_pieces`` defaults to no history (an empty ``[0, P, k]``). ``scores``:
    the result vector by seat; ``root_shares``: the root value vector of each position (None: no
    search ran, ``1 / P`` each). A ``dqn`` record (``kind``) carries ``reward`` and one-hot
    ``policies`` over the legal moves.
    """
    k = rules.k
    offsets = np.zeros(len(policies) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(ix) for ix, _ in policies])
    index = np.concatenate([np.asarray(ix, dtype=np.int64) for ix, _ in policies] or [np.zeros(0, np.int64)])
    prob = np.concatenate([np.asarray(p, dtype=np.float64) for _, p in policies] or [np.zeros(0)])
    index_dtype = np.int16 if rules.k * rules.cells <= np.iinfo(np.int16).max else np.int32
    start = (np.zeros((0, rules.players, k), np.int8) if start_pieces is None
             else np.asarray(start_pieces).astype(np.int8))
    shares = (np.full((len(policies), rules.players), 1.0 / rules.players) if root_shares is None
              else np.asarray(root_shares))
    rec = GameRecord(
        run_id=run_id,
        preset=rules.name,
        rules=rules.to_dict(),
        config_hash=config_hash,
        model_version=int(model_version),
        actor=actor,
        seed=int(seed),
        versions=dict(versions_now() if versions is None else versions),
        start_pieces=_frozen(start),
        pieces=_frozen(np.asarray(pieces).astype(np.int8)),
        to_move=_frozen(np.asarray(to_move).astype(np.int8)),
        policy_offsets=_frozen(offsets),
        policy_index=_frozen(index.astype(index_dtype)),
        policy_prob=_frozen(prob.astype(np.dtype(prob_dtype))),
        scores=_frozen(np.asarray(scores, dtype=np.float32)),
        root_shares=_frozen(shares.astype(np.float32)),
        plies=int(plies),
        weight=None if weight is None else _frozen(np.asarray(weight, dtype=np.float32)),
        keep=None if keep is None else _frozen(np.asarray(keep, dtype=bool)),
        reward=None if reward is None else _frozen(np.asarray(reward, dtype=np.float32)),
        kind=kind,
    )
    validate_record(rec)
    return rec


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _fail(message: str, kind: str = "malformed") -> RecordError:
    return RecordError(message, kind)


def _check_positions(name: str, lists: np.ndarray, cells: int) -> None:
    """Every piece on the board, no two pieces on one cell."""
    flat = lists.reshape(lists.shape[0], -1).astype(np.int16)
    if ((flat < 0) | (flat >= cells)).any():
        t = int(np.flatnonzero(((flat < 0) | (flat >= cells)).any(axis=1))[0])
        raise _fail(f"{name}[{t}] has a cell outside 0..{cells - 1}")
    srt = np.sort(flat, axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]).any(axis=1)
    if dup.any():
        raise _fail(f"{name}[{int(np.flatnonzero(dup)[0])}] has two pieces on one cell")


def _check_chain(seq: np.ndarray, movers: np.ndarray, label: str) -> None:
    """Consecutive states (oldest first) differ by at most one piece of the side that moved.

    This is what keeps piece IDs trustworthy: a record whose IDs were reassigned mid-game would
    teach the network a wrong ID -> piece map.
    """
    if len(seq) < 2:
        return
    changed = seq[1:] != seq[:-1]  # [T-1, 2, k]
    count = changed.reshape(len(changed), -1).sum(axis=1)
    own = changed[np.arange(len(changed)), movers[:-1].astype(np.int64)].sum(axis=1)
    bad = (count > 1) | (count != own)
    if bad.any():
        t = int(np.flatnonzero(bad)[0])
        raise _fail(f"{label}: state {t + 1} does not follow from state {t} by one move of player {int(movers[t])}")


def validate_record(rec: GameRecord) -> Rules:
    """Check every field of a record; return its rules. Raises :class:`RecordError`."""
    if rec.kind not in KINDS:
        raise _fail(f"kind {str(rec.kind)[:40]!r} is not one of {', '.join(KINDS)}")
    for name, typ in _META_TYPES.items():
        value = getattr(rec, name)
        if not isinstance(value, typ) or isinstance(value, bool):
            raise _fail(f"{name} is {type(value).__name__}, needs {getattr(typ, '__name__', typ)}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in rec.versions.items()):
        raise _fail("versions must map strings to strings")
    for f in dataclasses.fields(Rules):  # Rules does not check types; a float n would slip through
        # A field with choices of several types (goal_lock: False, True, "chain") takes any of them.
        check = field_check(f)
        types = {type(f.default), *(type(c) for c in (check.choices if check and check.choices else ()))}
        if f.name in rec.rules and type(rec.rules[f.name]) not in types:
            needs = " or ".join(sorted(t.__name__ for t in types))
            raise _fail(f"rules: {f.name} is {type(rec.rules[f.name]).__name__}, needs {needs}")
    try:
        rules = Rules.from_dict(rec.rules)
    except (RulesError, TypeError, ValueError) as exc:
        raise _fail(f"rules: {exc}") from None
    k, cells, psize, players = rules.k, rules.cells, rules.k * rules.cells, rules.players
    if rec.model_version < -1:
        raise _fail(f"model_version {rec.model_version} < -1")
    if not 0 <= rec.seed < 2**64:
        raise _fail(f"seed {rec.seed} outside 0..2**64-1")
    if players > 2 and rec.kind != "search":  # DQN plays the seed paper's two-player game against greedy
        raise _fail(f"a {rec.kind} record of {players} players: only search records have three or more")

    for name, allowed in _ARRAYS.items():
        a = getattr(rec, name)
        if a is None and name in _OPTIONAL:
            continue
        if not isinstance(a, np.ndarray) or a.dtype not in allowed:
            got = a.dtype.str if isinstance(a, np.ndarray) else type(a).__name__
            raise _fail(f"{name} has dtype {got}, needs one of {[d.str for d in allowed]}")

    t_len = rec.pieces.shape[0] if rec.pieces.ndim == 3 else -1
    shapes = {
        "pieces": (t_len, players, k),
        "to_move": (t_len,),
        "policy_offsets": (t_len + 1,),
        "scores": (players,),
        "root_shares": (t_len, players),
        "weight": (t_len,),
        "keep": (t_len,),
        "reward": (t_len,),
    }
    for name, shape in shapes.items():
        a = getattr(rec, name)
        if a is not None and a.shape != shape:
            raise _fail(f"{name} has shape {a.shape}, needs {shape} (T={t_len}, k={k})")
    if t_len < 1:
        raise _fail("record has no positions")
    if not t_len <= rec.plies <= rules.max_plies:
        raise _fail(f"plies {rec.plies} outside T={t_len}..max_plies={rules.max_plies}")
    h0 = rec.start_pieces.shape[0] if rec.start_pieces.ndim == 3 else -1
    if rec.start_pieces.shape != (h0, players, k) or not 0 <= h0 <= MAX_START_HISTORY:
        raise _fail(f"start_pieces has shape {rec.start_pieces.shape}, "
                    f"needs (H0<={MAX_START_HISTORY}, {players}, {k})")

    # Positions, side to move, and the piece-ID chain through the game.
    _check_positions("pieces", rec.pieces, cells)
    tm = rec.to_move.astype(np.int64)
    if ((tm < 0) | (tm >= players)).any():
        raise _fail(f"to_move has a value outside 0..{players - 1}")
    if (tm[1:] != (tm[:-1] + 1) % players).any():
        raise _fail("to_move does not alternate in seat order (positions must be consecutive plies)")
    missing = (rec.start_pieces < 0).reshape(h0, players * k)
    present = ~missing.any(axis=1)
    if (missing.any(axis=1) & ~missing.all(axis=1)).any():
        raise _fail("start_pieces has a state with some pieces missing")
    n_hist = int(present.sum())
    if n_hist and not present[:n_hist].all():
        raise _fail("start_pieces: a missing state is newer than an existing one")
    if n_hist > rec.plies - t_len:
        raise _fail(f"start_pieces has {n_hist} states, the game had only {rec.plies - t_len} plies before")
    history = rec.start_pieces[:n_hist][::-1]
    if n_hist:
        _check_positions("start_pieces", history, cells)
    seq = np.concatenate([history, rec.pieces]).astype(np.int16)
    movers = np.concatenate([(tm[0] - np.arange(n_hist, 0, -1)) % players, tm])
    _check_chain(seq, movers, "pieces")

    # Sparse policy.
    off = rec.policy_offsets.astype(np.int64)
    total = rec.policy_index.shape
    if rec.policy_index.ndim != 1 or rec.policy_prob.shape != total:
        raise _fail(f"policy_index {rec.policy_index.shape} and policy_prob {rec.policy_prob.shape} differ")
    if off[0] != 0 or off[-1] != total[0] or (np.diff(off) < 0).any():
        raise _fail(f"policy_offsets not monotone from 0 to {total[0]}")
    idx = rec.policy_index.astype(np.int64)
    if ((idx < 0) | (idx >= psize)).any():
        raise _fail(f"policy_index outside 0..{psize - 1}")
    pos = np.repeat(np.arange(t_len), np.diff(off))
    key = np.sort(pos * psize + idx)
    if (key[1:] == key[:-1]).any():
        raise _fail("policy_index repeats a move within a position")
    prob = rec.policy_prob.astype(np.float64)
    if not np.isfinite(prob).all() or (prob < 0).any():
        raise _fail("policy_prob has a negative or non-finite value")
    sums = np.bincount(pos, weights=prob, minlength=t_len)
    nonempty = np.diff(off) > 0
    if (np.abs(sums[nonempty] - 1.0) > PROB_SUM_TOL).any():
        t = int(np.flatnonzero(nonempty)[np.argmax(np.abs(sums[nonempty] - 1.0))])
        raise _fail(f"policy_prob of position {t} sums to {sums[t]:.4f}, not 1")

    if rec.weight is not None and (not np.isfinite(rec.weight).all() or (rec.weight < 0).any()):
        raise _fail("weight has a negative or non-finite value")
    _check_vectors(rec, players)
    if rec.kind == "dqn":
        _check_dqn(rec, prob, pos, t_len, h0)
    elif rec.reward is not None:
        raise _fail(f"a {rec.kind} record carries rewards (only dqn records do)")
    return rules


def _check_vectors(rec: GameRecord, players: int) -> None:
    """The result vector and the root value vectors: each entry in [0, 1], each vector summing to 1."""
    for name in ("scores", "root_shares"):
        a = getattr(rec, name)
        if not np.isfinite(a).all() or (a < 0).any() or (a > 1).any():
            raise _fail(f"{name} has a value outside [0, 1]")
        sums = a.reshape(-1, players).astype(np.float64).sum(axis=1)
        if (np.abs(sums - 1.0) > SCORE_SUM_TOL).any():
            raise _fail(f"{name} does not sum to 1 (sums {float(sums[np.argmax(np.abs(sums - 1.0))]):.4f})")


def _check_dqn(rec: GameRecord, prob: np.ndarray, pos: np.ndarray, t_len: int, h0: int) -> None:
    """A ``dqn`` record: rewards, one-hot actions over the legal moves, the whole game."""
    if rec.reward is None:
        raise _fail("a dqn record has no rewards")
    if not np.isfinite(rec.reward).all():
        raise _fail("reward has a non-finite value")
    if h0 != 0 or t_len != rec.plies:
        raise _fail(f"a dqn record holds a whole game from its start: T={t_len} positions, plies={rec.plies}, "
                    f"{h0} start states")
    if ((prob != 0.0) & (prob != 1.0)).any():
        raise _fail("a dqn record's policy_prob is not one-hot (1 on the move played, 0 elsewhere)")
    ones = np.bincount(pos, weights=prob, minlength=t_len)
    entries = np.bincount(pos, minlength=t_len)
    if (ones[entries > 0] != 1.0).any():
        raise _fail("a dqn record's position has no single move played among its legal moves")


# ---------------------------------------------------------------------------------------------
# Wire format
# ---------------------------------------------------------------------------------------------


def encode_record(rec: GameRecord, codec: str = "zlib", level: int = 6) -> bytes:
    """The record as msgpack bytes (validated first: a bad record fails at its source).

    ``codec`` ``zlib`` (default; level 6 is 11-19% smaller than level 1 and as small as level 9,
    for well under 0.1% of the time the game took to play) or ``none``.
    """
    if codec not in CODECS:
        raise ValueError(f"unknown codec {codec!r}; valid: {', '.join(CODECS)}")
    validate_record(rec)
    specs, blobs = [], []
    for name in _ARRAYS:
        a = getattr(rec, name)
        if a is None:
            continue
        a = np.ascontiguousarray(a)  # validated: little-endian wire dtypes already
        specs.append([name, a.dtype.str, list(a.shape)])
        blobs.append(a.tobytes())
    raw = b"".join(blobs)
    data = zlib.compress(raw, level) if codec == "zlib" else raw
    meta = {name: getattr(rec, name) for name in _META_TYPES}
    meta["kind"] = rec.kind
    doc = {"magic": MAGIC, "schema": SCHEMA, "meta": meta, "arrays": specs, "codec": codec,
           "size": len(raw), "data": data}
    return msgpack.packb(doc, use_bin_type=True)


def _unpack(data: bytes) -> dict[str, Any]:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise _fail(f"record is {type(data).__name__}, not bytes")
    if len(data) > MAX_RECORD_BYTES:
        raise _fail(f"record of {len(data)} bytes exceeds {MAX_RECORD_BYTES}")
    try:
        doc = msgpack.unpackb(bytes(data), raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise _fail(f"not a msgpack record ({type(exc).__name__}: {exc}); truncated or foreign bytes?") from None
    if not isinstance(doc, dict):
        raise _fail(f"record is a msgpack {type(doc).__name__}, not a map", "foreign")
    if doc.get("magic") != MAGIC:
        raise _fail(f"magic {str(doc.get('magic'))[:40]!r} is not {MAGIC!r}: not a hopzero game record", "foreign")
    schema = doc.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise _fail(f"schema {schema!r} is not a positive integer")
    if schema > SCHEMA:
        raise _fail(f"schema {schema} is newer than this reader's {SCHEMA}; upgrade the learner", "future")
    return doc


def _blob(doc: dict[str, Any]) -> bytes:
    codec, size, data = doc.get("codec"), doc.get("size"), doc.get("data")
    if codec not in CODECS:
        raise _fail(f"unknown codec {codec!r}")
    if not isinstance(data, bytes) or not isinstance(size, int) or not 0 <= size <= MAX_RECORD_BYTES:
        raise _fail("data or size missing or of the wrong type")
    if codec == "none":
        raw = data
    else:
        d = zlib.decompressobj()
        try:
            # max_length bounds the output: a small forged blob cannot expand without limit.
            raw = d.decompress(data, size + 1)
        except zlib.error as exc:
            raise _fail(f"zlib data is corrupt ({exc})") from None
        if not d.eof or d.unconsumed_tail or d.unused_data:
            raise _fail("zlib data is truncated or has trailing bytes")
    if len(raw) != size:
        raise _fail(f"data holds {len(raw)} bytes, the header says {size}")
    return raw


def decode_record(data: bytes) -> GameRecord:
    """Parse and fully validate a record; raises :class:`RecordError` naming the problem."""
    try:
        return _decode(data)
    except RecordError:
        raise
    except Exception as exc:  # a check tripped over data no check foresaw: still just a bad record
        raise _fail(f"record failed validation ({type(exc).__name__}: {exc})") from None


def _decode(data: bytes) -> GameRecord:
    doc = _unpack(data)
    meta, specs = doc.get("meta"), doc.get("arrays")
    if not isinstance(meta, dict) or not isinstance(specs, list):
        raise _fail("meta or arrays missing")
    legacy = doc["schema"] < 4  # results as outcome and root_value (module docstring)
    meta_types = {**_META_TYPES, "outcome": int} if legacy else _META_TYPES
    missing = sorted(set(meta_types) - set(meta))
    if missing:
        raise _fail(f"meta lacks {missing}")
    allowed = {**_ARRAYS, **_LEGACY_ARRAYS} if legacy else _ARRAYS
    raw = _blob(doc)
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    for spec in specs:
        if not (isinstance(spec, list) and len(spec) == 3 and isinstance(spec[0], str) and isinstance(spec[1], str)
                and isinstance(spec[2], list) and all(isinstance(d, int) and d >= 0 for d in spec[2])):
            raise _fail(f"bad array spec {str(spec)[:80]}")
        name, dtype_str, shape = spec
        if name not in allowed or name in arrays:
            raise _fail(f"unknown or repeated array {name[:40]!r}")
        try:
            dtype = np.dtype(dtype_str)
        except TypeError:
            raise _fail(f"{name}: bad dtype {dtype_str[:40]!r}") from None
        if dtype not in allowed[name]:
            raise _fail(f"{name} has dtype {dtype_str[:40]}, needs one of {[d.str for d in allowed[name]]}")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if offset + nbytes > len(raw):
            raise _fail(f"{name} {shape} runs past the end of the data ({len(raw)} bytes)")
        a = np.frombuffer(raw, dtype=dtype, count=count, offset=offset).reshape(shape)
        if dtype == np.dtype("?") and (a.view(np.uint8) > 1).any():
            raise _fail(f"{name} has bytes other than 0/1")
        arrays[name] = a
        offset += nbytes
    if offset != len(raw):
        raise _fail(f"data has {len(raw) - offset} bytes no array claims")
    kind = meta.get("kind", "search" if doc["schema"] < 2 else None)  # schema 1 had search records only
    if not isinstance(kind, str):
        raise _fail(f"meta.kind is {type(kind).__name__}, needs str (schema {doc['schema']})")
    if doc["schema"] < 2 and kind != "search":
        raise _fail(f"kind {kind[:40]!r} in a schema-1 record (which had search records only)")
    if legacy:
        _migrate(doc["schema"], meta, arrays)
    absent = sorted(set(_ARRAYS) - set(_OPTIONAL) - set(arrays))
    if absent:
        raise _fail(f"arrays missing: {absent}")
    kwargs = {name: meta[name] for name in _META_TYPES}
    rec = GameRecord(kind=kind, **kwargs, **{n: arrays.get(n) for n in _ARRAYS})
    validate_record(rec)
    return rec


def _migrate(schema: int, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """A record written before schema 4 in today's layout, in place: two players' ``outcome`` and
    ``root_value`` become ``scores`` and ``root_shares`` (module docstring); three or more players
    (schema 3) held those already. Everything else is checked by :func:`validate_record` after."""
    try:
        players = Rules.from_dict(meta["rules"]).players
    except (RulesError, TypeError, ValueError, AttributeError) as exc:
        raise _fail(f"rules: {exc}") from None
    outcome, root_value, to_move = meta["outcome"], arrays.pop("root_value", None), arrays.get("to_move")
    if not isinstance(outcome, int) or isinstance(outcome, bool) or outcome not in (-1, 0, 1):
        raise _fail(f"outcome {str(outcome)[:20]} is not -1, 0 or 1")
    if root_value is None or to_move is None or root_value.shape != to_move.shape or root_value.ndim != 1:
        raise _fail("root_value is missing or its shape is not to_move's")
    if players > 2:  # schema 3 wrote the vectors: outcome and root_value are redundant
        if schema < 3 or outcome != 0:
            raise _fail(f"a record of {players} players needs schema 3 and outcome 0 (schema {schema}, "
                        f"outcome {outcome})")
        return
    if not np.isfinite(root_value).all() or (np.abs(root_value) > 1.0).any():
        raise _fail("root_value has a value outside [-1, 1]")
    if "scores" in arrays or "root_shares" in arrays:
        raise _fail("a two-player record before schema 4 carries scores or root_shares")
    movers = to_move.astype(np.int64)
    if ((movers < 0) | (movers > 1)).any():
        raise _fail("to_move has a value other than 0/1")
    mine = (1.0 + root_value.astype(np.float64)) / 2.0
    shares = np.empty((len(movers), 2), dtype=np.float32)
    shares[np.arange(len(movers)), movers] = mine
    shares[np.arange(len(movers)), 1 - movers] = 1.0 - mine
    arrays["scores"] = np.array([(1 + outcome) / 2, (1 - outcome) / 2], dtype=np.float32)
    arrays["root_shares"] = shares
