"""Piece IDs, policy indices, the two encoders and the board reflection (ccengine.encoding/symmetry)."""

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
from ccengine.notation import Position, format_position, parse_position
from ccengine.reference import ReferenceState
from ccengine.rules import PASS, Rules, preset
from ccengine.symmetry import (
    reflect_board,
    reflect_move,
    reflect_moves,
    reflect_pieces,
    reflect_planes,
    reflect_policy,
    reflect_position,
    reflect_table,
)

ALL_PRESETS = ["cc49", "paper", "cc81"] + [f"small-{n}-{k}" for n in (4, 5, 6) for k in (1, 3, 6)]
# Presets cheap enough for the pure-Python reference engine to play whole games on.
GAME_PRESETS = ["cc49", "paper", "small-4-3", "small-5-6", "small-6-1"]


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


def random_position(rules: Rules, rng: random.Random) -> Position:
    cells = rng.sample(range(rules.cells), 2 * rules.k)
    board = [-1] * rules.cells
    for j, cell in enumerate(cells):
        board[cell] = 0 if j < rules.k else 1
    return Position(tuple(board), rng.randrange(2), rng.randrange(rules.max_plies + 1))  # a game ends there


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


@pytest.mark.parametrize("name", GAME_PRESETS)
@pytest.mark.parametrize("rotate", [False, True])
def test_move_index_round_trip_through_random_games(name, rotate):
    rules = preset(name)
    state, tracker = ReferenceState(rules), PieceTracker(rules)
    for move in random_game(rules, seed=GAME_PRESETS.index(name), plies=rules.max_plies, forward_bias=0.5):
        legal = state.legal_moves()
        indices = tracker.move_indices(legal, rotate)
        if legal != [PASS]:
            assert len(set(indices.tolist())) == len(legal)
            assert ((0 <= indices) & (indices < rules.k * rules.cells)).all()
        back = index_moves(rules, tracker.current, indices, state.to_move, rotate)
        assert [tuple(m) for m in back.tolist()] == legal
        s, e = move
        moving_id = tracker.id_of(s) if move != PASS else -1
        state.play(move)
        tracker.play(move)
        assert tracker.board == state.board and tracker.to_move == state.to_move
        if move != PASS:
            assert tracker.id_of(e) == moving_id  # the ID travels with its piece


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


@pytest.mark.parametrize("name", ALL_PRESETS)
def test_position_text_round_trip(name):
    rules = preset(name)
    rng = random.Random(name)
    for _ in range(20):
        position = random_position(rules, rng)
        text = format_position(rules, position)
        assert parse_position(rules, text) == position
        assert format_position(rules, parse_position(rules, text)) == text


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


# ---------------------------------------------------------------------------------------------
# Symmetry
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_PRESETS)
def test_reflection_is_an_involution_that_keeps_the_homes(name):
    rules = preset(name)
    table = reflect_table(rules)
    assert (table[table] == np.arange(rules.cells)).all()
    assert table.tolist() == [rules.geometry.reflect(i) for i in range(rules.cells)]
    start = rules.geometry.start_board()
    assert reflect_board(rules, start) == start
    rng = random.Random(name)
    position = random_position(rules, rng)
    assert reflect_position(rules, reflect_position(rules, position)) == position
    planes = np.random.default_rng(0).random((2, 3, rules.n, rules.n))
    np.testing.assert_array_equal(reflect_planes(reflect_planes(planes)), planes)
    policy = np.random.default_rng(1).random((2, rules.k * rules.cells))
    np.testing.assert_array_equal(reflect_policy(rules, reflect_policy(rules, policy)), policy)


@pytest.mark.parametrize("name", GAME_PRESETS)
def test_reflected_positions_have_the_reflected_legal_moves(name):
    rules = preset(name)
    state = ReferenceState(rules)
    for move in random_game(rules, seed=11, plies=30):
        mirror = ReferenceState(rules, reflect_board(rules, state.board), state.to_move, state.ply)
        assert sorted(reflect_move(rules, m) for m in state.legal_moves()) == mirror.legal_moves()
        state.play(move)


@pytest.mark.parametrize("name", ["cc49", "small-4-3", "small-6-6"])
def test_reflected_games_stay_legal_and_end_alike(name):
    rules = preset(name)
    decided = 0
    for seed in range(3):
        moves = random_game(rules, seed, plies=rules.max_plies, forward_bias=0.9)
        a, b = ReferenceState(rules), ReferenceState(rules)
        for move in moves:
            a.play(move)
            b.play(reflect_move(rules, move))  # raises if the reflected move were illegal
            assert b.board == reflect_board(rules, a.board)
        assert a.is_terminal() and b.is_terminal() and a.result() == b.result()
        decided += a.result() != 0
    assert decided  # at least one game ends with a winner, not only by the ply limit


@pytest.mark.parametrize("name", ["paper", "general"])
@pytest.mark.parametrize("preset_name", ["cc49", "small-5-3"])
def test_encode_commutes_with_reflection(name, preset_name):
    rules = preset(preset_name)
    enc = encoding_for(rules, name)
    tracker = PieceTracker(rules)
    pieces, to_move = [], []
    for move in random_game(rules, seed=2, plies=6):
        tracker.play(move)
        pieces.append(tracker.piece_lists(3))
        to_move.append(tracker.to_move)
    pieces = np.stack(pieces)
    planes = enc.encode(pieces, np.array(to_move))
    np.testing.assert_array_equal(enc.encode(reflect_pieces(rules, pieces), np.array(to_move)), reflect_planes(planes))


@pytest.mark.parametrize("name", ["paper", "general"])
def test_policy_reflection_follows_the_moves(name):
    rules = preset("cc49")
    enc = encoding_for(rules, name)
    tracker = PieceTracker(rules)
    for move in random_game(rules, seed=4, plies=7):
        tracker.play(move)
    legal = ReferenceState(rules, tracker.board, tracker.to_move).legal_moves()
    current = tracker.current
    idx = enc.move_indices(current, legal, tracker.to_move)
    policy = np.zeros(enc.policy_size)
    policy[idx] = np.arange(1, len(legal) + 1)
    reflected = reflect_policy(rules, policy)
    ridx = enc.move_indices(reflect_pieces(rules, current), reflect_moves(rules, legal), tracker.to_move)
    np.testing.assert_array_equal(reflected[ridx], policy[idx])
    assert reflected.sum() == policy.sum()


@pytest.mark.parametrize("name", ["cc49", "small-5-3", "star2", "star3", "star4", "star6"])
def test_each_seat_frame_turns_its_players_home_onto_player_0s(name):
    from ccengine.encoding import seat_frame

    rules = preset(name)
    geo = rules.geometry
    assert seat_frame(rules, 0).tolist() == list(range(rules.cells))
    for p in range(rules.players):
        frame = seat_frame(rules, p)
        assert sorted(frame.tolist()) == list(range(rules.cells))
        assert {int(frame[i]) for i in geo.home[p]} == set(geo.home[0])
        assert {int(frame[i]) for i in geo.goal(p)} == set(geo.goal(0))
    if rules.players == 2:  # two players: the half turn, on either board
        assert seat_frame(rules, 1).tolist() == [rules.cells - 1 - i for i in range(rules.cells)]


@pytest.mark.parametrize(
    "name, perm",
    [("cc49", [0, 1]), ("star2", [0, 1]), ("star3", [0, 2, 1]), ("star6", [0, 5, 4, 3, 2, 1]), ("star4", None)],
)
def test_the_reflection_permutes_the_seats_after_the_mover_alike_for_every_mover(name, perm):
    from ccengine.symmetry import seat_reflection

    got = seat_reflection(preset(name))
    assert (got if got is None else got.tolist()) == perm
