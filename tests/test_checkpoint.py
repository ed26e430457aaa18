"""Learner checkpoints (learner.checkpoint): round trip, bit-for-bit resume, refusals, fallback."""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import random
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from learner.checkpoint import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    checkpoint_paths,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
    trainer_from_checkpoint,
)
from learner.model import NetConfig, PolicyValueNet, save_net
from learner.model_files import read_model_file
from torch_helpers import one_thread  # noqa: F401 (autouse fixture)

from learner.training import LearnerConfig, Trainer
from hostile_helpers import EXPLOITED, Exploit
from torch_helpers import shares

TINY = NetConfig.for_rules("cc49", 7, "tiny")


def make_batch(b: int = 8, seed: int = 0) -> types.SimpleNamespace:
    rng = np.random.default_rng(seed)
    planes = rng.integers(0, 2, size=(b, TINY.in_planes, TINY.n, TINY.n)).astype(np.float32)
    policy = rng.random((b, TINY.policy_size)).astype(np.float32) ** 8
    policy /= policy.sum(axis=1, keepdims=True)
    value = shares(rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=b))
    return types.SimpleNamespace(planes=planes, policy=policy, value=value)


BATCHES = [make_batch(seed=i) for i in range(8)]

CONFIGS = {
    "paper": dataclasses.replace(LearnerConfig.paper(2), device="cpu"),
    "fast": LearnerConfig.fast(device="cpu", warmup_steps=2, total_steps=10, grad_clip=1.0),
    "adamw": LearnerConfig.fast(device="cpu", optimizer="adamw", lr=1e-3, l2=0.0, weight_decay=1e-2,
                                lr_schedule="step", lr_milestones=(5,), warmup_steps=0),
    "averaged": LearnerConfig.fast(device="cpu", warmup_steps=2, total_steps=10, weight_average=0.9),
}


def trained(config: LearnerConfig, steps: int, seed: int = 0) -> Trainer:
    t = Trainer(TINY, config, seed=seed)
    for i in range(steps):
        t.step(BATCHES[i % len(BATCHES)])
    return t


def saved(tmp_path: Path, steps: int = 3, **kw: object) -> Path:
    return save_checkpoint(tmp_path, trained(CONFIGS["paper"], steps), {"note": "x"}, **kw)


# ---- round trip and resume ----------------------------------------------------------------------


def test_round_trip(tmp_path):
    t = trained(CONFIGS["fast"], 3, seed=5)
    extra = {"run": {"preset": "cc49", "config": "fast", "games": [1, 2, 3]}, "replay_cursor": 12345,
             "weights": torch.arange(3)}
    path = save_checkpoint(tmp_path, t, extra)
    assert path == tmp_path / "checkpoint-0000000003.pt"
    ck = load_checkpoint(path)
    assert ck.path == path and ck.steps == 3 and ck.seed == 5
    assert ck.net_config == TINY and ck.learner_config == CONFIGS["fast"]
    assert ck.extra["run"] == extra["run"] and ck.extra["replay_cursor"] == 12345
    assert torch.equal(ck.extra["weights"], extra["weights"])
    assert set(ck.versions) == {"hopzero", "torch", "numpy", "python", "cuda"}
    assert ck.versions["torch"] == str(torch.__version__)
    assert ck.scheduler_state == {"kind": "cosine", "steps": 3}
    state = t.model.state_dict()
    assert set(ck.model_state) == set(state) and all(torch.equal(ck.model_state[k], state[k]) for k in state)
    # The raw file is the documented plain dict.
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == CHECKPOINT_FORMAT and len(raw["sha256"]) == 64
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no temporary file left


def test_checkpoint_from_a_source_tree_never_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a checkout that pip never installed, hopzero has no package metadata: the learner
    still saves its checkpoints, with hopzero's version recorded as None."""
    from importlib import metadata

    installed = metadata.version

    def version(name: str) -> str:
        if name == "hopzero":
            raise metadata.PackageNotFoundError(name)
        return installed(name)

    monkeypatch.setattr(metadata, "version", version)
    ck = load_checkpoint(save_checkpoint(tmp_path, trained(CONFIGS["fast"], 1, seed=2)))
    assert ck.versions["hopzero"] is None and ck.versions["torch"] == str(torch.__version__)


@pytest.mark.parametrize("name", ["paper", "fast", "adamw", "averaged"])
def test_resume_equals_uninterrupted(tmp_path, name):
    config = CONFIGS[name]
    straight = Trainer(TINY, config, seed=1)
    expected = [straight.step(BATCHES[i]) for i in range(8)]

    first = Trainer(TINY, config, seed=1)
    got = [first.step(BATCHES[i]) for i in range(4)]
    path = save_checkpoint(tmp_path, first, {})
    del first  # the "crash"
    resumed = trainer_from_checkpoint(path)
    assert resumed.steps == 4
    got += [resumed.step(BATCHES[i]) for i in range(4, 8)]
    assert got == expected  # every loss, norm and rate, exactly
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    a, b = straight.export_weights()[1], resumed.export_weights()[1]  # the weight average too, where kept
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_a_checkpoint_played_as_a_model_is_its_weight_average(tmp_path):
    t = trained(CONFIGS["averaged"], 5)
    ck = load_checkpoint(save_checkpoint(tmp_path, t))
    assert set(ck.average_state) == set(ck.model_state)
    assert not torch.equal(ck.average_state["stem.conv.weight"], ck.model_state["stem.conv.weight"])
    state, _ = read_model_file(ck.path)
    assert all(torch.equal(state["state_dict"][k], t.average[k]) for k in t.average)
    # A checkpoint without an average (written with it off) starts one when resumed with it on.
    plain = save_checkpoint(tmp_path / "plain", trained(CONFIGS["fast"], 3))
    resumed = trainer_from_checkpoint(plain, config=CONFIGS["averaged"])
    assert resumed.average is not None
    assert all(torch.equal(resumed.average[k], v) for k, v in resumed.model.state_dict().items())


def test_resume_restores_random_states(tmp_path):
    t = trained(CONFIGS["paper"], 1)
    torch.manual_seed(11)
    np.random.seed(12)
    random.seed(13)
    path = save_checkpoint(tmp_path, t)
    expected = (torch.rand(2), np.random.random(), random.random())
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    trainer_from_checkpoint(path)
    got = (torch.rand(2), np.random.random(), random.random())
    assert torch.equal(got[0], expected[0]) and got[1:] == expected[1:]


def test_resume_with_new_settings(tmp_path):
    path = saved(tmp_path)
    lower = dataclasses.replace(CONFIGS["paper"], lr=1e-5, momentum=0.5)
    t = trainer_from_checkpoint(path, config=lower)
    assert t.config == lower and t.steps == 3
    assert {g["momentum"] for g in t.optimizer.param_groups} == {0.5}
    assert t.step(BATCHES[0])["lr"] == 1e-5
    with pytest.raises(CheckpointError, match="optimiser state is 'sgd_nesterov'"):
        trainer_from_checkpoint(path, config=CONFIGS["adamw"])


def test_keeps_the_last_k(tmp_path):
    t = Trainer(TINY, dataclasses.replace(CONFIGS["paper"], keep_checkpoints=2))
    for i in range(5):
        t.step(BATCHES[i])
        save_checkpoint(tmp_path, t)
    assert [p.name for p in checkpoint_paths(tmp_path)] == ["checkpoint-0000000005.pt", "checkpoint-0000000004.pt"]
    save_checkpoint(tmp_path, t, keep=1)
    assert len(checkpoint_paths(tmp_path)) == 1
    # Resumed from an older state: the new file is kept beside the newest other.
    t5 = trainer_from_checkpoint(tmp_path / "checkpoint-0000000005.pt")
    t5.steps = 2
    save_checkpoint(tmp_path, t5, keep=2)
    assert [p.name for p in checkpoint_paths(tmp_path)] == ["checkpoint-0000000005.pt", "checkpoint-0000000002.pt"]


def test_a_crash_while_writing_leaves_the_old_files(tmp_path, monkeypatch):
    good = saved(tmp_path, steps=2)
    t = trained(CONFIGS["paper"], 3)

    def crash(obj, f, *a, **kw):
        f.write(b"PK\x03\x04 half a zip")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path, t)
    assert sorted(p.name for p in tmp_path.iterdir()) == [good.name]
    assert load_checkpoint(good).steps == 2


def test_extra_must_be_plain_data(tmp_path):
    t = trained(CONFIGS["paper"], 1)
    for bad, what in ((np.zeros(3), "ndarray"), (np.float64(1.0), "float64"), (Path("x"), "PosixPath"),
                      (TINY, "NetConfig")):
        with pytest.raises(TypeError, match=what):
            save_checkpoint(tmp_path, t, {"k": [bad]})
    assert list(tmp_path.iterdir()) == []


# ---- refusals -----------------------------------------------------------------------------------


def test_truncated_file_is_refused(tmp_path):
    path = saved(tmp_path)
    data = path.read_bytes()
    for cut in (0, 10, len(data) // 2, len(data) - 5):
        path.write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match="not a readable torch checkpoint"):
            load_checkpoint(path)


def test_damaged_file_is_refused(tmp_path):
    path = saved(tmp_path)
    data = bytearray(path.read_bytes())
    # Flip a byte inside the largest tensor record (torch would load it silently).
    import zipfile

    with zipfile.ZipFile(path) as z:
        info = max(z.infolist(), key=lambda i: i.file_size)
    header = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[header + info.file_size // 2] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="sha256"):
        load_checkpoint(path)


def test_pickled_class_is_refused_without_running_it(tmp_path):
    path = tmp_path / "checkpoint-0000000001.pt"
    torch.save({"format": CHECKPOINT_FORMAT, "model": Exploit()}, path)
    with pytest.raises(CheckpointError, match="refused.*weights-only") as e:
        load_checkpoint(path)
    assert "_exploit" in str(e.value) and "allowlist" not in str(e.value)
    assert not EXPLOITED
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"format": CHECKPOINT_FORMAT, "x": Exploit()}))
    with pytest.raises(CheckpointError, match="refused"):
        load_checkpoint(plain)
    assert not EXPLOITED


def test_foreign_files_are_refused(tmp_path):
    text = tmp_path / "notes.pt"
    text.write_text("hello\n")
    with pytest.raises(CheckpointError, match="not a readable torch checkpoint"):
        load_checkpoint(text)
    tensor = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), tensor)
    with pytest.raises(CheckpointError, match="holds a Tensor"):
        load_checkpoint(tensor)
    other = tmp_path / "other.pt"
    torch.save({"format": "someone.else/2", "model": {}}, other)
    with pytest.raises(CheckpointError, match="format tag 'someone.else/2'"):
        load_checkpoint(other)
    net = tmp_path / "net.pt"
    save_net(PolicyValueNet(TINY), net)
    with pytest.raises(CheckpointError, match="a network file"):
        load_checkpoint(net)
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        load_checkpoint(tmp_path / "missing.pt")


def test_missing_keys_and_bad_configs_are_named(tmp_path):
    path = saved(tmp_path)
    raw = torch.load(path, weights_only=True)
    partial = {k: v for k, v in raw.items() if k not in ("optimizer", "rng")}
    torch.save(partial, path)
    with pytest.raises(CheckpointError, match=r"lacks required key\(s\) \['optimizer', 'rng'\]"):
        load_checkpoint(path)
    from learner.checkpoint import _digest

    raw["learner_config"] = {**raw["learner_config"], "lr_decay": 1.0}
    raw["sha256"] = _digest(raw)
    torch.save(raw, path)
    with pytest.raises(CheckpointError, match="invalid config.*lr_decay"):
        load_checkpoint(path)


def test_a_bad_weight_average_is_named(tmp_path):
    from learner.checkpoint import _digest

    path = save_checkpoint(tmp_path, trained(CONFIGS["averaged"], 2))
    raw = torch.load(path, weights_only=True)
    for bad, problem in (([1, 2], "not a dict of tensors"), ({"stem.conv.weight": torch.zeros(1)}, "names differ")):
        torch.save({**raw, "average": bad, "sha256": _digest({**raw, "average": bad})}, path)
        with pytest.raises(CheckpointError, match=problem):
            trainer_from_checkpoint(path)


def test_checkpoint_error_is_a_value_error():
    assert issubclass(CheckpointError, ValueError)


# ---- finding the latest -------------------------------------------------------------------------


def test_latest_checkpoint_falls_back_past_a_damaged_one(tmp_path, caplog):
    assert latest_checkpoint(tmp_path) is None
    assert latest_checkpoint(tmp_path / "nowhere") is None
    t = Trainer(TINY, CONFIGS["paper"])
    for i in range(3):
        t.step(BATCHES[i])
        save_checkpoint(tmp_path, t)
    (tmp_path / ".checkpoint-0000000009.pt.tmp.123").write_bytes(b"junk")  # a dead writer's leftover
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    assert latest_checkpoint(tmp_path).steps == 3
    newest = tmp_path / "checkpoint-0000000003.pt"
    newest.write_bytes(newest.read_bytes()[:1000])
    with caplog.at_level(logging.WARNING, logger="hopzero.learner.checkpoint"):
        ck = latest_checkpoint(tmp_path)
    assert ck.steps == 2 and ck.path.name == "checkpoint-0000000002.pt"
    assert "checkpoint-0000000003.pt" in caplog.text and "skipping" in caplog.text
    assert newest.exists()  # kept for a post-mortem
    for p in checkpoint_paths(tmp_path):
        p.write_bytes(b"")
    assert latest_checkpoint(tmp_path) is None


def test_resume_from_latest_after_crash(tmp_path):
    """The driver's restart: newest good checkpoint, then train on."""
    t = Trainer(TINY, CONFIGS["fast"], seed=2)
    for i in range(5):
        t.step(BATCHES[i])
        if i % 2 == 1:
            save_checkpoint(tmp_path, t, {"replay_cursor": i})
    ck = latest_checkpoint(tmp_path)
    assert ck.steps == 4 and ck.extra == {"replay_cursor": 3}
    r = trainer_from_checkpoint(ck)
    assert r.step(BATCHES[4]) == trainer_from_checkpoint(ck.path).step(BATCHES[4])
    assert os.path.basename(str(ck.path)) == "checkpoint-0000000004.pt"


# ---- leftovers and bogus files do not pile up ---------------------------------------------------


def test_a_dead_writers_temporary_files_are_removed_when_saving(tmp_path):
    leftovers = [tmp_path / ".checkpoint-0000000009.pt.tmp.123", tmp_path / ".checkpoint-0000000001.pt.tmp.99999"]
    for p in leftovers:
        p.write_bytes(b"PK\x03\x04 half a zip")
    other = tmp_path / ".notes.tmp.1"
    other.write_text("not ours")
    saved(tmp_path, steps=2)
    assert not any(p.exists() for p in leftovers)
    assert other.exists()  # only checkpoint temporaries are the learner's to clear


def test_an_invalid_file_holds_no_kept_place(tmp_path, caplog):
    """A bogus high-numbered file used to count as one of the newest ``keep``: good checkpoints
    were deleted while it stayed forever. Now it is set aside, and the good ones are kept."""
    t = Trainer(TINY, dataclasses.replace(CONFIGS["paper"], keep_checkpoints=2))
    bogus = tmp_path / "checkpoint-9999999999.pt"
    bogus.write_bytes(b"not a checkpoint at all")
    with caplog.at_level(logging.WARNING, logger="hopzero.learner.checkpoint"):
        for i in range(3):
            t.step(BATCHES[i])
            save_checkpoint(tmp_path, t)
    assert [p.name for p in checkpoint_paths(tmp_path)] == ["checkpoint-0000000003.pt", "checkpoint-0000000002.pt"]
    assert not bogus.exists() and (tmp_path / "checkpoint-9999999999.pt.invalid").read_bytes() == b"not a checkpoint at all"
    assert "set aside invalid checkpoint" in caplog.text
    assert latest_checkpoint(tmp_path).steps == 3
