"""The learned opponent model: the network's opponent head (``network.opponent_head``), its
target in the replay window and its loss, its files, and the search that plays the opponent's
nodes by it (``SearchConfig.model_opponent``, SPEC ``opponent=model``)."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest
import torch
from replay_helpers import random_game_record

from ccengine import encoding_for, new_state, preset
from learner.players import make_player
from plumbing.fields import FieldError
from ccengine.players import PlayerSpecError
from ccengine.search import BatchedSearch, SearchConfig, UniformEvaluator, canonical_pieces
from ccengine.symmetry import reflect_policy
from learner.checkpoint import save_checkpoint, trainer_from_checkpoint
from learner.model import NetConfig, NetworkConfig, PolicyValueNet, load_net, net_state, read_net_file, save_net
from learner.network_player import network_player  # noqa: F401  (registers the mcts player)
from learner.replay import MemoryReader, MemoryReplay, WindowMirror
from learner.torch_files import DIGEST_KEY, content_digest, write_atomic
from learner.training import LearnerConfig, Trainer, loss_terms

CC49 = preset("cc49")
ENC = encoding_for(CC49, "general")
SMALL = preset("small-4-3")


def tiny(opponent_head: bool, rules=CC49, enc=ENC) -> NetConfig:
    return NetConfig.for_rules(rules, enc.in_planes, "tiny", opponent_head=opponent_head)


# ---------------------------------------------------------------------------------------------
# The network and its files
# ---------------------------------------------------------------------------------------------


def test_the_head_adds_one_output_of_the_policy_shape_and_leaves_the_rest_as_it_was():
    x = torch.rand(5, ENC.in_planes, CC49.n, CC49.n)
    torch.manual_seed(3)
    plain = PolicyValueNet(tiny(False)).eval()
    torch.manual_seed(3)
    headed = PolicyValueNet(tiny(True)).eval()
    out_plain, out_headed = plain(x), headed(x)
    assert len(out_plain) == 2 and len(out_headed) == 3
    assert out_headed[2].shape == (5, CC49.k * CC49.cells) == out_headed[0].shape
    # Same seed: every weight the two share starts the same, so do the policy and the value.
    shared = plain.state_dict()
    assert all(torch.equal(shared[k], v) for k, v in headed.state_dict().items() if k in shared)
    assert set(headed.state_dict()) - set(shared) and not set(shared) - set(headed.state_dict())
    torch.testing.assert_close(out_plain[0], out_headed[0])
    torch.testing.assert_close(out_plain[1], out_headed[1])
    assert not torch.allclose(out_headed[2], out_headed[0])


def test_the_run_config_builds_the_head_and_files_record_it(tmp_path):
    cfg = NetworkConfig(size="tiny", opponent_head=True).net_config(CC49)
    assert cfg.opponent_head and not NetworkConfig(size="tiny").net_config(CC49).opponent_head
    with pytest.raises(FieldError, match="opponent_head"):
        NetworkConfig(opponent_head="yes")  # type: ignore[arg-type]
    model = PolicyValueNet(cfg)
    save_net(model, tmp_path / "net.pt", input={"encoding": "general", "history": 3, "preset": "cc49"})
    data = read_net_file(tmp_path / "net.pt")
    assert data["config"]["opponent_head"] is True
    back = load_net(tmp_path / "net.pt")
    assert back.config.opponent_head
    for k, v in model.state_dict().items():
        assert torch.equal(back.state_dict()[k], v)


def test_a_file_written_before_the_option_loads_without_the_head(tmp_path):
    model = PolicyValueNet(tiny(False))
    state = net_state(model)
    del state["config"]["opponent_head"], state[DIGEST_KEY]  # what an older hopzero wrote
    state[DIGEST_KEY] = content_digest(state)
    write_atomic(tmp_path / "old.pt", state)
    back = load_net(tmp_path / "old.pt")
    assert not back.config.opponent_head and len(back(torch.rand(2, ENC.in_planes, 7, 7))) == 2


def test_checkpoints_round_trip_with_and_without_the_head(tmp_path):
    batch = window_batch(opponent_target=True)
    for head in (False, True):
        trainer = Trainer(tiny(head), LearnerConfig(device="cpu", batch_size=16), seed=1)
        trainer.step(batch)
        path = save_checkpoint(tmp_path / str(head), trainer)
        back = trainer_from_checkpoint(path)
        assert back.net_config.opponent_head is head and back.steps == 1
        for k, v in trainer.model.state_dict().items():
            assert torch.equal(back.model.state_dict()[k], v)
        # Both continue alike: the resumed one trains the same head on the same batch.
        assert back.step(batch) == pytest.approx(trainer.step(batch))


# ---------------------------------------------------------------------------------------------
# The target: the next ply's search distribution
# ---------------------------------------------------------------------------------------------


def records(n: int = 4, keep_fraction: float | None = 0.6):
    return [random_game_record(CC49, 500 + s, max_plies=40, skip=s % 3, simulations=60, keep_fraction=keep_fraction)
            for s in range(n)]


def mirror_of(recs, enc=ENC, **kw) -> WindowMirror:
    store = MemoryReplay("run-a")
    for r in recs:
        store.add(r)
    mirror = WindowMirror(MemoryReader(store), enc, window_positions=10_000, **kw)
    while mirror.poll(max_records=2):
        pass
    return mirror


def window_batch(opponent_target: bool, b: int = 16):
    return mirror_of(records(2), opponent_target=opponent_target).sample(b, np.random.default_rng(0))


def expected_opponent_targets(recs, enc):
    """Per trainable position (insertion order): the dense policy of the next recorded position,
    seen from this position's mover (rotated for player 1 where the encoding rotates), or zeros."""
    cells, out = CC49.cells, []
    for rec in recs:
        counts = np.diff(rec.policy_offsets)
        for t in range(rec.num_positions):
            if counts[t] == 0 or (rec.keep is not None and not rec.keep[t]):
                continue
            target = np.zeros(enc.policy_size, np.float32)
            if t + 1 < rec.num_positions and counts[t + 1]:
                idx, prob = rec.policy(t + 1)
                idx = idx.astype(np.int64)
                assert rec.to_move[t + 1] != rec.to_move[t]
                if enc.rotate and rec.to_move[t] == 1:
                    idx = idx - idx % cells + (cells - 1 - idx % cells)
                target[idx] = prob.astype(np.float32)
                target /= target.sum()
            out.append(target)
    return out


@pytest.mark.parametrize("encoding", ["general", "paper"])
def test_the_window_keeps_the_next_ply_target_in_the_movers_frame(encoding):
    enc = encoding_for(CC49, encoding)
    recs = records()
    expected = expected_opponent_targets(recs, enc)
    mirror = mirror_of(recs, enc, opponent_target=True, entries_per_position=1)  # the ring grows too
    assert mirror.size == len(expected)
    assert sum(t.any() for t in expected) > len(expected) // 2
    assert sum(not t.any() for t in expected) >= 1  # a kept last position has no reply
    batch = mirror.sample(2000, np.random.default_rng(1), augment=False)
    for b in range(0, 2000, 3):
        np.testing.assert_allclose(batch.opponent_policy[b], expected[batch.index[b]], atol=1e-6)
    # The position's own target is untouched by the entries stored after it.
    plain = mirror_of(recs, enc).sample(2000, np.random.default_rng(1), augment=False)
    assert plain.opponent_policy is None
    np.testing.assert_array_equal(plain.policy, batch.policy)
    np.testing.assert_array_equal(plain.planes, batch.planes)


def test_the_opponent_targets_slide_with_the_window():
    recs = records(8)
    expected = expected_opponent_targets(recs, ENC)
    window = 60
    store = MemoryReplay("run-a")
    for r in recs:
        store.add(r)
    # One entry per position assumed: the ring grows and wraps while the window slides.
    mirror = WindowMirror(MemoryReader(store), ENC, window_positions=window, opponent_target=True,
                          entries_per_position=1)
    while mirror.poll(max_records=1):
        pass
    assert len(expected) > 2 * window and mirror.size == window
    batch = mirror.sample(1500, np.random.default_rng(3), augment=False)
    assert batch.index.min() >= len(expected) - window
    for b in range(0, 1500, 5):
        np.testing.assert_allclose(batch.opponent_policy[b], expected[batch.index[b]], atol=1e-6)


def test_the_general_frame_turns_the_next_positions_own_target_around():
    """With ``general``, position t + 1 is seen rotated relative to position t: t's opponent
    target is t + 1's own policy target with every destination rotated."""
    rec = random_game_record(CC49, 77, max_plies=30, simulations=60)
    mirror = mirror_of([rec], opponent_target=True)
    n = mirror.size
    assert n == rec.num_positions
    batch = mirror.sample(4000, np.random.default_rng(2), augment=False)
    rows = {int(i): r for r, i in enumerate(batch.index)}
    assert len(rows) == n
    cells = CC49.cells
    for t in range(n - 1):
        nxt = batch.policy[rows[t + 1]].reshape(CC49.k, cells)[:, ::-1].reshape(-1)
        np.testing.assert_allclose(batch.opponent_policy[rows[t]], nxt, atol=1e-6)
    assert not batch.opponent_policy[rows[n - 1]].any()


def test_reflection_turns_the_opponent_target_with_the_planes():
    mirror = mirror_of(records(3), opponent_target=True)
    plain = mirror.sample(300, np.random.default_rng(7), augment=False)
    aug = mirror.sample(300, np.random.default_rng(7), augment=True)
    f = aug.reflected
    assert 0 < f.sum() < 300
    np.testing.assert_array_equal(aug.opponent_policy[f], reflect_policy(CC49, plain.opponent_policy[f]))
    np.testing.assert_array_equal(aug.opponent_policy[~f], plain.opponent_policy[~f])


# ---------------------------------------------------------------------------------------------
# The loss
# ---------------------------------------------------------------------------------------------


def test_the_opponent_loss_falls_on_a_fixed_batch():
    batch = window_batch(opponent_target=True, b=32)
    trainer = Trainer(tiny(True), LearnerConfig(device="cpu", batch_size=32, lr=0.05, warmup_steps=0,
                                                lr_schedule="constant", opponent_loss_weight=1.0), seed=0)
    first = trainer.step(batch)
    for _ in range(40):
        last = trainer.step(batch)
    assert last["opponent_ce"] < 0.6 * first["opponent_ce"]
    assert last["policy_ce"] < first["policy_ce"]


def test_the_opponent_term_is_weighted_and_rows_without_a_target_count_nothing():
    batch = window_batch(opponent_target=True, b=32)
    torch.manual_seed(0)
    model = PolicyValueNet(tiny(True))
    has = batch.opponent_policy.sum(axis=1) > 0
    assert 0 < has.sum() < len(has) or has.all()
    t0 = loss_terms(model, batch, opponent_loss_weight=0.0)
    t1 = loss_terms(model, batch, opponent_loss_weight=0.15)
    gap = float((t1["total"] - t0["total"]).detach())
    assert gap == pytest.approx(0.15 * float(t1["opponent_ce"].detach()), rel=1e-5)
    # The mean over the rows with a target only.
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.from_numpy(batch.planes))[2], dim=1).numpy()
    per_row = -(batch.opponent_policy * logp).sum(axis=1)
    assert float(t1["opponent_ce"].detach()) == pytest.approx(per_row[has].mean(), rel=1e-5)
    # A network without the head ignores the target; one with it needs it.
    plain = PolicyValueNet(tiny(False))
    assert "opponent_ce" not in loss_terms(plain, batch)
    no_target = dataclasses.replace(batch, opponent_policy=None)
    with pytest.raises(ValueError, match="opponent_policy"):
        loss_terms(model, no_target)


# ---------------------------------------------------------------------------------------------
# The search: the opponent's nodes play the model's most likely reply
# ---------------------------------------------------------------------------------------------


class HashedOpponent:
    """Uniform priors, value 0, and opponent logits drawn from a hash of the leaf's newest piece
    list and mover: fixed per position, different between positions."""

    needs_states = False

    def __init__(self, rules) -> None:
        self.width = rules.k * rules.cells
        self.calls = 0

    def logits(self, pieces0: np.ndarray, mover: int) -> np.ndarray:
        digest = hashlib.sha256(np.ascontiguousarray(pieces0, dtype=np.int8).tobytes() + bytes([mover])).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little")).standard_normal(self.width).astype(
            np.float32)

    def evaluate(self, pieces, to_move, legal, counts):
        return UniformEvaluator().evaluate(pieces, to_move, legal, counts)

    def evaluate_opponent(self, pieces, to_move, legal, counts):
        self.calls += 1
        priors, values = self.evaluate(pieces, to_move, legal, counts)
        opponent = np.stack([self.logits(pieces[b, 0], int(to_move[b])) for b in range(len(to_move))])
        return priors, values, opponent


def _reply_visits(search) -> dict[tuple[int, int], np.ndarray]:
    """The visits of the replies below each root move already expanded."""
    out = {}
    edges = search.forest.node_edges(0)
    for move in ([] if edges is None else edges[0].tolist()):
        below = search.forest.node_edges(0, [move])
        if below is not None:
            out[tuple(move)] = below[1].copy()
    return out


def _replies_follow_the_model(search, model, root_state, root_pieces, before) -> int:
    """Check that the searched replies at depth 1 went to the model's choice alone (visits
    kept from an earlier search, when these were other nodes, aside); return how many root
    moves were checked."""
    rules = root_state.tables.rules
    mover = root_state.to_move
    row = model.logits(root_pieces, mover)
    checked = 0
    for move in search.forest.node_edges(0)[0].tolist():
        edges = search.forest.node_edges(0, [move])
        if edges is None:
            continue
        replies, reply_visits = edges[0].tolist(), edges[1] - before.get(tuple(move), 0)
        if reply_visits.sum() < 2:
            continue
        ids = root_pieces[1 - mover].tolist()  # the opponent's pieces do not move on our move
        scores = [row[ids.index(s) * rules.cells + e] if s >= 0 else -np.inf for s, e in replies]
        best = int(np.argmax(scores))
        assert [i for i, n in enumerate(reply_visits) if n] == [best], move
        checked += 1
    return checked


def test_the_opponent_plays_the_models_most_likely_reply_also_in_a_kept_tree():
    cfg = SearchConfig(num_simulations=400, model_opponent=True, root_noise=False, random_opening_plies=0,
                       explore_plies=0, temperature=0.0)
    model = HashedOpponent(SMALL)
    search = BatchedSearch(SMALL, 1, cfg, rng=np.random.default_rng(0))
    state = new_state(SMALL, engine="cython")
    pieces = canonical_pieces(state)
    search.set_root(0, state)
    kept = 0
    for ply in range(6):
        before = _reply_visits(search)
        result = search.search(model)[0]
        assert result.move in [tuple(m) for m in state.legal_moves()]
        assert _replies_follow_the_model(search, model, state, pieces, before) >= 2
        search.forest.check_invariants(0)
        # Play on, keeping the subtree: its rows of logits must move with its nodes.
        mover = state.to_move
        j = pieces[mover].tolist().index(result.move[0])
        pieces = pieces.copy()
        pieces[mover, j] = result.move[1]
        state.play(result.move)
        if state.is_terminal():
            break
        kept += search.play(0, result.move)
    assert kept >= 2 and model.calls > 0


def test_model_opponent_needs_an_opponent_model_and_combines_with_nothing_else():
    cfg = SearchConfig(num_simulations=20, model_opponent=True)
    search = BatchedSearch(SMALL, 1, cfg, rng=np.random.default_rng(0))
    search.set_root(0, new_state(SMALL, engine="cython"))
    with pytest.raises(ValueError, match="opponent model"):
        search.search(UniformEvaluator())
    for other in ({"solver": True}, {"greedy_opponent": True}):
        with pytest.raises(FieldError, match="model_opponent"):
            SearchConfig(model_opponent=True, **other)


def test_the_network_player_plays_legal_moves_with_opponent_model_and_refuses_a_headless_network(tmp_path):
    meta = {"encoding": "general", "history": 3, "preset": "cc49"}
    torch.manual_seed(0)
    save_net(PolicyValueNet(tiny(True)), tmp_path / "head.pt", input=meta)
    save_net(PolicyValueNet(tiny(False)), tmp_path / "plain.pt", input=meta)
    player = make_player(f"mcts:model={tmp_path / 'head.pt'},sims=24,opponent=model", CC49, 1)
    assert player.config.model_opponent
    state = new_state(CC49)
    for _ in range(6):
        move = player.select(state)
        assert move in state.legal_moves()
        state.play(move)
    with pytest.raises((PlayerSpecError, ValueError), match="no.*opponent head|opponent head.*none"):
        make_player(f"mcts:model={tmp_path / 'plain.pt'},sims=24,opponent=model", CC49, 1)
    with pytest.raises(PlayerSpecError, match="opponent"):
        make_player(f"mcts:model={tmp_path / 'head.pt'},opponent=perfect", CC49, 1)
    greedy = make_player(f"mcts:model={tmp_path / 'plain.pt'},sims=24,opponent=greedy", CC49, 1)
    assert greedy.config.greedy_opponent and not greedy.config.model_opponent
    policy = make_player(f"mcts:model={tmp_path / 'plain.pt'},sims=24,opponent=policy", CC49, 1)
    assert policy.config.policy_opponent and not policy.config.greedy_opponent
    assert policy.select(state) in state.legal_moves()
    auto = make_player(f"mcts:model={tmp_path / 'plain.pt'},sims=24,opponent=auto", CC49, 1)
    assert auto.config.auto_opponent and not auto.config.greedy_opponent
    assert auto.select(state) in state.legal_moves()
    for spec in ("mcts:sims=24,opponent=policy", "mcts-rollout:sims=24,opponent=policy"):
        with pytest.raises((PlayerSpecError, ValueError), match="policy"):
            make_player(spec, CC49, 1)


def test_self_play_can_search_against_the_model_and_the_run_config_checks_it():
    from actors.selfplay import SelfPlayWorker
    from hopzero.config import ConfigError, load_config

    enc = encoding_for(SMALL, "general", history=2)
    net = NetConfig.for_rules(SMALL, enc.in_planes, "tiny", opponent_head=True)
    worker = SelfPlayWorker(SMALL, games=3, search=SearchConfig(num_simulations=8, random_opening_plies=0,
                                                                model_opponent=True),
                            net_config=net, encoding="general", history=2, run_id="r", config_hash="c", actor="a",
                            seed=1, backend="onnx")
    worker.set_weights(1, {k: v.numpy() for k, v in PolicyValueNet(net).state_dict().items()})
    for _ in range(3):
        worker.step()
    assert worker.stats()["evaluator_rows"] > 0
    config = load_config("demo", overrides=["network.opponent_head=true", "search.model_opponent=true"])
    assert config.search.model_opponent
    with pytest.raises(ConfigError, match="search.model_opponent: .*opponent head"):
        load_config("demo", overrides=["search.model_opponent=true"])
    with pytest.raises(ConfigError, match="search.model_opponent: .*eval_cache"):
        load_config("demo", overrides=["network.opponent_head=true", "search.model_opponent=true",
                                       "selfplay.eval_cache=100"])


def test_an_exported_onnx_model_carries_the_opponent_output(tmp_path):
    import onnxruntime as ort

    from learner.onnx_backend import OPPONENT_OUTPUT, OUTPUT_NAMES, export_onnx

    torch.manual_seed(4)
    model = PolicyValueNet(tiny(True))
    save_net(model, tmp_path / "head.pt", input={"encoding": "general", "history": 3, "preset": "cc49"})
    meta = export_onnx(tmp_path / "head.pt", tmp_path / "head.onnx")
    assert "opponent's reply" in meta[OPPONENT_OUTPUT]
    session = ort.InferenceSession(str(tmp_path / "head.onnx"), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == [*OUTPUT_NAMES, OPPONENT_OUTPUT]
    planes = np.random.default_rng(0).integers(0, 2, (3, ENC.in_planes, 7, 7)).astype(np.float32)
    got = session.run(None, {"planes": planes})
    with torch.no_grad():
        want = model.eval()(torch.from_numpy(planes))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.reshape(b.shape), b.numpy(), atol=1e-4)
    save_net(PolicyValueNet(tiny(False)), tmp_path / "plain.pt", input={"encoding": "general", "history": 3,
                                                                        "preset": "cc49"})
    assert OPPONENT_OUTPUT not in export_onnx(tmp_path / "plain.pt", tmp_path / "plain.onnx")
