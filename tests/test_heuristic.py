"""Stage-1 greedy self-play data (actors.heuristic): legal replays, greedy targets, values from
the result vector, the 5:3:2 start mix, the keep fraction, draws discarded, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from actor_helpers import board_of, final_move_exists, move_between, record_states, replay

from actors.heuristic import START_KINDS, HeuristicWorker, greedy_targets, random_start_board
from ccengine import preset
from ccengine._core import State
from ccengine.encoding import index_moves
from ccengine.players import greedy_candidates
from learner.records import decode_record, encode_record

CC49 = preset("cc49")
SMALL = preset("small-5-6")


def worker(rules=CC49, seed=0, **kwargs):
    return HeuristicWorker(rules, run_id="run", config_hash="cfg", actor="h-0", seed=seed, **kwargs)


@pytest.fixture(scope="module")
def cc49_records():
    w = worker(keep_fraction=0.3)
    return w, w.generate(120)


def test_records_decode_and_replay_as_legal_games(cc49_records):
    _, records = cc49_records
    assert len(records) > 100
    for rec in records:
        assert decode_record(encode_record(rec)).same_as(rec)
        assert rec.model_version == -1 and rec.actor == "h-0"
        last = replay(CC49, rec, first_ply_is_start=False)
        assert rec.plies == rec.start_pieces.shape[0] + rec.num_positions
        assert final_move_exists(last, rec.scores)
        assert sorted(rec.scores) == [0.0, 1.0]  # draws are discarded


def test_targets_are_every_move_of_largest_forward_distance(cc49_records):
    _, records = cc49_records
    diag = CC49.geometry.diag
    for rec in records[:40]:
        states, h = record_states(rec)
        for t in range(rec.num_positions):
            lists, mover = states[h + t], int(rec.to_move[t])
            board = [-1] * CC49.cells
            for p in (0, 1):
                for c in lists[p]:
                    board[int(c)] = p
            legal = State(CC49, board, mover, 0).legal_moves()
            sign = 1 if mover == 0 else -1
            psi = {m: sign * (diag[m[0]] - diag[m[1]]) for m in legal}
            best = max(psi.values())
            idx, prob = rec.policy(t)
            named = {(int(s), int(e)) for s, e in index_moves(CC49, lists, idx.astype(np.int64), mover)}
            assert named == {m for m in legal if psi[m] == best}
            np.testing.assert_allclose(prob, 1.0 / len(named), rtol=1e-6)
            # the move played is the greedy player's (largest psi, then the last checker)
            if h + t + 1 < len(states):
                changed = np.flatnonzero(states[h + t + 1][mover] != lists[mover])
                played = (int(lists[mover][changed[0]]), int(states[h + t + 1][mover][changed[0]]))
                assert played in greedy_candidates(CC49, mover, legal)


def test_values_are_the_result_vector_at_every_position(cc49_records):
    _, records = cc49_records
    for rec in records:
        assert np.array_equal(rec.root_shares, np.tile(rec.scores, (rec.num_positions, 1)))


def test_random_moves_start_is_history():
    w = worker(start_mix=(0, 1, 0), random_moves=3, keep_fraction=1.0)
    records = w.generate(20)
    assert len(records) == 20
    for rec in records:
        assert rec.start_pieces.shape[0] == 6 and (rec.start_pieces >= 0).all()
        states, h = record_states(rec)
        assert h == 6
        replay(CC49, rec)  # the oldest state is the start position
        assert int(rec.to_move[0]) == 0  # 6 random plies: player 0 moves first after them
    # different games, different openings
    assert len({rec.start_pieces.tobytes() for rec in records}) > 15


def test_normal_and_random_starts_have_no_history():
    for kind, mix in (("normal", (0, 0, 1)), ("random_position", (1, 0, 0))):
        w = worker(start_mix=mix, keep_fraction=1.0)
        records = w.generate(20)
        for rec in records:
            assert rec.start_pieces.shape[0] == 0
            first = rec.pieces[0]
            board = [-1] * CC49.cells
            for p in (0, 1):
                for c in first[p]:
                    board[int(c)] = p
            is_start = tuple(board) == CC49.geometry.start_board()
            assert is_start == (kind == "normal")
        assert w.stats()["starts"][kind] == 20


def test_random_start_positions_anywhere_and_not_over():
    rng = np.random.default_rng(0)
    home0 = CC49.geometry.home[0]
    in_home = 0
    for _ in range(300):
        state = random_start_board(CC49, rng)
        assert not state.is_terminal() and state.to_move == 0 and state.ply == 0
        board = state.board
        assert board.count(0) == CC49.k and board.count(1) == CC49.k
        in_home += sum(1 for c in home0 if board[c] == 1)
    assert in_home > 0  # the opponent's home is not excluded: the whole board, as the paper's code
    # a board where every draw is over is refused (k = 1 on 4 x 4 almost never is; force it)
    with pytest.raises(RuntimeError):
        random_start_board(preset("small-4-1"), np.random.default_rng(0), tries=0)


def test_start_mix_ratio():
    w = worker(SMALL, seed=5)
    w.generate(1000)
    starts = w.stats()["starts"]
    assert sum(starts.values()) == 1000
    for kind, share in zip(START_KINDS, (0.5, 0.3, 0.2)):
        assert abs(starts[kind] / 1000 - share) < 0.05, starts


def test_keep_fraction():
    w = worker(SMALL, seed=6, keep_fraction=0.04, return_unkept=True)
    records = w.generate(600)
    kept = sum(int(r.keep.sum()) for r in records)
    total = sum(r.num_positions for r in records)
    assert total > 5000
    assert abs(kept / total - 0.04) < 0.012
    s = w.stats()
    assert s["kept_positions"] == kept and s["positions"] == total and s["unkept_discarded"] == 0
    # without return_unkept a record without a kept position is dropped and counted
    w2 = worker(SMALL, seed=6, keep_fraction=0.04)
    rec2 = w2.generate(600)
    assert all(r.keep.any() for r in rec2)
    assert len(rec2) + w2.stats()["unkept_discarded"] == len(records)


def test_draws_are_discarded():
    w = worker(CC49, max_plies=8, keep_fraction=1.0, start_mix=(0, 1, 1))  # no game ends that soon
    assert w.generate(30) == []
    s = w.stats()
    assert s["draws_discarded"] == 30 and s["records"] == 0 and s["games"] == 30


def test_deterministic_given_the_seed():
    a = worker(seed=9, keep_fraction=0.2).generate(40)
    b = worker(seed=9, keep_fraction=0.2).generate(40)
    c = worker(seed=10, keep_fraction=0.2).generate(40)
    assert len(a) == len(b) and all(x.same_as(y) for x, y in zip(a, b))
    assert [x.seed for x in a] != [x.seed for x in c]


def test_greedy_targets_helper():
    state = State(CC49)
    moves = state.legal_moves()
    best, chosen = greedy_targets(CC49, 0, moves)
    assert set(chosen) <= set(best)
    assert {moves[i] for i in chosen} == set(greedy_candidates(CC49, 0, moves))
    assert greedy_targets(CC49, 0, [(-1, -1)]) == ([], [0])


def test_bad_arguments():
    with pytest.raises(ValueError):
        worker(start_mix=(1, 2))
    with pytest.raises(ValueError):
        worker(start_mix=(0, 0, 0))
    with pytest.raises(ValueError):
        worker(keep_fraction=1.5)
    with pytest.raises(ValueError):
        worker(random_moves=-1)


def test_star_records_have_greedy_targets():
    star = preset("star2")
    w = worker(star, seed=1, keep_fraction=0.2, start_mix=(0, 1, 1))
    records = w.generate(6)
    assert records  # greedy against greedy on the star is often drawn by repetition, not always
    advance = star.geometry.advances
    for rec in records:
        assert decode_record(encode_record(rec)).same_as(rec) and sorted(rec.scores) == [0.0, 1.0]
        states, h = record_states(rec)
        for t in range(rec.num_positions):
            lists, mover = states[h + t], int(rec.to_move[t])
            legal = State(star, board_of(star, lists), mover, 0).legal_moves()
            psi = {m: advance[mover][m[1]] - advance[mover][m[0]] for m in legal}
            idx, _ = rec.policy(t)
            named = {(int(s), int(e)) for s, e in index_moves(star, lists, idx.astype(np.int64), mover)}
            assert named == {m for m in legal if psi[m] == max(psi.values())}
            _, chosen = greedy_targets(star, mover, legal)
            assert {legal[i] for i in chosen} == set(greedy_candidates(star, mover, legal))


def test_an_alphabeta_teacher_plays_its_search_move_and_makes_it_the_one_target():
    """stage1.teacher=alphabeta: both sides play the search's move, in its game's history (the
    star's repetition rule is in the search), and that move is the record's whole target."""
    from ccengine.alphabeta import AlphaBetaPlayer

    star = preset("star2")
    w = worker(star, seed=2, keep_fraction=1.0, start_mix=(1, 1, 0), teacher="alphabeta:depth=2")
    records = w.generate(4)
    assert records and w.stats()["records"] == len(records)
    teacher = AlphaBetaPlayer(star, depth=2)
    for rec in records:
        assert decode_record(encode_record(rec)).same_as(rec) and sorted(rec.scores) == [0.0, 1.0]
        states, h = record_states(rec)
        state = State(star, board_of(star, states[0]), 0, 0)
        for i in range(1, len(states)):
            mover = state.to_move
            move = move_between(states[i - 1], states[i], mover)
            if i - 1 >= h:  # a recorded position: the teacher's move, the one target
                assert move == teacher.select(state)
                idx, prob = rec.policy(i - 1 - h)
                named = index_moves(star, states[i - 1], idx.astype(np.int64), mover)
                assert [tuple(map(int, m)) for m in named] == [move] and prob.tolist() == [1.0]
            state.play(move)


def test_a_teacher_that_is_not_greedy_or_alphabeta_is_refused():
    from actors.config import StageOneConfig
    from plumbing.fields import FieldError

    for spec in ("minimax", "mcts:sims=8", "alphabeta:depth=0", "alphabeta:speed=1"):
        with pytest.raises(FieldError, match="teacher"):
            StageOneConfig(teacher=spec)
        with pytest.raises(ValueError, match="teacher"):
            worker(preset("star2"), teacher=spec)
    assert StageOneConfig(teacher="alphabeta:depth=3").teacher == "alphabeta:depth=3"
