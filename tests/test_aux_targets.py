"""KataGo's auxiliary targets fitted to the game (learner.aux_targets): computed from real game
records, carried by the replay window in the network's frame and reflected with the sample, and
trained by the learner's loss."""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch

from ccengine.encoding import PieceTracker, encoding_for
from ccengine.engines import new_state
from learner.players import make_player
from ccengine.rules import preset
from ccengine.symmetry import reflect_planes, seat_reflection
from learner.aux_targets import AuxTargetStore, final_board, record_targets, seat_progress
from learner.model import NetworkConfig, PolicyValueNet
from learner.records import make_record
from learner.replay import WindowMirror
from learner.training import LearnerConfig, Trainer, loss_terms
from torch_helpers import one_thread  # noqa: F401 (autouse fixture)

CC49, STAR2, STAR3 = preset("cc49"), preset("star2"), preset("star3")


def played_game(rules, seed: int = 0, cut: int = 0):
    """A whole game of greedy-stochastic players as a record (one-hot targets on the moves
    played), with the engine's final board; ``cut`` drops the last positions (as a resignation
    leaves a game short of its end)."""
    state, tracker = new_state(rules), PieceTracker(rules)
    players = [make_player("greedy-stochastic", rules, seed * 10 + p) for p in range(rules.players)]
    pieces, to_move, policies = [], [], []
    while not state.is_terminal():
        move = players[state.to_move].select(state)
        pieces.append(tracker.current)
        to_move.append(state.to_move)
        policies.append(([tracker.move_index(move)], [1.0]))
        state.play(move)
        tracker.play(move)
    t = len(pieces) - cut
    rec = make_record(run_id="r", rules=rules, config_hash="h", model_version=0, actor="a", seed=seed,
                      pieces=np.asarray(pieces[:t]), to_move=to_move[:t], policies=policies[:t],
                      scores=state.scores(), root_shares=None, plies=state.ply - cut)
    return rec, np.asarray(state.board, dtype=np.int8)


@pytest.mark.parametrize("rules", [CC49, STAR2, STAR3], ids=lambda r: r.name)
def test_targets_of_a_real_game_are_its_final_board(rules):
    rec, board = played_game(rules)
    targets = record_targets(rules, rec)
    # The record stops before the winning move; the engine finds it again.
    assert np.array_equal(targets.final_board, board)
    progress = seat_progress(rules, board)
    np.testing.assert_array_equal(targets.progress, progress)
    winners = np.flatnonzero(np.asarray(rec.scores))
    assert progress[winners].min() > progress.max() - 0.2 and progress[winners].min() > 0.8  # the race's winners
    assert np.array_equal(seat_progress(rules, np.asarray(rules.geometry.start_board())), np.zeros(rules.players))
    assert targets.plies_left[0] == rec.num_positions and targets.plies_left[-1] == 1


def test_a_game_without_its_ending_keeps_its_last_board():
    rec, board = played_game(CC49, cut=3)
    last = np.full(CC49.cells, -1, np.int8)
    for p in range(2):
        last[rec.pieces[-1][p]] = p
    assert np.array_equal(final_board(CC49, rec), last)  # no legal move ends it as recorded
    assert not np.array_equal(last, board)


def store_with(rules, records, window=4000):
    enc = encoding_for(rules, "general", history=3)
    store = AuxTargetStore(enc, window, ownership=True, score=True)
    mirror = WindowMirror(None, enc, window_positions=window, aux=store)
    for rec in records:
        mirror.add_record(rec)
    return enc, store, mirror


@pytest.mark.parametrize("rules", [CC49, STAR2, STAR3], ids=lambda r: r.name)
def test_the_window_gives_the_targets_in_the_movers_frame_and_reflects_them(rules):
    rec, board = played_game(rules)
    enc, store, mirror = store_with(rules, [rec])
    slots = np.arange(mirror.size)
    tm = rec.to_move.astype(np.int64)
    straight = store.sample(slots, tm, np.zeros(len(slots), bool))
    flipped = store.sample(slots, tm, np.ones(len(slots), bool))
    players = rules.players
    goals = set().union(*(rules.geometry.goal(p) for p in range(players)))
    progress = seat_progress(rules, board)
    final_lists = np.stack([np.flatnonzero(board == p) for p in range(players)])[None, None]
    for t in (0, len(slots) // 2, len(slots) - 1):
        mover = int(tm[t])
        own = straight.ownership[t]
        assert (own >= 0).sum() == len(goals)
        # The encoder's own drawing of the final board from this mover's seat: its first P planes
        # hold the pieces of the mover and of the seats after it.
        drawn = enc.encode(final_lists, np.array([mover]))[0, :players].reshape(players, -1)
        goal = own >= 0
        holder = np.where(drawn[:, goal].any(axis=0), 1 + drawn[:, goal].argmax(axis=0), 0)
        assert np.array_equal(own[goal], holder)
        assert (own[goal] > 0).sum() == sum(int(board[c] >= 0) for c in goals)
        np.testing.assert_allclose(straight.score[t, :players], np.roll(progress, -mover), rtol=1e-6)
        assert straight.score[t, players] == pytest.approx((len(slots) - t) / rules.max_plies)
        # reflected: the planes' reflection, and the seats it swaps
        side = int(np.sqrt(own.size))
        mirrored = reflect_planes(own.reshape(1, side, side).astype(np.float32), rules).reshape(-1).astype(np.int64)
        perm = seat_reflection(rules) if players > 2 else np.arange(players)
        inverse = np.argsort(perm)
        expected = np.where(mirrored > 0, 1 + inverse[np.maximum(mirrored - 1, 0)], mirrored)
        assert np.array_equal(flipped.ownership[t], expected)
        np.testing.assert_allclose(flipped.score[t, :players], straight.score[t, :players][perm])


def test_the_learner_trains_the_auxiliary_heads():
    rec, _ = played_game(STAR2)
    enc, _, mirror = store_with(STAR2, [rec])
    cfg = NetworkConfig(size="tiny", ownership_head=True, score_head=True).net_config(STAR2)
    trainer = Trainer(cfg, LearnerConfig(device="cpu", lr=0.02, lr_schedule="constant", warmup_steps=0,
                                         batch_size=32), seed=0)
    batch = mirror.sample(32, np.random.default_rng(0))
    first = trainer.step(batch)
    for _ in range(15):
        last = trainer.step(batch)
    assert last["ownership_ce"] < 0.8 * first["ownership_ce"] and last["score_mse"] < 0.8 * first["score_mse"]
    # The terms by hand, on the same batch.
    model = trainer.model.eval()
    with torch.no_grad():
        out = model.outputs(torch.from_numpy(batch.planes))
    logits = out["ownership"].flatten(2).double().numpy()
    target = batch.aux.ownership
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    rows, cells = np.nonzero(target >= 0)
    ce = -logp[rows, target[rows, cells], cells]
    per_row = np.bincount(rows, weights=ce, minlength=32) / np.bincount(rows, minlength=32)
    score = 1 / (1 + np.exp(-out["score"].double().numpy()))
    w = np.linspace(0.2, 1.8, 32).astype(np.float32)   # per-position weights (policy surprise weighting)
    with torch.no_grad():
        terms = loss_terms(model, batch)
        weighted = loss_terms(model, types.SimpleNamespace(**{**batch.__dict__, "weight": w}))
    assert float(terms["ownership_ce"]) == pytest.approx(per_row.mean(), rel=1e-5)
    assert float(terms["score_mse"]) == pytest.approx(np.mean((score - batch.aux.score) ** 2), rel=1e-5)
    # the weights make every term a weighted mean
    assert float(weighted["ownership_ce"]) == pytest.approx(np.mean(per_row * w), rel=1e-5)
    value = out["value"].double().numpy()
    z = batch.value[:, 0] - batch.value[:, 1]  # the two-player network's tanh target from the shares
    assert float(weighted["value_mse"]) == pytest.approx(np.mean(w * (value - z) ** 2), rel=1e-5)
    with pytest.raises(ValueError, match="the batch needs aux"):
        trainer.step(types.SimpleNamespace(planes=batch.planes, policy=batch.policy, value=batch.value))
    plain = PolicyValueNet(NetworkConfig(size="tiny").net_config(STAR2))
    assert "ownership_ce" not in loss_terms(plain, batch)  # a network without the heads ignores the targets
