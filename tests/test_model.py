"""The policy/value network (learner.model) and batched inference with masking (learner.inference)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from ccengine.rules import preset
from learner.inference import Evaluation, Inference, masked_priors
from learner.model import NET_FORMAT, SIZES, NetConfig, NetFileError, PolicyValueNet, load_net, net_state, save_net

PRESETS = ["paper", "cc49", "cc81", "small-4-1", "small-4-3", "small-5-6", "small-6-6"]


def make(cfg: NetConfig, seed: int = 0) -> PolicyValueNet:
    torch.manual_seed(seed)
    return PolicyValueNet(cfg)


def random_batch(cfg: NetConfig, b: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random planes, ``m``-wide legal arrays with distinct indices and counts in [1, m]."""
    rng = np.random.default_rng(seed)
    planes = rng.integers(0, 7, size=(b, cfg.in_planes, cfg.n, cfg.n)).astype(np.float32)
    legal = np.stack([rng.choice(cfg.policy_size, size=m, replace=False) for _ in range(b)]).astype(np.int64)
    counts = rng.integers(1, m + 1, size=b)
    return planes, legal, counts


# ---- the paper model --------------------------------------------------------------------------


def test_paper_parameter_count_is_the_papers():
    assert PolicyValueNet(NetConfig.paper()).num_parameters() == 247_386
    assert NetConfig.for_rules("paper", 7) == NetConfig.paper()
    assert NetConfig.for_rules(preset("cc49"), 7, "paper") == NetConfig.paper()


def test_paper_layer_shapes():
    cfg = NetConfig.paper()
    net = PolicyValueNet(cfg)
    assert cfg.trunk_size == 5  # 3x3 unpadded stem: 7x7 -> 5x5
    assert net.stem.conv.weight.shape == (64, 7, 3, 3) and net.stem.conv.bias is not None
    assert len(net.blocks) == 9
    blk = net.blocks[0]
    assert blk.reduce.conv.weight.shape == (32, 64, 1, 1)
    assert blk.mid.conv.weight.shape == (32, 32, 3, 3) and blk.mid.conv.padding == (1, 1)
    assert blk.expand.conv.weight.shape == (64, 32, 1, 1)
    assert net.policy_fc.weight.shape == (294, 16 * 25)
    assert net.value_fc1.weight.shape == (32, 25) and net.value_fc2.weight.shape == (1, 32)
    # Xavier init, zero biases.
    assert torch.count_nonzero(net.policy_fc.bias) == 0
    bound = (6.0 / (16 * 25 + 294)) ** 0.5
    assert net.policy_fc.weight.abs().max() <= bound


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("size", sorted(SIZES))
def test_output_shapes_for_every_preset(name: str, size: str):
    rules = preset(name)
    cfg = NetConfig.for_rules(rules, 7, size)
    assert cfg.policy_size == rules.k * rules.n * rules.n and cfg.n == rules.n
    net = make(cfg).eval()
    logits, value = net(torch.randn(3, 7, rules.n, rules.n))
    assert logits.shape == (3, rules.k * rules.n * rules.n)
    assert value.shape == (3,)
    assert torch.all(value.abs() <= 1)


def test_fast_keeps_small_boards_whole_and_paper_is_exact_everywhere():
    assert NetConfig.for_rules("small-4-3", 7, "fast").trunk_size == 4
    assert NetConfig.for_rules("small-4-3", 7, "paper").trunk_size == 2
    assert NetConfig.for_rules("cc81", 7, "paper").trunk_size == 7
    assert NetConfig.for_rules("cc81", 7, "paper").policy_size == 810


def test_config_validation_and_round_trip():
    with pytest.raises(ValueError):
        NetConfig.for_rules("cc49", 7, "huge")
    with pytest.raises(ValueError):
        NetConfig.for_rules("cc49", 7, "paper", widht=3)
    with pytest.raises(ValueError):
        NetConfig(n=2, stem_padding=0)  # 3x3 stem leaves nothing
    with pytest.raises(ValueError):
        NetConfig(block_kernel=2)
    cfg = NetConfig.for_rules("small-5-6", 9, "fast", blocks=2)
    assert cfg.blocks == 2 and cfg.in_planes == 9
    assert NetConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError):
        NetConfig.from_dict({**cfg.to_dict(), "bogus": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.blocks = 3  # type: ignore[misc]


# ---- masking ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paper_inf() -> Inference:
    return Inference(make(NetConfig.paper()), device="cpu")


def test_priors_are_a_renormalised_softmax_over_legal_moves(paper_inf: Inference):
    cfg = paper_inf.config
    planes, legal, counts = random_batch(cfg, 6, 12)
    priors, values = paper_inf.evaluate(planes, legal, counts)
    assert priors.dtype == np.float32 and priors.shape == (6, 12)
    assert values.dtype == np.float32 and values.shape == (6,)
    logits, values2 = paper_inf.logits(planes)
    np.testing.assert_allclose(values, values2, atol=1e-6)
    for b in range(6):
        c = counts[b]
        assert np.all(priors[b, c:] == 0)  # padding gets exactly zero
        assert priors[b, :c].sum() == pytest.approx(1.0, abs=1e-5)
        z = logits[b, legal[b, :c]].astype(np.float64)
        want = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        np.testing.assert_allclose(priors[b, :c], want, rtol=1e-4, atol=1e-6)


def test_illegal_moves_get_zero_prior(paper_inf: Inference):
    """Scattered back onto the full policy vector, every index outside the legal list is zero."""
    cfg = paper_inf.config
    planes, legal, counts = random_batch(cfg, 4, 20, seed=3)
    priors, _ = paper_inf.evaluate(planes, legal, counts)
    full = np.zeros((4, cfg.policy_size), np.float32)
    for b in range(4):
        full[b, legal[b, : counts[b]]] = priors[b, : counts[b]]
        illegal = np.setdiff1d(np.arange(cfg.policy_size), legal[b, : counts[b]])
        assert np.all(full[b, illegal] == 0)
        assert full[b].sum() == pytest.approx(1.0, abs=1e-5)


def test_single_legal_move_gets_one_and_empty_row_gets_zeros(paper_inf: Inference):
    cfg = paper_inf.config
    planes, legal, _ = random_batch(cfg, 3, 5, seed=1)
    counts = np.array([1, 0, 5])
    priors, values = paper_inf.evaluate(planes, legal, counts)
    assert priors[0, 0] == 1.0 and np.all(priors[0, 1:] == 0)
    assert np.all(priors[1] == 0) and np.all(np.isfinite(priors))
    assert priors[2].sum() == pytest.approx(1.0, abs=1e-5)
    assert np.all(np.abs(values) <= 1)


def test_negative_padding_without_counts_and_int32_indices(paper_inf: Inference):
    cfg = paper_inf.config
    planes, legal, counts = random_batch(cfg, 5, 9, seed=2)
    padded = legal.copy()
    padded[np.arange(9) >= counts[:, None]] = -1
    a = paper_inf.evaluate(planes, legal, counts)
    b = paper_inf.evaluate(planes, padded.astype(np.int32))
    np.testing.assert_array_equal(a.priors, b.priors)
    np.testing.assert_array_equal(a.values, b.values)


def test_bad_inputs_are_refused(paper_inf: Inference):
    cfg = paper_inf.config
    planes, legal, counts = random_batch(cfg, 2, 4)
    with pytest.raises(ValueError):
        paper_inf.evaluate(planes, np.full((2, 4), cfg.policy_size), counts)
    with pytest.raises(ValueError):
        paper_inf.evaluate(planes[:, :3], legal, counts)
    with pytest.raises(ValueError):
        paper_inf.evaluate(planes, legal, np.array([5, 1]))
    # Out-of-range values in the padding are ignored.
    legal[:, 3] = 10**6
    paper_inf.evaluate(planes, legal, np.array([3, 2]))


def test_masked_priors_tensor_helper():
    logits = torch.tensor([[0.0, 1.0, 2.0, 3.0]])
    legal = torch.tensor([[3, 1, 0]])
    mask = torch.tensor([[True, True, False]])
    p = masked_priors(logits, legal, mask)
    e = torch.exp(torch.tensor([3.0, 1.0]))
    torch.testing.assert_close(p[0, :2], e / e.sum())
    assert p[0, 2] == 0


def test_values_stay_in_range_on_extreme_inputs(paper_inf: Inference):
    cfg = paper_inf.config
    planes, legal, counts = random_batch(cfg, 4, 3)
    _, values = paper_inf.evaluate(planes * 1000, legal, counts)
    assert np.all(np.abs(values) <= 1) and np.all(np.isfinite(values))


# ---- determinism, fusion, weights -------------------------------------------------------------


def test_cpu_determinism_and_batch_independence():
    cfg = NetConfig.for_rules("small-5-6", 7, "fast")
    a, b = make(cfg, seed=7), make(cfg, seed=7)
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)
    inf = Inference(a, device="cpu")
    planes, legal, counts = random_batch(cfg, 8, 10, seed=5)
    r1, r2 = inf.evaluate(planes, legal, counts), inf.evaluate(planes, legal, counts)
    np.testing.assert_array_equal(r1.priors, r2.priors)
    np.testing.assert_array_equal(r1.values, r2.values)
    one = inf.evaluate(planes[3:4], legal[3:4], counts[3:4])
    np.testing.assert_allclose(one.priors[0], r1.priors[3], atol=1e-5)
    np.testing.assert_allclose(one.values[0], r1.values[3], atol=1e-5)


def test_fused_inference_matches_the_training_module():
    cfg = NetConfig.for_rules("cc49", 7, "paper")
    net = make(cfg, seed=1)
    # Non-trivial batch-norm statistics, so that fusing has something to fold.
    net.train()
    with torch.no_grad():
        for _ in range(3):
            net(torch.rand(16, 7, 7, 7) * 3)
    net.eval()
    planes, legal, counts = random_batch(cfg, 5, 30, seed=9)
    with torch.no_grad():
        logits, values = net(torch.from_numpy(planes))
        want = masked_priors(logits, torch.from_numpy(legal), torch.from_numpy(np.arange(30) < counts[:, None]))
    for fuse in (True, False):
        got = Inference(net, device="cpu", fuse=fuse).evaluate(planes, legal, counts)
        np.testing.assert_allclose(got.priors, want.numpy(), atol=1e-5)
        np.testing.assert_allclose(got.values, values.numpy(), atol=1e-5)
    assert net.training is False and isinstance(net.stem.bn, torch.nn.BatchNorm2d)  # wrapped model untouched


def test_save_load_round_trip_with_weights_only(tmp_path):
    cfg = NetConfig.for_rules("small-6-6", 7, "fast")
    net = make(cfg, seed=2)
    path = tmp_path / "net.pt"
    save_net(net, path)
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == NET_FORMAT and raw["config"] == cfg.to_dict()
    back = load_net(path)
    assert back.config == cfg
    for (k, v), (k2, v2) in zip(net.state_dict().items(), back.state_dict().items()):
        assert k == k2 and torch.equal(v, v2)
    planes, legal, counts = random_batch(cfg, 4, 6)
    a = Inference(net, device="cpu").evaluate(planes, legal, counts)
    b = Inference.from_checkpoint(path, device="cpu").evaluate(planes, legal, counts)
    np.testing.assert_array_equal(a.priors, b.priors)
    np.testing.assert_array_equal(a.values, b.values)
    # A bare state_dict needs its config.
    with pytest.raises(ValueError):
        load_net(net.state_dict())
    assert load_net(net.state_dict(), config=cfg).config == cfg
    # Files that carry arbitrary objects are refused, not unpickled, with one line.
    evil = tmp_path / "evil.pt"
    torch.save({"state_dict": net.state_dict(), "x": Evaluation}, evil)
    with pytest.raises(NetFileError, match=r"evil.pt: refused: the file pickles Python objects \(it names"):
        load_net(evil, config=cfg)


def test_inference_takes_new_weights():
    cfg = NetConfig.for_rules("small-4-3", 7, "tiny")
    inf = Inference(make(cfg, seed=0), device="cpu")
    planes, legal, counts = random_batch(cfg, 3, 4)
    before = inf.evaluate(planes, legal, counts)
    other = make(cfg, seed=1)
    inf.load_state_dict(net_state(other)["state_dict"])
    after = inf.evaluate(planes, legal, counts)
    want = Inference(other, device="cpu").evaluate(planes, legal, counts)
    assert not np.array_equal(before.priors, after.priors)
    np.testing.assert_array_equal(after.priors, want.priors)
    np.testing.assert_array_equal(after.values, want.values)


def test_empty_batch(paper_inf: Inference):
    cfg = paper_inf.config
    priors, values = paper_inf.evaluate(np.zeros((0, 7, cfg.n, cfg.n), np.float32), np.zeros((0, 5), np.int64))
    assert priors.shape == (0, 5) and values.shape == (0,)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("half", [False, True])
def test_cuda_matches_cpu(half: bool, monkeypatch: pytest.MonkeyPatch):
    # cuDNN convolutions round float32 to TF32 by default on Ampere and later GPUs (1e-3 apart
    # from the CPU on an H200): the float32 comparison asks for true float32.
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    cfg = NetConfig.paper()
    net = make(cfg, seed=4)
    planes, legal, counts = random_batch(cfg, 300, 40, seed=4)  # beyond the initial pinned capacity
    cpu = Inference(net, device="cpu").evaluate(planes, legal, counts)
    gpu = Inference(net, device="cuda", half=half, max_batch=16).evaluate(planes, legal, counts)
    tol = 2e-2 if half else 1e-4
    np.testing.assert_allclose(gpu.priors, cpu.priors, atol=tol)
    np.testing.assert_allclose(gpu.values, cpu.values, atol=tol)
    assert np.all(gpu.priors[np.arange(40) >= counts[:, None]] == 0)
