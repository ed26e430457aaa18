"""The 121-hole star through the learner: records of real star2 games, the window's samples and
their reflection, a few optimiser steps of a tiny network, and the network evaluator."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_helpers import one_thread  # noqa: F401 (autouse fixture)

from ccengine.encoding import PieceTracker, encoding_for, policy_indices
from ccengine.engines import new_state, state_class
from ccengine.notation import Position, format_position, parse_position
from learner.players import make_player
from ccengine.rules import preset
from ccengine.symmetry import reflect_board, reflect_pieces
from learner.inference import Inference
from learner.model import NetworkConfig, PolicyValueNet
from learner.network_evaluator import NetworkEvaluator
from learner.records import GameRecord, decode_record, encode_record, make_record
from learner.replay import WindowMirror
from learner.training import LearnerConfig, Trainer

STAR = preset("star2")
ENC = encoding_for(STAR, "general")
VERSIONS = {"hopzero": "0.1.0", "numpy": "x", "torch": "y"}


def greedy_star_game(seed: int) -> tuple[GameRecord, list[dict]]:
    """A whole star2 game of two greedy-stochastic players on the compiled engine, as a record
    whose policy targets are the players' move distributions; and per position an oracle
    (board, side to move, piece lists, legal moves) taken from the engine and the tracker."""
    state, tracker = new_state(STAR), PieceTracker(STAR)
    players = [make_player("greedy-stochastic", STAR, seed), make_player("greedy-stochastic", STAR, seed + 7)]
    pieces, to_move, policies, oracle = [], [], [], []
    while not state.is_terminal():
        player = players[state.to_move]
        dist = player.policy(state)
        moves = [m for m, _ in dist]
        oracle.append({"board": state.board, "to_move": state.to_move, "lists": tracker.piece_lists(ENC.history),
                       "legal": state.legal_moves()})
        pieces.append(tracker.current)
        to_move.append(state.to_move)
        policies.append((tracker.move_indices(moves), [p for _, p in dist]))  # absolute indices
        move = player.select(state)
        state.play(move)
        tracker.play(move)
    rec = make_record(
        run_id="star-run", rules=STAR, config_hash="h", model_version=-1, actor="test", seed=seed,
        pieces=np.asarray(pieces), to_move=to_move, policies=policies, scores=state.scores(), root_shares=None,
        plies=state.ply, versions=VERSIONS,
    )
    return rec, oracle


@pytest.fixture(scope="module")
def games() -> list[tuple[GameRecord, list[dict]]]:
    return [greedy_star_game(seed) for seed in (1, 2, 3)]


def test_star_records_round_trip_with_compact121_boards(games):
    for rec, oracle in games:
        assert rec.rules == STAR.to_dict() and rec.rules["board"] == "star"
        assert rec.policy_index.dtype == np.int16 and rec.policy_index.max() < 1210
        back = decode_record(encode_record(rec))
        assert back.same_as(rec)
        for t in (0, rec.num_positions // 2, rec.num_positions - 1):
            board = [-1] * STAR.cells
            for p in (0, 1):
                for cell in back.pieces[t, p]:
                    board[int(cell)] = p
            assert tuple(board) == oracle[t]["board"]
            text = format_position(STAR, Position(tuple(board), int(back.to_move[t]), t))
            assert len(text.split()[0]) == 121  # COMPACT121
            assert parse_position(STAR, text).board == oracle[t]["board"]


def mirror_with(games) -> tuple[WindowMirror, list[dict]]:
    mirror = WindowMirror(None, ENC, window_positions=2000)
    oracle = []
    for rec, per in games:
        mirror.add_record(rec)
        oracle += [o for o in per if o["legal"]]  # positions without a target are not stored
    assert mirror.size == len(oracle)
    return mirror, oracle


def test_samples_and_their_reflections_sit_on_legal_moves(games):
    mirror, oracle = mirror_with(games)
    State = state_class("cython")
    batch = mirror.sample(64, np.random.default_rng(5), augment=True)
    assert batch.planes.shape == (64, 18, 17, 17) and batch.policy.shape == (64, 1210)
    assert batch.reflected.any() and not batch.reflected.all()
    for b in range(64):
        pos = oracle[int(batch.index[b])]
        lists, tm = pos["lists"], pos["to_move"]
        board, legal = pos["board"], pos["legal"]
        if batch.reflected[b]:
            lists = reflect_pieces(STAR, lists)
            board = reflect_board(STAR, board)
            legal = State(STAR, board, tm, 0).legal_moves()  # the reflected position's own moves
        np.testing.assert_array_equal(batch.planes[b], ENC.encode_one(lists, tm))
        allowed = set(ENC.move_indices(lists[0], legal, tm).tolist())
        support = set(np.flatnonzero(batch.policy[b]).tolist())
        assert support and support <= allowed
        assert batch.policy[b].sum() == pytest.approx(1.0, abs=1e-5)
        assert tuple(batch.value[b]) in ((1.0, 0.0), (0.5, 0.5), (0.0, 1.0))  # the result vector, mover first


def test_a_tiny_network_trains_on_star_samples(games):
    mirror, _ = mirror_with(games)
    cfg = NetworkConfig(size="tiny").net_config(STAR)
    assert (cfg.in_planes, cfg.n, cfg.policy_size) == (18, 17, 1210)
    learner = LearnerConfig(device="cpu", lr=0.02, lr_schedule="constant", warmup_steps=0, batch_size=32)
    trainer = Trainer(cfg, learner, seed=0)
    batch = mirror.sample(32, np.random.default_rng(0), augment=True)
    logits, value = trainer.model(torch.from_numpy(batch.planes))
    assert logits.shape == (32, 1210) and value.shape == (32,)
    losses = [trainer.step(batch)["total"] for _ in range(12)]
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.8 * losses[0]
    fresh = mirror.sample(32, np.random.default_rng(1), augment=True)
    assert np.isfinite(trainer.step(fresh)["total"])


def test_network_evaluator_reads_star_piece_lists(games):
    _, oracle = games[0]
    cfg = NetworkConfig(size="tiny").net_config(STAR)
    inference = Inference(PolicyValueNet(cfg).eval(), threads=1)
    evaluator = NetworkEvaluator(STAR, ENC, inference)
    rows = oracle[:6]
    pieces = np.stack([o["lists"] for o in rows])
    to_move = np.array([o["to_move"] for o in rows])
    counts = np.array([len(o["legal"]) for o in rows])
    legal = np.zeros((len(rows), counts.max()), dtype=np.int64)
    framed = np.zeros_like(legal)
    for i, o in enumerate(rows):
        # absolute indices, as the search hands them out; and the network's frame
        legal[i, : counts[i]] = policy_indices(STAR, o["lists"][0], o["legal"], o["to_move"], rotate=False)
        framed[i, : counts[i]] = ENC.move_indices(o["lists"][0], o["legal"], o["to_move"])
    priors, values = evaluator.evaluate(pieces, to_move, legal, counts)
    assert priors.shape == legal.shape and values.shape == (len(rows),)
    expected = inference.evaluate(ENC.encode(pieces, to_move), framed, counts)
    np.testing.assert_allclose(priors, expected.priors, rtol=1e-6)
    for i in range(len(rows)):
        assert priors[i, : counts[i]].sum() == pytest.approx(1.0, abs=1e-5)
    assert np.isfinite(values).all() and (np.abs(values) <= 1).all()
    cc81 = NetworkConfig(size="tiny").net_config(preset("cc81"))  # 18 planes too, but 9 x 9 and 810 moves
    with pytest.raises(ValueError, match="policy outputs"):
        NetworkEvaluator(STAR, ENC, Inference(PolicyValueNet(cc81), threads=1))


def test_the_network_player_searches_the_star():
    from learner.network_player import search_player_for

    cfg = NetworkConfig(size="tiny").net_config(STAR)
    evaluator = NetworkEvaluator(STAR, ENC, Inference(PolicyValueNet(cfg).eval(), threads=1))
    player = search_player_for(STAR, 0, evaluator, sims=24, c=1.5)
    state = new_state(STAR)
    for _ in range(6):  # the search hands the evaluator piece lists of both sides to move
        move = player.select(state)
        assert move in state.legal_moves()
        state.play(move)
    assert evaluator.positions >= 6 * 8
