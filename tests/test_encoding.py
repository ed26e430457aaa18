"""Piece IDs, policy indices and the two encoders (ccengine.encoding) on hand-checked cases.

Every board's encoding shapes, policy index round trip and reflection: tests/test_conformance.py.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ccengine.encoding import (
    ENCODINGS,
    PieceTracker,
    canonical_ids,
    encode_general,
    encode_paper,
    encoding_for,
    index_moves,
    policy_indices,
)
from ccengine.reference import ReferenceState
from ccengine.rules import PASS, Rules, preset

ALL_PRESETS = ["cc49", "paper", "cc81"] + [f"small-{n}-{k}" for n in (4, 5, 6) for k in (1, 3, 6)]


def rc(rules: Rules, r: int, c: int) -> int:
    return r * rules.n + c


def random_game(rules: Rules, seed: int, plies: int, forward_bias: float = 0.0) -> list[tuple[int, int]]:
    """Moves of a random game (stopping at ``plies`` or the end); ``forward_bias`` favours psi-best moves."""
    rng = random.Random(seed)
    state = ReferenceState(rules)
    moves = []
    while not state.is_terminal() and len(moves) < plies:
        legal = state.legal_moves()
        if rng.random() < forward_bias and legal != [PASS]:
            best = max(rules.geometry.forward_distance(state.to_move, m) for m in legal)
            legal = [m for m in legal if rules.geometry.forward_distance(state.to_move, m) == best]
        move = rng.choice(legal)
        state.play(move)
        moves.append(move)
    return moves


# ---------------------------------------------------------------------------------------------
# Piece IDs and policy indices
# ---------------------------------------------------------------------------------------------


def test_canonical_ids_of_start_match_the_paper():
    rules = preset("cc49")
    ids = canonical_ids(rules, rules.geometry.start_board())
    p0 = [(6, 0), (5, 0), (6, 1), (4, 0), (5, 1), (6, 2)]
    p1 = [(0, 6), (1, 6), (0, 5), (2, 6), (1, 5), (0, 4)]
    assert ids[0].tolist() == [rc(rules, r, c) for r, c in p0]
    assert ids[1].tolist() == [rc(rules, r, c) for r, c in p1]


@pytest.mark.parametrize("name", ALL_PRESETS)
def test_canonical_ids_of_rotated_player_1_are_player_0s(name):
    rules = preset(name)
    ids = canonical_ids(rules, rules.geometry.start_board())
    assert (rules.cells - 1 - ids[1]).tolist() == ids[0].tolist()


def test_paper_181th_element():
    # "the 181th element ... refers to ... checker with ID 4 to the 5th row and 6th column" (1-based).
    rules = preset("paper")
    enc = encoding_for(rules, "paper")
    assert enc.policy_size == 294 and enc.in_planes == 7
    tracker = PieceTracker(rules)
    (s, e), = index_moves(rules, tracker.current, [180], 0).tolist()
    assert tracker.id_of(s) == 3 and divmod(e, 7) == (4, 5)
    assert tracker.move_index((s, e)) == 180


def test_canonical_ids_reject_wrong_piece_count():
    rules = preset("small-4-3")
    board = list(rules.geometry.start_board())
    board[board.index(0)] = -1
    with pytest.raises(ValueError, match="player 0 has 2 pieces"):
        canonical_ids(rules, board)


def test_tracker_history_and_undo():
    rules = preset("small-4-3")
    tracker = PieceTracker(rules)
    start = tracker.current
    lists = tracker.piece_lists(3)
    assert (lists[0] == start).all() and (lists[1:] == -1).all()
    moves = random_game(rules, seed=3, plies=4)
    snapshots = [start]
    for move in moves:
        tracker.play(move)
        snapshots.append(tracker.current)
    lists = tracker.piece_lists(3)
    for h in range(3):
        assert (lists[h] == snapshots[-1 - h]).all()
    for _ in moves:
        tracker.undo()
    assert (tracker.current == start).all() and tracker.to_move == 0
    with pytest.raises(ValueError):
        tracker.undo()


def test_tracker_rejects_bad_moves():
    rules = preset("small-4-3")
    tracker = PieceTracker(rules)
    own = int(tracker.current[0, 0])
    other = int(tracker.current[1, 0])
    with pytest.raises(ValueError, match="no piece of player 0"):
        tracker.play((other, 5))
    with pytest.raises(ValueError, match="occupied"):
        tracker.play((own, int(tracker.current[0, 1])))
    with pytest.raises(ValueError, match="no piece of player 0"):
        policy_indices(rules, tracker.current, [(other, 5)], 0)
    assert tracker.move_index(PASS) == -1 and tracker.index_move(-1) == PASS


# ---------------------------------------------------------------------------------------------
# Encoders
# ---------------------------------------------------------------------------------------------


def test_paper_encoding_after_one_move():
    rules = preset("paper")
    tracker = PieceTracker(rules)
    start = tracker.current
    tracker.play((rc(rules, 4, 0), rc(rules, 3, 0)))  # player 0's ID 3 steps up
    planes = encoding_for(rules, "paper").encode_tracker(tracker)
    assert planes.shape == (7, 7, 7) and planes.dtype == np.float32

    def ids(lists):
        m = np.zeros(49, np.float32)
        m[lists] = np.arange(1, 7)
        return m.reshape(7, 7)

    now = tracker.current
    # Player 1 to move: its own ID matrix first, then the opponent's, newest state first.
    np.testing.assert_array_equal(planes[0], ids(now[1]))
    np.testing.assert_array_equal(planes[1], ids(now[0]))
    np.testing.assert_array_equal(planes[2], ids(start[1]))
    np.testing.assert_array_equal(planes[3], ids(start[0]))
    assert planes[1][3, 0] == 4 and planes[3][4, 0] == 4
    assert not planes[4:6].any()  # no state two plies before this one
    assert (planes[6] == 1).all()  # player 1 (the paper's "Player 2") to move
    tracker.undo()
    assert not encoding_for(rules, "paper").encode_tracker(tracker)[6].any()


def _brute_force(rules: Rules, name: str, pieces: np.ndarray, to_move: int, history: int) -> np.ndarray:
    """The encodings' definitions written cell by cell, as an independent check."""
    n, k = rules.n, rules.k
    enc = encoding_for(rules, name, history)
    out = np.zeros(enc.input_shape, np.float32)
    rot = name == "general" and to_move == 1

    def place(plane, cell, value):
        if cell >= 0:
            cell = rules.cells - 1 - cell if rot else cell
            out[plane, cell // n, cell % n] = value

    for h in range(min(history, pieces.shape[0])):
        for j in range(k):
            for side, p in enumerate((to_move, 1 - to_move)):
                place(2 * h + side, pieces[h, p, j], j + 1 if name == "paper" else 1)
    if name == "paper":
        out[-1] = to_move
    else:
        for j in range(k):
            place(2 * history + j, pieces[0, to_move, j], 1)
        out[2 * history + k] = to_move
        out[-1] = 1
    return out


@pytest.mark.parametrize("name", ["paper", "general"])
@pytest.mark.parametrize("preset_name", ["cc49", "small-5-3", "cc81"])
def test_encoders_match_their_definition_in_a_batch(name, preset_name):
    rules = preset(preset_name)
    history = 3
    trackers = []
    for seed in range(4):
        tracker = PieceTracker(rules)
        for move in random_game(rules, seed, plies=seed + 1) if preset_name != "cc81" else []:
            tracker.play(move)
        trackers.append(tracker)
    pieces = np.stack([t.piece_lists(history) for t in trackers])
    to_move = np.array([t.to_move for t in trackers])
    enc = encoding_for(rules, name)
    out = np.full((len(trackers), *enc.input_shape), 7.0, np.float32)  # stale contents get cleared
    result = enc.encode(pieces, to_move, out=out)
    assert result is out
    for b, tracker in enumerate(trackers):
        expected = _brute_force(rules, name, pieces[b], int(to_move[b]), history)
        np.testing.assert_array_equal(out[b], expected)


def test_encoder_buffer_checks():
    rules = preset("cc49")
    pieces = PieceTracker(rules).piece_lists(3)[None]
    with pytest.raises(ValueError, match="float32"):
        encode_paper(rules, pieces, 0, out=np.zeros((1, 7, 7, 7), np.float64))
    with pytest.raises(ValueError, match="shape"):
        encode_general(rules, pieces[:, :, :, :3], 0)
    with pytest.raises(ValueError, match="unknown encoding"):
        encoding_for(rules, "nope")
    assert set(ENCODINGS) == {"paper", "general"}
    assert encoding_for(rules, "general").in_planes == 14
    assert encoding_for(preset("cc81"), "general").in_planes == 18


@pytest.mark.parametrize("name", ["cc49", "small-5-6"])
def test_general_encoding_sees_player_1_as_player_0(name):
    # Swapping the colours and rotating the board gives player 0 the same view as player 1 had.
    rules = preset(name)
    enc = encoding_for(rules, "general")
    tracker = PieceTracker(rules)
    for move in random_game(rules, seed=5, plies=5):
        tracker.play(move)
    assert tracker.to_move == 1
    pieces = tracker.piece_lists(3)
    swapped = np.where(pieces >= 0, rules.cells - 1 - pieces, -1)[:, ::-1]
    a = enc.encode_one(pieces, 1)
    b = enc.encode_one(swapped, 0)
    side = 2 * enc.history + rules.k
    np.testing.assert_array_equal(np.delete(a, side, 0), np.delete(b, side, 0))
    assert a[side].all() and not b[side].any()
    legal = ReferenceState(rules, tracker.board, 1).legal_moves()
    mirrored = [(rules.cells - 1 - s, rules.cells - 1 - e) for s, e in legal]
    np.testing.assert_array_equal(
        enc.move_indices(pieces[0], legal, 1), enc.move_indices(swapped[0], mirrored, 0)
    )

