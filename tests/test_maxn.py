"""Three or more players: the max-n search, the value-vector head on every backend,
N-player records and the replay window, and a short real star3 training run."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_helpers import one_thread  # noqa: F401 (autouse fixture)

from ccengine._core import State
from ccengine._playout import RolloutEvaluator
from ccengine._search import SearchForest
from ccengine.encoding import PieceTracker, absolute_seats, encoding_for, mover_frame
from ccengine.engines import new_state
from ccengine.rules import preset
from ccengine.search import BatchedSearch, SearchConfig, UniformEvaluator, run_search, tables_for
from ccengine.symmetry import reflect_planes, seat_reflection
from learner.model import NetConfig, PolicyValueNet
from learner.network_evaluator import NetworkEvaluator, network_inference
from learner.records import RecordError, decode_record, encode_record, make_record
from learner.replay import WindowMirror
from learner.training import LearnerConfig, Trainer

STAR3 = preset("star3")
EVAL = SearchConfig(num_simulations=200, random_opening_plies=0, explore_plies=0, root_noise=False,
                    temperature=0.0, c_puct=1.0)
VERSIONS = {"hopzero": "0.1.0", "numpy": "x", "torch": "y"}


class SeatEvaluator:
    """Uniform priors; the value vector a function of where player 1's pieces stand: after player
    1's move ``best`` (a piece on its end, none on its start) ``(0.5, 0.5, 0)``, after ``worse``
    ``(0, 0.4, 0.6)``, otherwise every seat gets 1/3. Player 1 prefers ``best`` (0.5 > 0.4 > 1/3); player 0 would rather
    player 1 went to ``worse``, where player 0 gets nothing (what a paranoid search would pick)."""

    needs_states = False

    def __init__(self, best: tuple[int, int], worse: tuple[int, int]) -> None:
        self.best, self.worse = best, worse

    def evaluate(self, pieces, to_move, legal, counts):
        b, m = legal.shape
        priors = (np.arange(m)[None, :] < counts[:, None]) / np.maximum(counts, 1)[:, None]
        own1 = pieces[:, 0, 1]
        values = np.full((b, 3), 1 / 3, dtype=np.float32)
        for move, value in ((self.worse, (0.0, 0.4, 0.6)), (self.best, (0.5, 0.5, 0.0))):
            after = (own1 == move[1]).any(axis=1) & ~(own1 == move[0]).any(axis=1)
            values[after] = value
        return priors.astype(np.float32), values


def player1_to_move():
    """star3 after one move of player 0, and two moves of player 1 with different ends."""
    state = new_state(STAR3)
    state.play(state.legal_moves()[0])
    moves = state.legal_moves()
    other = next(m for m in moves if m[1] != moves[0][1] and m[0] != moves[0][0])
    return state, moves[0], other


def test_each_node_chooses_by_its_own_movers_entry():
    state, best, worse = player1_to_move()
    assert state.to_move == 1
    search = BatchedSearch(STAR3, 1, EVAL, rng=np.random.default_rng(0))
    search.set_root(0, state)
    (res,) = [r for r in search.search(SeatEvaluator(best, worse)) if r is not None]
    assert res.move == best, "player 1 takes the move best for player 1 (max-n), not the worst for player 0"
    forest = search.forest
    forest.check_invariants(0)
    # The root's value vector is the mean backed up by seat, and sums to 1.
    assert abs(float(res.root_shares.sum()) - 1.0) < 1e-5
    i = next(i for i, m in enumerate(res.moves) if tuple(m) == best)
    assert res.q[i] == pytest.approx(0.0, abs=1e-5)  # 2 * 0.5 - 1: player 1's entry
    # One ply down, player 2 moves: its edges carry player 2's entry of (0.5, 0.5, 0), -1 per
    # visit, not the negation of player 1's value (a two-player search would store 0).
    moves, visits, wsum, _, _ = forest.node_edges(0, [best])
    seen = visits > 0
    assert seen.any()
    assert np.allclose(wsum[seen] / visits[seen], -1.0)


def test_a_three_player_search_takes_an_immediate_win():
    geometry = STAR3.geometry
    goal = sorted(geometry.goal(2))
    last = geometry.index[(5, -1)]            # the goal's inner corner, left empty
    near = geometry.index[(4, 0)]             # a step away from it, outside the goal
    board = list(geometry.start_board())
    board = [-1 if v == 2 else v for v in board]
    for cell in goal:
        if cell != last:
            board[cell] = 2
    board[near] = 2
    state = State(STAR3, board, 2, 60)
    check = state.copy()
    check.play((near, last))
    assert check.is_terminal() and tuple(check.scores()) == (0.0, 0.0, 1.0)
    for solver in (False, True):
        results = run_search([state], UniformEvaluator(3), EVAL.replace(num_simulations=300, solver=solver),
                             np.random.default_rng(1))
        assert results[0].move == (near, last)
        assert results[0].root_shares[2] > 0.9


def test_the_rollout_evaluator_gives_score_vectors():
    tables = tables_for(STAR3)
    ev = RolloutEvaluator(tables, policy="greedy", max_plies=400, seed=3)
    results = run_search([new_state(STAR3)], ev, EVAL.replace(num_simulations=8), np.random.default_rng(0))
    shares = results[0].root_shares
    assert shares.shape == (3,) and abs(float(shares.sum()) - 1.0) < 1e-5
    with pytest.raises(ValueError, match="cap_value='advance'.*3 players"):
        RolloutEvaluator(tables, cap_value="advance")


def test_forest_refuses_values_of_the_wrong_shape():
    forest = SearchForest(tables_for(STAR3), 1)
    forest.set_root(0, new_state(STAR3))
    forest.start(0, 1)
    pieces = np.full((1, 1, 3, 10), -1, np.int8)
    to_move, counts = np.zeros(1, np.int8), np.zeros(1, np.int32)
    legal = np.zeros((1, tables_for(STAR3).max_moves), np.int32)
    assert forest.select(pieces, to_move, legal, counts) == 1
    priors = np.ones((1, legal.shape[1]), np.float32)
    with pytest.raises(ValueError, match=r"values must be float32 \[>= 1, 3\]"):
        forest.expand_and_backup(priors, np.zeros(1, np.float32))
    forest.expand_and_backup(priors, np.array([[0.2, 0.3, 0.5]], np.float32))
    assert np.allclose(forest.root_value_vector(0), [0.2, 0.3, 0.5])


def _leaf_batches(rules, *, games: int = 4, moves: int = 6):
    """Leaves a real star search asks about (all seats to move)."""
    batches = []

    class Recorder(UniformEvaluator):
        def evaluate(self, pieces, to_move, legal, counts):
            batches.append((pieces.copy(), to_move.copy(), legal.copy(), counts.copy()))
            return super().evaluate(pieces, to_move, legal, counts)

    search = BatchedSearch(rules, games, SearchConfig(num_simulations=8, random_opening_plies=2), history=3,
                           rng=np.random.default_rng(0))
    states = [new_state(rules) for _ in range(games)]
    for g, state in enumerate(states):
        search.set_root(g, state)
    for _ in range(moves):
        for g, result in enumerate(search.search(Recorder(rules.players))):
            if result is not None:
                states[g].play(result.move)
                search.play(g, result.move)
    return batches


@pytest.mark.parametrize("name", ["star3", "star4", "star6"])
def test_the_value_vector_head_on_every_backend(name):
    rules = preset(name)
    enc = encoding_for(rules, "general", history=3)
    torch.manual_seed(0)
    model = PolicyValueNet(NetConfig.for_rules(rules, enc.in_planes, "tiny"))
    assert model.config.value_outputs == rules.players
    backends = ("eager", "compile", "onnx", "onnx-int8") if name == "star3" else ("eager", "onnx", "onnx-int8")
    evs = {b: NetworkEvaluator(rules, enc, network_inference(rules, enc, model, backend=b)) for b in backends}
    batches = _leaf_batches(rules)
    assert {int(t) for _, tm, _, _ in batches for t in tm} == set(range(rules.players))
    for batch in batches[:6]:
        p0, v0 = evs["eager"].evaluate(*batch)
        assert v0.shape == (len(batch[1]), rules.players)
        assert np.allclose(v0.sum(axis=1), 1.0, atol=1e-5) and (v0 >= 0).all()
        for backend, ev in evs.items():
            p1, v1 = ev.evaluate(*batch)
            assert v1.shape == v0.shape and np.allclose(v1.sum(axis=1), 1.0, atol=1e-3)
            tol = 0.05 if backend == "onnx-int8" else 1e-4
            assert np.abs(v0 - v1).max() <= tol, backend
            assert np.abs(p0 - p1).sum(axis=1).max() <= (0.15 if backend == "onnx-int8" else 1e-3), backend
    # The network answers in the mover's frame; the evaluator hands the search absolute seats.
    pieces, tm, legal, counts = batches[-1]
    planes = enc.encode(pieces, tm)
    raw = evs["eager"].inference.evaluate(planes, evs["eager"].network_frame(legal, tm), counts).values
    assert np.allclose(absolute_seats(raw, tm), evs["eager"].evaluate(pieces, tm, legal, counts)[1], atol=1e-6)
    assert np.allclose(mover_frame(absolute_seats(raw, tm), tm), raw)


def test_two_player_networks_keep_the_scalar_head():
    rules = preset("star2")
    enc = encoding_for(rules)
    config = NetConfig.for_rules(rules, enc.in_planes, "tiny")
    assert config.value_outputs == 1
    old = {k: v for k, v in config.to_dict().items() if k != "value_outputs"}   # a file from before
    assert NetConfig.from_dict(old).value_outputs == 1
    out = PolicyValueNet(config).eval()(torch.zeros(2, *enc.input_shape))
    assert out[1].shape == (2,)
    with pytest.raises(ValueError, match="value_outputs=2"):
        NetConfig.for_rules(rules, enc.in_planes, "tiny", value_outputs=2)


def star3_record(seed: int = 4, plies: int = 9):
    """A short real star3 game stretch as a record: random moves, a made-up but valid result."""
    rng = np.random.default_rng(seed)
    state, tracker = new_state(STAR3), PieceTracker(STAR3)
    pieces, to_move, policies = [], [], []
    for _ in range(plies):
        moves = state.legal_moves()
        pieces.append(tracker.current)
        to_move.append(state.to_move)
        policies.append((tracker.move_indices(moves[:3]), [0.5, 0.25, 0.25]))
        move = moves[int(rng.integers(len(moves)))]
        state.play(move)
        tracker.play(move)
    shares = np.tile(np.float32([0.5, 0.3, 0.2]), (plies, 1))
    return make_record(
        run_id="r", rules=STAR3, config_hash="h", model_version=3, actor="t", seed=seed,
        pieces=np.asarray(pieces), to_move=to_move, policies=policies, plies=plies + 40,
        versions=VERSIONS, scores=[0.0, 0.5, 0.5], root_shares=shares,
    ), tracker


def test_n_player_records_round_trip_and_bad_vectors_are_refused():
    rec, _ = star3_record()
    assert rec.pieces.shape[1:] == (3, 10)
    back = decode_record(encode_record(rec))
    assert back.same_as(rec)
    assert np.array_equal(back.scores, [0.0, 0.5, 0.5])
    import dataclasses

    bad = {
        "does not sum to 1": dict(scores=np.float32([0.5, 0.5, 0.5])),
        "scores has shape": dict(scores=np.float32([0.5, 0.5])),
        "outside \\[0, 1\\]": dict(root_shares=np.tile(np.float32([1.5, -0.25, -0.25]), (rec.num_positions, 1))),
        "root_shares has shape": dict(root_shares=np.tile(np.float32([0.5, 0.5]), (rec.num_positions, 1))),
    }
    for message, change in bad.items():
        with pytest.raises(RecordError, match=message):
            encode_record(dataclasses.replace(rec, **change))


def test_the_window_trains_the_vector_head_in_the_movers_frame():
    rec, _ = star3_record(plies=12)
    enc = encoding_for(STAR3, "general")
    for value_target in ("z", "zq"):
        mirror = WindowMirror(None, enc, window_positions=100, value_target=value_target)
        assert mirror.add_record(rec) == rec.num_positions
        batch = mirror.sample(64, np.random.default_rng(0), augment=False)
        tm = mirror._to_move[batch.index % 100].astype(np.int64)
        z = mover_frame(np.tile(rec.scores, (64, 1)), tm)
        want = z if value_target == "z" else 0.5 * (z + mover_frame(rec.root_shares[batch.index % 100], tm))
        assert np.allclose(batch.value, want)
    # The reflection keeps the mover at the north point and swaps the other two seats.
    assert list(seat_reflection(STAR3)) == [0, 2, 1]
    assert seat_reflection(preset("star4")) is None
    flipped = mirror.sample(64, np.random.default_rng(1), augment=True)
    plain = mirror.sample(64, np.random.default_rng(1), augment=False)
    f = flipped.reflected
    assert f.any()
    assert np.allclose(flipped.value[f], plain.value[f][:, [0, 2, 1]])
    # relative seat 1's occupancy plane, reflected, is where relative seat 2's was
    assert np.array_equal(flipped.planes[f][:, 1], reflect_planes(plain.planes[f], STAR3)[:, 2])
    assert np.array_equal(flipped.planes[f][:, 0], reflect_planes(plain.planes[f], STAR3)[:, 0])
    config = NetConfig.for_rules(STAR3, enc.in_planes, "tiny")
    trainer = Trainer(config, LearnerConfig.fast(batch_size=16), seed=0)
    first = trainer.step(mirror.sample(16, np.random.default_rng(2)))
    assert "value_ce" in first and np.isfinite(first["value_ce"])
    for i in range(30):
        last = trainer.step(mirror.sample(16, np.random.default_rng(3 + i)))
    assert last["value_ce"] < first["value_ce"]
