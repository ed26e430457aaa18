"""``hopzero train`` as a newcomer runs it: a subprocess on a local Ray it starts itself.

What the screen shows is the run's own progress and summary: none of Ray's start-up notices,
and no warning that an actor's constructor arguments live in the object store (an actor handle
among them would make a restart fail, ray-project/ray#53727: the services are given the
registry's and the replay store's names instead, and look them up).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from test_cli import hopzero_command
from train_helpers import TINY

from hopzero.config import ConfigError, load_config
from hopzero.train import train
from learner.model_files import shipped_model_path
from plumbing.run_files import sha256_file


def test_train_shows_its_progress_and_no_ray_noise(tmp_path):
    sets = [arg for item in TINY for arg in ("--set", item)]
    proc = subprocess.run(
        hopzero_command() + ["train", "--config", "demo", "--seed", "1", "--run-dir", str(tmp_path / "run"),
                             *sets, "--set", "run.minutes=0.25"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    screen = proc.stdout + proc.stderr
    assert proc.returncode == 0, screen
    assert "hopzero train: demo config on cc49" in proc.stdout
    assert "Finished after" in proc.stdout
    for noise in ("constructor arguments in the object store", "Token authentication", "WARNING", "core_worker"):
        assert noise not in screen, screen


def test_train_runs_the_whole_system_on_the_star(tmp_path):
    # The star2 configuration, shrunk: stage 1 from greedy star games, then star self-play games
    # (the search with the repetition draw), the learner, the gate and the greedy evaluation.
    sets = [arg for item in TINY for arg in ("--set", item)]
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        hopzero_command() + ["train", "--config", "star2", "--seed", "1", "--run-dir", str(run_dir), "--json",
                             *sets, "--set", "run.minutes=1.5", "--set", "search.num_simulations=4"],
        capture_output=True, text=True, timeout=400, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "hopzero train: star2 config on star2" in proc.stderr + proc.stdout
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["vs_greedy"] is not None and summary["vs_greedy"]["games"] >= 2, summary
    last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["selfplay"]["games"] > 120, last["selfplay"]     # star self-play games beyond stage 1's
    assert last["learner"]["steps"] > 40, last["learner"]        # and the learner trained on them

    # hopzero curves --against referees the run's best models, each point the very match `hopzero
    # match` plays with that model file: every promotion, or the best model at the minutes asked for
    promoted = [json.loads(line) for line in (run_dir / "promotions.jsonl").read_text().splitlines()]

    def refereed(*extra: str) -> list[dict]:
        proc = subprocess.run(
            hopzero_command() + ["curves", str(run_dir), "--against", "greedy", "--sims", "4", "--games", "2",
                                 "--seed", "3", "--out", str(tmp_path / "refereed.png"), "--json", *extra],
            capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["runs"]["run"]

    every = refereed()
    assert [p["version"] for p in every] == [int(p["version"]) for p in promoted]
    assert [p["minutes"] for p in every] == sorted(p["minutes"] for p in every)
    (at_60,) = refereed("--at", "60")
    assert (at_60["minutes"], at_60["version"], at_60["score"]) == (60, every[-1]["version"], every[-1]["score"])
    match = subprocess.run(
        hopzero_command() + ["match", "--preset", "star2", "--a", f"mcts:model={run_dir / promoted[-1]['path']},sims=4",
                             "--b", "greedy", "--games", "2", "--seed", "3", "--parallel", "50", "--json"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert match.returncode == 0, match.stderr
    assert every[-1]["score"] == json.loads(match.stdout)["a_score"]
    assert (tmp_path / "refereed.png").read_bytes()[:4] == b"\x89PNG"

    # hopzero curves draws the run's own measurements of its best models; a directory that is no
    # run is refused, naming it, and nothing is written
    picture = tmp_path / "curves.png"
    curves = subprocess.run(hopzero_command() + ["curves", str(run_dir), "--out", str(picture), "--json"],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert curves.returncode == 0, curves.stderr
    measured = [json.loads(line) for line in (run_dir / "evaluations.jsonl").read_text().splitlines()]
    points = json.loads(curves.stdout)["runs"]["run"]
    assert [(p["version"], p["score"]) for p in points] == [
        (int(e["version"]), e["score"]) for e in measured if e["kind"] == "greedy"]
    assert all(0 <= p["minutes"] <= 3 for p in points) and picture.read_bytes()[:4] == b"\x89PNG"
    refused = subprocess.run(hopzero_command() + ["curves", str(tmp_path), "--out", str(tmp_path / "no.png")],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert refused.returncode == 2 and "not a run directory (no run.json)" in refused.stderr
    assert not (tmp_path / "no.png").exists()


def test_train_starts_a_new_run_from_a_trained_network(tmp_path):
    # --init-model: the shipped cc49 network (v7000, the `fast` size) is the new run's first best
    # model; the learner goes on from its weights and the actors play self-play with it at once.
    sets = [arg for item in TINY if not item.startswith("network.size=") for arg in ("--set", item)]
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        hopzero_command() + ["train", "--config", "demo", "--seed", "1", "--run-dir", str(run_dir), "--json",
                             "--init-model", "shipped", *sets, "--set", "run.minutes=0.5"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shipped = shipped_model_path(load_config("demo").game_rules())
    started = json.loads((run_dir / "run.json").read_text())["initial_model"]
    assert (started["source"], started["version"]) == ("shipped", 7000)
    assert started["sha256"] == sha256_file(shipped)
    first = json.loads((run_dir / "promotions.jsonl").read_text().splitlines()[0])
    assert (first["version"], first["games"]) == ("7000", 0)
    last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["learner"]["steps"] > 7000, last["learner"]        # trained on from v7000's weights
    assert last["learner"]["skipped"].get("stale", 0) == 0, last    # no stage-1 game was played
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["vs_greedy"] is not None and int(summary["vs_greedy"]["version"]) >= 7000, summary


def test_init_model_is_refused_with_a_clear_error_and_nothing_written(tmp_path):
    config = load_config("demo", seed=1, overrides=["network.size=tiny"])
    with pytest.raises(ConfigError, match="shape differs: channels 32 .this run: 16."):
        train(config, run_dir=tmp_path / "new", init_model="shipped")
    assert not (tmp_path / "new").exists()
    with pytest.raises(ConfigError, match="trained with preset='cc49', this run has preset='star2'"):
        train(load_config("star2", seed=1), run_dir=tmp_path / "new", init_model=str(shipped_model_path(
            load_config("demo").game_rules())))
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "run.json").write_text("{}")
    with pytest.raises(ConfigError, match="--init-model starts a new run, and .* holds one"):
        train(load_config("demo", seed=1), run_dir=tmp_path / "old", init_model="shipped")
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == ["run.json"]
    with pytest.raises(ConfigError, match="no such file or run directory"):
        train(load_config("demo", seed=1), run_dir=tmp_path / "new", init_model=str(tmp_path / "missing.pt"))


def test_init_model_adds_auxiliary_heads_and_keeps_every_other_weight(tmp_path):
    # KataGo's ownership and score heads can join a network trained without them: the run's
    # first best model is the shipped network with two new heads, its own weights untouched.
    from hopzero.initial_model import load_initial_model
    from learner.model import load_net, save_net

    config = load_config("demo", seed=1, overrides=["network.ownership_head=true", "network.score_head=true"])
    initial = load_initial_model(config, "shipped")
    assert initial.added_parts == ("ownership_head", "score_head")
    assert initial.provenance()["added_parts"] == ["ownership_head", "score_head"]
    shipped = load_net(shipped_model_path(config.game_rules())).state_dict()
    grown = load_net(initial.state).state_dict()
    assert {k for k in grown if k not in shipped} and all(k.startswith(("ownership_", "score_")) for k in grown
                                                          if k not in shipped)
    assert all(grown[k].equal(v) for k, v in shipped.items())
    assert load_initial_model(config, "shipped").state["sha256"] == initial.state["sha256"]   # seeded: the same heads

    # a head is never dropped, and nothing but heads and global pooling may be added
    with_heads = tmp_path / "with-heads.pt"
    save_net(load_net(initial.state), with_heads, initial.state.get("input"))
    with pytest.raises(ConfigError, match="shape differs: ownership_head True .this run: False."):
        load_initial_model(load_config("demo", seed=1), str(with_heads))
    with pytest.raises(ConfigError, match="shape differs: channels"):
        load_initial_model(load_config("demo", seed=1, overrides=["network.size=paper"]), "shipped")


def test_init_model_adds_global_pooling_that_starts_as_the_old_network(tmp_path):
    # KataGo's global pooling can join a trained network: its blocks' pooled bias starts at zero,
    # so the run's first best model plays exactly as the file's network until training moves it.
    import torch
    from hopzero.initial_model import load_initial_model
    from learner.model import GlobalPoolingBottleneck, load_net, save_net

    config = load_config("star2", seed=1, overrides=["network.global_pooling=2"])
    initial = load_initial_model(config, "shipped")
    assert initial.added_parts == ("global_pooling",)
    old, new = load_net(shipped_model_path(config.game_rules())).eval(), load_net(initial.state).eval()
    assert new.config.mask_plane == new.config.in_planes - 1 and old.config.mask_plane == -1
    assert sum(isinstance(b, GlobalPoolingBottleneck) for b in new.blocks) == len(new.blocks) // 2 > 0
    old_weights = old.state_dict()
    assert all(v.equal(old_weights[k]) for k, v in new.state_dict().items() if ".pool_" not in k)
    x = torch.rand(8, new.config.in_planes, new.config.n, new.config.n, generator=torch.Generator().manual_seed(0))
    x[:, -1] = (x[:, -1] > 0.3).float()   # an on-board mask of 0s and 1s
    with torch.no_grad():
        for a, b in zip(old(x), new(x)):
            assert torch.allclose(a, b, atol=1e-6)

    # global pooling is never dropped
    pooled = tmp_path / "pooled.pt"
    save_net(new, pooled, initial.state.get("input"))
    with pytest.raises(ConfigError, match="shape differs: global_pooling 2 .this run: 0."):
        load_initial_model(load_config("star2", seed=1), str(pooled))
