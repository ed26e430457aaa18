"""``hopzero train`` as a newcomer runs it: a subprocess on a local Ray it starts itself.

What the screen shows is the run's own progress and summary: none of Ray's start-up notices,
and no warning that an actor's constructor arguments live in the object store (an actor handle
among them would make a restart fail, ray-project/ray#53727: the services are given the
registry's and the replay store's names instead, and look them up).
"""

from __future__ import annotations

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
