"""``hopzero train`` as a newcomer runs it: a subprocess on a local Ray it starts itself.

What the screen shows is the run's own progress and summary: none of Ray's start-up notices,
and no warning that an actor's constructor arguments live in the object store (an actor handle
among them would make a restart fail, ray-project/ray#53727: the services are given the
registry's and the replay store's names instead, and look them up).
"""

from __future__ import annotations

import json
import subprocess

from test_cli import hopzero_command
from train_helpers import TINY


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
