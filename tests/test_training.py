"""The learner's loss, optimiser settings, training step and weight export (learner.training)."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import random
import types

import numpy as np
import pytest
import torch
from torch import nn

from learner.inference import Inference
from learner.model import NetConfig, PolicyValueNet
from torch_helpers import one_thread, shares  # noqa: F401 (autouse fixture)

from learner.training import (LearnerConfig, Trainer, cpu_has_bfloat16, l2_parameters, load_weights_into, loss_terms,
                              lr_at)

TINY = NetConfig.for_rules("cc49", 7, "tiny")
CUDA = torch.cuda.is_available()


def make_batch(cfg: NetConfig = TINY, b: int = 8, seed: int = 0, moves: int = 12) -> types.SimpleNamespace:
    """Replay-shaped batch: 0/1 planes, sparse target distributions, +-1 values."""
    rng = np.random.default_rng(seed)
    planes = rng.integers(0, 2, size=(b, cfg.in_planes, cfg.n, cfg.n)).astype(np.float32)
    policy = np.zeros((b, cfg.policy_size), dtype=np.float32)
    for i in range(b):
        idx = rng.choice(cfg.policy_size, size=moves, replace=False)
        policy[i, idx] = rng.dirichlet(np.ones(moves))
    value = shares(rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=b))
    return types.SimpleNamespace(planes=planes, policy=policy, value=value)


def cpu(config: LearnerConfig, **kw: object) -> LearnerConfig:
    return dataclasses.replace(config, device="cpu", **kw)


# ---- the loss ---------------------------------------------------------------------------------


def test_loss_terms_match_hand_computation():
    torch.manual_seed(0)
    model = PolicyValueNet(TINY).eval()  # eval: the forward pass below sees the same statistics
    batch = make_batch(b=5, seed=1)
    target = np.array([1.0, -1.0, 0.5, 0.0, -0.25], dtype=np.float32)  # any target in [-1, 1]
    batch.value = shares(target)
    lam = 3e-3
    got = {k: v.detach() for k, v in loss_terms(model, batch, l2=lam, value_loss_weight=0.7).items()}
    with torch.no_grad():
        logits, v = model(torch.from_numpy(batch.planes))
    logits, v = logits.double().numpy(), v.double().numpy()
    z = logits - logits.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    ce = -np.mean(np.sum(batch.policy * log_p, axis=1))
    mse = np.mean((v - target) ** 2)
    kernels = [m.weight.detach().double().numpy() for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    l2 = lam * sum(float(np.sum(w * w)) for w in kernels)
    assert float(got["policy_ce"]) == pytest.approx(ce, rel=1e-5)
    assert float(got["value_mse"]) == pytest.approx(mse, rel=1e-5)
    assert float(got["l2"]) == pytest.approx(l2, rel=1e-5)
    assert float(got["total"]) == pytest.approx(0.7 * mse + ce + l2, rel=1e-5)


def test_l2_covers_kernels_only():
    model = PolicyValueNet(TINY)
    params = l2_parameters(model)
    # stem + 3 per bottleneck + policy conv/fc + value conv/fc1/fc2; no bias, no batch norm
    assert len(params) == 1 + 3 * TINY.blocks + 2 + 3
    names = {id(p): n for n, p in model.named_parameters()}
    assert all(names[id(p)].endswith("conv.weight") or names[id(p)].endswith("fc.weight")
               or names[id(p)].endswith("fc1.weight") or names[id(p)].endswith("fc2.weight") for p in params)
    assert not any(".bn." in names[id(p)] or names[id(p)].endswith("bias") for p in params)
    coef = 5e-3
    expected = coef * sum(float((p.detach().double() ** 2).sum()) for p in params)
    got = loss_terms(model, make_batch(), l2=coef)["l2"].item()
    assert got == pytest.approx(expected, rel=1e-5)
    assert float(loss_terms(model, make_batch(), l2=0.0)["l2"]) == 0.0


def test_value_loss_uses_the_target_it_is_given():
    """z, or a z/q mix: the replay buffer decides; the loss takes the given target as is."""
    torch.manual_seed(0)
    model = PolicyValueNet(TINY).eval()
    batch = make_batch(b=6, seed=2)
    with torch.no_grad():
        _, v = model(torch.from_numpy(batch.planes))
    z = batch.value[:, 0] - batch.value[:, 1]
    q = np.linspace(-0.9, 0.9, 6).astype(np.float32)
    for target in (z, (z + q) / 2):
        b = types.SimpleNamespace(planes=batch.planes, policy=batch.policy, value=shares(target))
        got = loss_terms(model, b)["value_mse"].item()
        assert got == pytest.approx(float(np.mean((v.numpy() - target) ** 2)), rel=1e-6)


def test_batch_shapes_are_checked():
    t = Trainer(TINY, cpu(LearnerConfig.paper(1)))
    good = make_batch(b=4)
    with pytest.raises(ValueError, match="planes"):
        t.step(types.SimpleNamespace(planes=good.planes[:, :3], policy=good.policy, value=good.value))
    with pytest.raises(ValueError, match="policy"):
        t.step(types.SimpleNamespace(planes=good.planes, policy=good.policy[:, :10], value=good.value))
    with pytest.raises(ValueError, match="value"):
        t.step(types.SimpleNamespace(planes=good.planes, policy=good.policy, value=good.value[:2]))
    with pytest.raises(TypeError, match="planes, policy and value"):
        t.step({"planes": good.planes})
    assert t.steps == 0


# ---- configs ----------------------------------------------------------------------------------


def test_paper_config_is_table_1():
    s1, s2 = LearnerConfig.paper(1), LearnerConfig.paper(2)
    for c in (s1, s2):
        assert (c.optimizer, c.lr, c.momentum, c.batch_size) == ("sgd_nesterov", 1e-4, 0.9, 32)
        assert (c.lr_schedule, c.warmup_steps, c.grad_clip, c.weight_decay, c.amp) == ("constant", 0, 0.0, 0.0, False)
        assert c.value_loss_weight == 1.0
    assert (s1.l2, s2.l2) == (1e-4, 5e-3)
    with pytest.raises(ValueError, match="stage"):
        LearnerConfig.paper(3)


def test_paper_optimiser_is_sgd_nesterov():
    t = Trainer(TINY, cpu(LearnerConfig.paper(2)))
    opt = t.optimizer
    assert type(opt) is torch.optim.SGD
    for g in opt.param_groups:
        assert g["nesterov"] is True and g["momentum"] == 0.9 and g["lr"] == 1e-4
        assert g["weight_decay"] == 0.0  # the paper's L2 is a loss term, not weight decay
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(t.model.parameters()))
    out = t.step(make_batch())
    assert out["lr"] == 1e-4
    assert out["l2"] == pytest.approx(5e-3 * sum(float((p.detach() ** 2).sum()) for p in l2_parameters(t.model)),
                                      rel=1e-3)  # weights moved by one tiny step since


def test_fast_config():
    c = LearnerConfig.fast()
    assert c == LearnerConfig()
    assert (c.optimizer, c.lr, c.momentum, c.l2, c.batch_size) == ("sgd_nesterov", 0.1, 0.9, 1e-4, 256)
    assert c.lr_schedule == "cosine" and c.warmup_steps > 0 and c.grad_clip > 0 and c.amp
    t = Trainer(TINY, cpu(c))
    assert not t.amp and not t.channels_last  # CPU: AMP and NHWC requested but not used
    assert LearnerConfig.fast(lr=1e-3).lr == 1e-3
    with pytest.raises(ValueError, match="unknown"):
        LearnerConfig.fast(learning_rate=1e-3)


def test_adamw_decays_kernels_only():
    c = LearnerConfig.fast(optimizer="adamw", lr=1e-2, l2=0.0, weight_decay=1e-2)
    t = Trainer(TINY, cpu(c))
    assert type(t.optimizer) is torch.optim.AdamW
    decay, rest = t.optimizer.param_groups
    assert decay["weight_decay"] == 1e-2 and rest["weight_decay"] == 0.0
    assert decay["betas"] == (c.momentum, 0.999)
    assert {id(p) for p in decay["params"]} == {id(p) for p in l2_parameters(t.model)}
    assert t.step(make_batch())["l2"] == 0.0


def test_config_dict_round_trip_is_strict():
    for c in (LearnerConfig.paper(1), LearnerConfig.paper(2), LearnerConfig.fast(),
              LearnerConfig.fast(lr_schedule="step", lr_milestones=(10, 20))):
        d = json.loads(json.dumps(c.to_dict()))  # JSON-ready
        assert LearnerConfig.from_dict(d) == c
    with pytest.raises(ValueError, match="^lr_decay: unknown key; valid: "):
        LearnerConfig.from_dict({**LearnerConfig().to_dict(), "lr_decay": 0.5})
    bad = [dict(optimizer="adam"), dict(lr=0), dict(lr_schedule="linear"), dict(momentum=1.0),
           dict(batch_size=0), dict(device="tpu"), dict(grad_clip=-1), dict(amp_dtype="float8"),
           dict(lr_schedule="cosine", total_steps=10, warmup_steps=10), dict(lr_milestones=(5, 2))]
    for kw in bad:
        with pytest.raises(ValueError):
            LearnerConfig(**kw)
    with pytest.raises(TypeError):
        LearnerConfig(1e-3)  # keyword-only


def test_learning_rate_schedules():
    c = LearnerConfig.fast(lr=1.0, warmup_steps=10, total_steps=110, min_lr_ratio=0.1)
    assert lr_at(c, 0) == pytest.approx(0.1) and lr_at(c, 9) == pytest.approx(1.0)
    assert lr_at(c, 10) == pytest.approx(1.0)
    assert lr_at(c, 60) == pytest.approx(0.55)  # halfway down the cosine
    assert lr_at(c, 110) == pytest.approx(0.1) and lr_at(c, 10_000) == pytest.approx(0.1)
    s = LearnerConfig.fast(lr=1.0, lr_schedule="step", warmup_steps=0, lr_milestones=(5, 8), lr_gamma=0.5)
    assert [lr_at(s, i) for i in (0, 4, 5, 7, 8, 100)] == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    p = LearnerConfig.paper(1)
    assert {lr_at(p, i) for i in (0, 1, 10**6)} == {1e-4}


# ---- training ---------------------------------------------------------------------------------


def test_overfits_one_batch():
    batch = make_batch(b=16, seed=3)
    p = batch.policy
    target_entropy = float(-np.sum(np.where(p > 0, p * np.log(np.maximum(p, 1e-30)), 0), axis=1).mean())
    t = Trainer(TINY, cpu(LearnerConfig.fast(optimizer="adamw", lr=3e-3, l2=0.0, warmup_steps=0,
                                             lr_schedule="constant")), seed=0)
    first = t.step(batch)
    for _ in range(150):
        last = t.step(batch)
    assert t.steps == 151
    assert last["value_mse"] < 0.05 * first["value_mse"]
    # policy cross entropy -> the targets' own entropy (KL -> 0)
    assert last["policy_ce"] - target_entropy < 0.1 * (first["policy_ce"] - target_entropy)
    assert last["total"] < 0.5 * first["total"]


@pytest.mark.parametrize("mode", ["off", "on", "auto"])
def test_cpu_amp_computes_in_bfloat16_keeps_float32_weights_and_still_learns(mode):
    t = Trainer(TINY, cpu(LearnerConfig.fast(optimizer="adamw", lr=3e-3, l2=0.0, warmup_steps=0,
                                             lr_schedule="constant"), cpu_amp=mode), seed=0)
    expect_bf16 = mode == "on" or (mode == "auto" and cpu_has_bfloat16())
    assert t.amp is expect_bf16 and not t.scaler.is_enabled()
    seen: list[torch.dtype] = []
    conv = next(m for m in t.model.modules() if isinstance(m, nn.Conv2d))
    hook = conv.register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    batch = make_batch(b=16, seed=3)
    first = t.step(batch)
    hook.remove()
    assert seen == [torch.bfloat16 if expect_bf16 else torch.float32]
    assert all(p.dtype == torch.float32 for p in t.model.parameters())
    for _ in range(150):
        last = t.step(batch)
    assert math.isfinite(last["total"]) and last["total"] < 0.5 * first["total"]


def test_paper_settings_make_progress():
    batch = make_batch(b=32, seed=4)
    t = Trainer(TINY, cpu(LearnerConfig.paper(1)))
    first = t.step(batch)["total"]
    for _ in range(30):
        last = t.step(batch)["total"]
    assert last < first


def test_step_reports_and_clips():
    # lr 1: parameter changes well above float32 rounding of the weights
    c = cpu(LearnerConfig.paper(1), grad_clip=1e-3, l2=0.0, lr=1.0)
    t = Trainer(TINY, c)
    before = [p.detach().clone() for p in t.model.parameters()]
    out = t.step(make_batch())
    assert set(out) == {"total", "value_mse", "policy_ce", "l2", "grad_norm", "lr", "skipped", "scale"}
    assert all(isinstance(v, float) for v in out.values())
    assert out["grad_norm"] > 1e-3 and out["skipped"] == 0.0
    # First Nesterov step from zero momentum moves by lr * (1 + momentum) * clipped gradient.
    delta = torch.sqrt(sum(((p.detach() - b) ** 2).sum() for p, b in zip(t.model.parameters(), before)))
    assert float(delta) == pytest.approx(1.0 * 1.9 * 1e-3, rel=1e-3)


def test_non_finite_step_is_skipped():
    t = Trainer(TINY, cpu(LearnerConfig.paper(1)))
    bad = make_batch()
    bad.value = bad.value.copy()
    bad.value[0] = np.nan
    before = {k: v.clone() for k, v in t.model.state_dict().items() if v.dtype.is_floating_point}
    out = t.step(bad)
    assert out["skipped"] == 1.0 and t.steps == 1
    after = t.model.state_dict()
    assert all(torch.equal(after[k], v) for k, v in before.items() if "running" not in k)


def test_seeded_init_is_reproducible_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = Trainer(TINY, cpu(LearnerConfig.paper(1)), seed=7)
    assert torch.equal(torch.rand(3), expected)
    b = Trainer(TINY, cpu(LearnerConfig.paper(1)), seed=7)
    c = Trainer(TINY, cpu(LearnerConfig.paper(1)), seed=8)
    sa, sb, sc = a.model.state_dict(), b.model.state_dict(), c.model.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["stem.conv.weight"], sc["stem.conv.weight"])
    batch = make_batch()
    assert a.step(batch) == b.step(batch)


def test_due_flags():
    t = Trainer(TINY, cpu(LearnerConfig.paper(1), checkpoint_every_steps=3, publish_every_steps=2))
    flags = []
    for _ in range(6):
        t.step(make_batch(b=2))
        flags.append((t.checkpoint_due, t.publish_due))
    assert flags == [(False, False), (False, True), (True, False), (False, True), (False, False), (True, True)]


def test_devices():
    assert Trainer(TINY, LearnerConfig.paper(1)).device.type == ("cuda" if CUDA else "cpu")  # auto
    if not CUDA:
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            Trainer(TINY, dataclasses.replace(LearnerConfig.paper(1), device="cuda"))


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
@pytest.mark.parametrize("amp_dtype", ["float16", "bfloat16"])
def test_cuda_amp_step(amp_dtype, monkeypatch):
    # The float32 comparison below asks for true float32: cuDNN's fastest convolutions (benchmark
    # mode) round it to TF32 on Ampere and later GPUs, 3e-3 apart from the CPU on an H200.
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    t = Trainer(TINY, LearnerConfig.fast(device="cuda", amp_dtype=amp_dtype, warmup_steps=0))
    assert t.amp and t.channels_last and torch.backends.cudnn.benchmark
    assert t.scaler.is_enabled() == (amp_dtype == "float16")
    batch = make_batch(b=32)
    first = t.step(batch)
    for _ in range(30):
        last = t.step(batch)
    assert last["total"] < first["total"] and math.isfinite(last["grad_norm"])
    version, arrays = t.export_weights()
    fresh = PolicyValueNet(TINY).eval()
    load_weights_into(fresh, arrays)
    x = torch.from_numpy(batch.planes)
    t.model.eval()
    with torch.no_grad():
        p_gpu, v_gpu = t.model(x.cuda())
        p_cpu, v_cpu = fresh(x)
    torch.testing.assert_close(p_gpu.cpu(), p_cpu, atol=1e-4, rtol=1e-4)


# ---- weights out ------------------------------------------------------------------------------


def test_exported_weights_load_into_a_fresh_model():
    t = Trainer(TINY, cpu(LearnerConfig.fast(warmup_steps=0, lr_schedule="constant")), seed=1)
    batch = make_batch(b=8)
    for _ in range(5):
        t.step(batch)
    version, arrays = t.export_weights()
    assert version == 5
    assert set(arrays) == set(t.model.state_dict())
    assert all(type(a) is np.ndarray and a.flags.c_contiguous for a in arrays.values())
    # Plain arrays: they survive a pickle-free container.
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as z:
        transported = {k: z[k] for k in z.files}
    snapshot = {k: a.copy() for k, a in arrays.items()}
    t.step(batch)  # training on must not change what was exported
    assert all(np.array_equal(arrays[k], snapshot[k]) for k in arrays)

    fresh = PolicyValueNet(TINY)
    load_weights_into(fresh, transported)
    ref = Trainer(TINY, cpu(LearnerConfig.fast(warmup_steps=0, lr_schedule="constant")), seed=1)
    for _ in range(5):
        ref.step(batch)
    ref.model.eval()
    fresh.eval()
    x = torch.from_numpy(batch.planes)
    with torch.no_grad():
        (p1, v1), (p2, v2) = ref.model(x), fresh(x)
    assert torch.equal(p1, p2) and torch.equal(v1, v2)

    # The consumer side of actors and the evaluator: an Inference refreshed after loading.
    inf = Inference(PolicyValueNet(TINY), device="cpu")
    load_weights_into(inf.model, transported)
    inf.refresh()
    logits, values = inf.logits(batch.planes)
    np.testing.assert_allclose(logits, p1.numpy(), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(values, v1.numpy(), atol=1e-5)


def test_load_weights_into_is_strict():
    _, arrays = Trainer(TINY, cpu(LearnerConfig.paper(1))).export_weights()
    model = PolicyValueNet(TINY)
    missing = dict(arrays)
    del missing["policy_fc.bias"]
    with pytest.raises(ValueError, match=r"missing 1: \['policy_fc.bias'\]"):
        load_weights_into(model, missing)
    with pytest.raises(ValueError, match=r"unexpected 1: \['extra.weight'\]"):
        load_weights_into(model, {**arrays, "extra.weight": np.zeros(3, np.float32)})
    other = NetConfig.for_rules("cc49", 7, "fast")
    _, wrong = Trainer(other, cpu(LearnerConfig.paper(1))).export_weights()
    with pytest.raises(ValueError, match="wrong shape"):
        load_weights_into(model, {k: wrong.get(k, v) for k, v in arrays.items()})


def test_import_weights_keeps_steps():
    src = Trainer(TINY, cpu(LearnerConfig.paper(1)), seed=3)
    dst = Trainer(TINY, cpu(LearnerConfig.paper(2)), seed=4)
    dst.step(make_batch())
    dst.import_weights(src.export_weights()[1])
    assert dst.steps == 1
    assert torch.equal(dst.model.stem.conv.weight, src.model.stem.conv.weight)


def test_python_random_is_not_touched_by_training():
    random.seed(5)
    expected = random.random()
    random.seed(5)
    t = Trainer(TINY, cpu(LearnerConfig.paper(1)))
    t.step(make_batch())
    assert random.random() == expected



def test_weight_average_follows_the_weights_and_is_what_the_trainer_publishes():
    config = cpu(LearnerConfig.fast(optimizer="adamw", lr=3e-3, l2=0.0, warmup_steps=0, lr_schedule="constant",
                                    weight_average=0.5))
    t = Trainer(TINY, config, seed=0)
    name = "stem.conv.weight"
    expected = t.model.state_dict()[name].clone()
    for step in range(12):
        t.step(make_batch(b=8, seed=step))
        decay = min(0.5, (1 + step) / (10 + step))  # the short memory of the first steps
        expected = decay * expected + (1 - decay) * t.model.state_dict()[name]
    assert t.average is not None and set(t.average) == set(t.model.state_dict())
    assert torch.allclose(t.average[name], expected, atol=1e-6)
    assert not torch.equal(t.average[name], t.model.state_dict()[name])
    version, arrays = t.export_weights()
    assert version == 12 and np.array_equal(arrays[name], t.average[name].numpy())
    # Batch-norm's step counters are copied, not averaged.
    counters = [k for k in arrays if k.endswith("num_batches_tracked")]
    assert counters and all(int(arrays[k]) == 12 for k in counters)
    # Imported weights start the average afresh: what is published is what was imported.
    fresh = Trainer(TINY, config, seed=7).export_weights()[1]
    t.import_weights(fresh)
    assert all(np.array_equal(t.export_weights()[1][k], fresh[k]) for k in fresh)


def test_without_the_weight_average_the_trainer_publishes_its_weights():
    t = Trainer(TINY, cpu(LearnerConfig.paper(1)), seed=0)
    t.step(make_batch())
    assert t.average is None
    arrays = t.export_weights()[1]
    assert all(np.array_equal(arrays[k], v.numpy()) for k, v in t.model.state_dict().items())
