"""``hopzero bench replay`` at a tiny size against real redis-servers it starts itself: the JSON's
fields are there and agree with each other. Speed is never asserted (docs/BENCHMARKS.md keeps it)."""

import shutil

import pytest
from test_cli import run, run_json

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")

ARGS = ("bench", "replay", "--writers", "2", "--seconds", "1", "--pool", "2", "--sims", "8", "--batch", "16",
        "--window", "5000", "--seed", "1")


def test_every_server_setting_and_batch_size_reports_consistent_figures():
    data = run_json(*ARGS, "--aof", "both", "--send-batch", "1,4")
    assert data["benchmark"] == "replay" and data["preset"] == "cc49" and data["pool_games"] == 2
    assert data["positions_per_game"] > 0 and data["record_bytes_mean"] > 500
    assert data["actors"] == 1000 and data["actor_games_per_s"] == 1.0 and "BENCHMARKS" in data["actor_games_per_s_source"]
    assert [(r["aof"], r["send_batch"]) for r in data["runs"]] == [(False, 1), (False, 4), (True, 1), (True, 4)]
    for r in data["runs"]:
        assert r["writers"] == 2 and r["games"] > 0 and r["wall_s"] > 0
        assert r["games_per_s"] == pytest.approx(r["games"] / r["wall_s"], rel=0.01)
        assert r["positions_per_s"] == pytest.approx(r["games_per_s"] * data["positions_per_game"], rel=0.01)
        assert r["redis_read_cpu_s_per_game"] > 0 and r["redis_write_cpu_s_per_game"] >= 0
        assert r["redis_cpu_s_per_game"] == pytest.approx(
            r["redis_read_cpu_s_per_game"] + r["redis_write_cpu_s_per_game"], rel=1e-3, abs=1e-7)
        assert r["redis_capacity_games_per_s"] == pytest.approx(1 / r["redis_cpu_s_per_game"], rel=0.01)
        assert r["headroom"] == pytest.approx(r["redis_capacity_games_per_s"] / 1000, rel=0.01)
        assert r["accepted_headroom"] == pytest.approx(r["games_per_s"] / 1000, rel=0.01)
        assert r["stream_length"] >= r["games"] and r["memory_bytes_per_game"] > data["record_bytes_mean"] / 2
        assert r["learner_records_per_s"] > 0 and r["learner_positions_per_s"] > 0
        assert r["learner_samples_per_s"] == pytest.approx(16 * r["learner_batches_per_s"], rel=0.01)


def test_bad_input_is_one_line_naming_the_problem():
    proc = run(*ARGS, "--send-batch", "65", check=False)
    assert proc.returncode == 2 and "--send-batch 65" in proc.stderr
    proc = run(*ARGS, "--preset", "small-4-3", check=False)
    assert proc.returncode == 2 and "give --actor-games-per-s for preset 'small-4-3'" in proc.stderr
    proc = run(*ARGS, "--preset", "small-4-3", "--actor-games-per-s", "2", check=False)
    assert proc.returncode == 2 and "no shipped model for preset 'small-4-3'" in proc.stderr
