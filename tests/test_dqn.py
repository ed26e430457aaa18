"""DQN on the training system (learner.dqn, actors.dqn, learner.dqn_player): the records its actors
write and the refusals around them, n-step returns and double-DQN targets on hand-made numbers,
the learner's window and step, and the ``dqn`` player."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgpack
import numpy as np
import pytest
import torch
from replay_helpers import random_game_record

from actors.dqn import DQNWorker
from ccengine.encoding import encoding_for
from ccengine.engines import new_state
from ccengine.players import PlayerSpecError
from learner.players import make_player
from hopzero.config import ConfigError, load_config
from learner import dqn_player, network_player  # noqa: F401 - register the dqn and mcts SPECs
from learner.dqn import DQNConfig, DQNTrainer, TransitionWindow, dqn_targets, epsilon_at, n_step_transitions
from learner.model import PolicyValueNet, save_net
from learner.records import SCHEMA, RecordError, decode_record, encode_record
from learner.replay import WindowMirror
from learner.training import Trainer

CONFIG = load_config("dqn", overrides=["network.size=tiny"])
RULES = CONFIG.training_rules()
NET = CONFIG.network.net_config(RULES)
ENCODING = encoding_for(RULES, CONFIG.network.encoding, history=CONFIG.network.history)


def _worker(seed: int = 1, **changes) -> DQNWorker:
    dqn = dataclasses.replace(CONFIG.dqn, **changes)
    return DQNWorker(RULES, games=4, net_config=NET, encoding=CONFIG.network.encoding,
                     history=CONFIG.network.history, dqn=dqn, run_id="run", config_hash="hash", actor="a", seed=seed)


def _games(worker: DQNWorker, n: int) -> list:
    records: list = []
    while len(records) < n:
        records += worker.step()
    return records


@pytest.fixture(scope="module")
def records() -> list:
    return _games(_worker(), 6)


# ---------------------------------------------------------------------------------------------
# The actors' records
# ---------------------------------------------------------------------------------------------


def test_worker_records_whole_games_against_greedy(records):
    advance = RULES.geometry.advances
    for rec in records:
        assert rec.kind == "dqn" and rec.num_positions == rec.plies and rec.start_pieces.shape[0] == 0
        chosen = np.diff(rec.policy_offsets.astype(np.int64)) > 0
        learner = set(rec.to_move[chosen].tolist())
        assert len(learner) == 1  # one learning side; greedy's positions carry no entries
        side = learner.pop()
        for t in np.flatnonzero(chosen)[:-1]:
            index, prob = rec.policy(int(t))
            # The reward of a move is 0.01 per row it advanced: the piece that moved tells.
            before, after = rec.pieces[t, side].astype(int), rec.pieces[t + 1, side].astype(int)
            j = int(np.flatnonzero(before != after)[0])
            rows = advance[side][after[j]] - advance[side][before[j]]
            assert rec.reward[t] == pytest.approx(0.01 * rows)
            assert index[np.argmax(prob)] == j * RULES.cells + after[j] and prob.sum() == 1
        last = np.flatnonzero(rec.to_move == side)[-1]
        end = {0.0: -10.0, 0.5: 0.0, 1.0: 10.0}[float(rec.scores[side])]
        if last + 1 < rec.num_positions:
            assert rec.reward[last] == pytest.approx(end + 0.01 * _rows(rec, int(last), side), abs=1e-6)
        else:  # the game's last ply: its move is in no recorded position, a few rows at most
            assert abs(rec.reward[last] - end) < 0.2
    assert {int(r.to_move[np.flatnonzero(np.diff(r.policy_offsets) > 0)[0]]) for r in records} == {0, 1}


def _rows(rec, t: int, side: int) -> int:
    before, after = rec.pieces[t, side].astype(int), rec.pieces[t + 1, side].astype(int)
    moved = np.flatnonzero(before != after)
    advance = RULES.geometry.advances[side]
    return 0 if not len(moved) else advance[after[moved[0]]] - advance[before[moved[0]]]


def test_self_play_records_both_sides():
    rec = _games(_worker(opponent="self"), 1)[0]
    chosen = np.diff(rec.policy_offsets.astype(np.int64)) > 0
    assert set(rec.to_move[chosen].tolist()) == {0, 1}


def test_epsilon_schedule():
    cfg = DQNConfig(epsilon_start=1.0, epsilon_end=0.1, epsilon_decay_steps=1000)
    assert [epsilon_at(cfg, v) for v in (-1, 0, 500, 1000, 5000)] == pytest.approx([1.0, 1.0, 0.55, 0.1, 0.1])
    with pytest.raises(ValueError, match="epsilon_end"):
        DQNConfig(epsilon_start=0.1, epsilon_end=0.5)


# ---------------------------------------------------------------------------------------------
# Records: round trip and refusals
# ---------------------------------------------------------------------------------------------


def test_dqn_record_round_trip(records):
    for rec in records:
        back = decode_record(encode_record(rec))
        assert back.same_as(rec) and back.kind == "dqn"
        assert msgpack.unpackb(encode_record(rec), raw=False)["schema"] == SCHEMA


def test_bad_dqn_records_are_refused(records):
    rec = records[0]
    with pytest.raises(RecordError, match="has no rewards"):
        encode_record(dataclasses.replace(rec, reward=None))
    with pytest.raises(RecordError, match="non-finite"):
        encode_record(dataclasses.replace(rec, reward=np.full(rec.num_positions, np.nan, np.float32)))
    half = rec.policy_prob.astype(np.float32)
    half[half == 1.0] = 0.5
    with pytest.raises(RecordError, match="not one-hot|sums to"):
        encode_record(dataclasses.replace(rec, policy_prob=half.astype(rec.policy_prob.dtype)))
    with pytest.raises(RecordError, match="whole game"):
        encode_record(dataclasses.replace(rec, plies=rec.plies + 1))
    with pytest.raises(RecordError, match="kind 'other'"):
        encode_record(dataclasses.replace(rec, kind="other"))
    search = random_game_record(RULES, 3, max_plies=20)
    with pytest.raises(RecordError, match="a search record carries rewards"):
        encode_record(dataclasses.replace(search, reward=np.zeros(search.num_positions, np.float32)))


def test_old_and_forged_schemas(records):
    old_records = Path(__file__).parent / "data" / "records-schema3"
    # A schema-1 record (written before DQN) has no kind: it is a search record.
    doc = msgpack.unpackb((old_records / "selfplay-cc49.msgpack").read_bytes(), raw=False)
    old = {**doc, "schema": 1, "meta": {k: v for k, v in doc["meta"].items() if k != "kind"}}
    back = decode_record(msgpack.packb(old, use_bin_type=True))
    assert back.kind == "search" and back.reward is None
    # A DQN record claiming schema 1, or one without its kind, is refused.
    doc = msgpack.unpackb((old_records / "dqn-paper.msgpack").read_bytes(), raw=False)
    with pytest.raises(RecordError, match="kind 'dqn' in a schema-1 record"):
        decode_record(msgpack.packb({**doc, "schema": 1}, use_bin_type=True))
    doc = msgpack.unpackb(encode_record(records[0]), raw=False)
    no_kind = {**doc, "meta": {k: v for k, v in doc["meta"].items() if k != "kind"}}
    with pytest.raises(RecordError, match="meta.kind"):
        decode_record(msgpack.packb(no_kind, use_bin_type=True))


def test_each_learner_refuses_the_other_kind(records):
    search = random_game_record(RULES, 3, max_plies=20)
    window = TransitionWindow(None, ENCODING, CONFIG.dqn, window_positions=100)
    assert window.add_record(search) == 0 and window.skipped == {"foreign": 1}
    mirror = WindowMirror(None, ENCODING, window_positions=100)
    assert mirror.add_record(records[0]) == 0 and mirror.skipped == {"foreign": 1}


# ---------------------------------------------------------------------------------------------
# n-step returns and targets on hand-made numbers
# ---------------------------------------------------------------------------------------------


def test_n_step_returns_by_hand(records):
    rec = next(r for r in records if r.plies >= 12)
    t_len = rec.num_positions
    rewards = np.zeros(t_len, np.float32)
    rewards[:] = np.arange(1, t_len + 1)  # r_t = t + 1
    rec = dataclasses.replace(rec, reward=rewards)
    steps = n_step_transitions(rec, n=2, gamma=0.5)
    chosen = np.flatnonzero(np.diff(rec.policy_offsets.astype(np.int64)) > 0)
    assert steps.source.tolist() == chosen.tolist()
    first = int(chosen[0])
    # G = r_t + 0.5 r_{t+2}, bootstrapped at t + 4 with 0.5 ** 2
    assert steps.ret[0] == pytest.approx((first + 1) + 0.5 * (first + 3))
    assert steps.boot[0] == first + 4 and steps.discount[0] == pytest.approx(0.25)
    # The side's last move: only its own reward, no bootstrap; the one before: two rewards, none.
    last = int(chosen[-1])
    assert steps.ret[-1] == pytest.approx(last + 1) and steps.boot[-1] == -1 and steps.discount[-1] == 0
    before = int(chosen[-2])
    assert steps.ret[-2] == pytest.approx((before + 1) + 0.5 * (before + 3)) and steps.boot[-2] == -1
    one = n_step_transitions(rec, n=1, gamma=0.9)
    assert one.ret[0] == pytest.approx(first + 1) and one.boot[0] == first + 2
    assert one.discount[0] == pytest.approx(0.9)


def test_double_dqn_targets_by_hand():
    ret = torch.tensor([1.0, 0.5, 2.0, -1.0])
    discount = torch.tensor([0.5, 0.5, 0.0, 0.5])
    online = torch.tensor([[3.0, 1.0, 9.0], [0.0, 2.0, 1.0], [5.0, 5.0, 5.0], [1.0, 1.0, 1.0]])
    target = torch.tensor([[1.0, 4.0, 7.0], [6.0, 3.0, 8.0], [9.0, 9.0, 9.0], [2.0, 2.0, 2.0]])
    mask = torch.tensor([[True, True, False], [True, True, True], [False, False, False], [False, False, False]])
    # Double: the online net picks (row 0: index 0 of the legal {0, 1}; row 1: index 1), the target values.
    double = dqn_targets(ret, discount, online, target, mask, double=True)
    assert double.tolist() == pytest.approx([1.0 + 0.5 * 1.0, 0.5 + 0.5 * 3.0, 2.0, -1.0])
    # Plain: the target net's best legal value (row 0: 4 at index 1; row 1: 8).
    plain = dqn_targets(ret, discount, online, target, mask, double=False)
    assert plain.tolist() == pytest.approx([1.0 + 0.5 * 4.0, 0.5 + 0.5 * 8.0, 2.0, -1.0])


# ---------------------------------------------------------------------------------------------
# The learner: window, step, target network
# ---------------------------------------------------------------------------------------------


def test_window_holds_transitions_in_the_network_frame(records):
    window = TransitionWindow(None, ENCODING, CONFIG.dqn, window_positions=10_000)
    added = sum(window.add_record(r) for r in records)
    assert added == window.size == sum(int((np.diff(r.policy_offsets) > 0).sum()) for r in records)
    batch = window.sample(64, np.random.default_rng(0), augment=False)
    assert batch.planes.shape == (64, *ENCODING.input_shape) == batch.next_planes.shape
    assert batch.next_mask.shape == (64, ENCODING.policy_size)
    # Bootstrapped transitions have legal moves to maximise over; terminal ones none.
    boot = batch.discount > 0
    assert batch.next_mask[boot].any(axis=1).all() and not batch.next_mask[~boot].any()
    assert np.allclose(batch.discount[boot], CONFIG.dqn.gamma ** CONFIG.dqn.n_step)
    flipped = window.sample(64, np.random.default_rng(0), augment=True)
    assert flipped.reflected.any() and (flipped.next_mask.sum(axis=1) == batch.next_mask.sum(axis=1)).all()


def test_step_learns_and_refreshes_the_target(records):
    window = TransitionWindow(None, ENCODING, CONFIG.dqn, window_positions=10_000)
    for r in records:
        window.add_record(r)
    cfg = dataclasses.replace(CONFIG.dqn, target_update_steps=5)
    trainer = Trainer(NET, dataclasses.replace(CONFIG.learner, lr=1e-3), seed=0)
    dqn = DQNTrainer(trainer, cfg)
    batch = window.sample(32, np.random.default_rng(1), augment=False)
    before = {k: v.clone() for k, v in dqn.target.state_dict().items()}
    losses = [dqn.step(batch)["huber"] for _ in range(4)]
    assert all(torch.equal(before[k], v) for k, v in dqn.target.state_dict().items())  # not yet refreshed
    losses.append(dqn.step(batch)["huber"])
    assert trainer.steps == 5 and losses[-1] < losses[0]
    online = trainer.model.state_dict()
    assert all(torch.equal(online[k], v) for k, v in dqn.target.state_dict().items())
    # A checkpoint keeps the target network; a trainer built from it has the same one.
    again = DQNTrainer(Trainer(NET, CONFIG.learner, seed=3), cfg, target_state=dqn.checkpoint_extra()["dqn_target"])
    assert all(torch.equal(online[k], v) for k, v in again.target.state_dict().items())


# ---------------------------------------------------------------------------------------------
# The dqn player and the configuration
# ---------------------------------------------------------------------------------------------


def _model_file(tmp_path, algo: str):
    path = tmp_path / f"{algo}.pt"
    torch.manual_seed(0)
    save_net(PolicyValueNet(NET), path, input={"encoding": CONFIG.network.encoding, "history": CONFIG.network.history,
                                               "algo": algo})
    return path


def test_dqn_player_plays_the_argmax(tmp_path):
    rules = CONFIG.game_rules()
    player = make_player(f"dqn:model={_model_file(tmp_path, 'dqn')}", rules)
    state = new_state(rules)
    for _ in range(6):
        moves, q = player.values(state)
        move = player.select(state)
        assert move == moves[int(np.argmax(q))] and move in state.legal_moves()
        assert player.select(state) == move  # deterministic
        state.play(move)


def test_players_refuse_the_other_algorithm(tmp_path):
    rules = CONFIG.game_rules()
    with pytest.raises(PlayerSpecError, match="DQN network .*dqn:model"):
        make_player(f"mcts:model={_model_file(tmp_path, 'dqn')},sims=2", rules)
    with pytest.raises(PlayerSpecError, match="alphazero network .*mcts:model"):
        make_player(f"dqn:model={_model_file(tmp_path, 'alphazero')}", rules)
    with pytest.raises(PlayerSpecError, match="needs option"):
        make_player("dqn", rules)


def test_dqn_config():
    assert CONFIG.algo == "dqn" and CONFIG.dqn.opponent == "greedy" and not CONFIG.stage1.enabled
    assert RULES.max_plies == 80 and CONFIG.game_rules().max_plies == 100
    with pytest.raises(ConfigError, match="dqn.opponent"):
        load_config("dqn", overrides=["dqn.opponent=random"])
    with pytest.raises(ConfigError, match="algo"):
        load_config("fast", overrides=["algo=sarsa"])
