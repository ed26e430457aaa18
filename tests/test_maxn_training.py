"""A short real star3 training run (issue 16): local Ray, a real redis-server on a free loopback
port, tiny settings, under ``fast`` (stage 1 from greedy) and ``star3`` (stage 1 from paranoid
alpha-beta). Stage 1's games and the self-play games reach Redis as records with result vectors;
the learner trains the value-vector head and writes a checkpoint that plays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import train_helpers

ray = pytest.importorskip("ray")
redis = pytest.importorskip("redis")

from replay_helpers import games_key  # noqa: E402

from ccengine import make_player  # noqa: E402
from ccengine.engines import new_state  # noqa: E402
from ccengine.rules import preset  # noqa: E402
from hopzero.config import load_config  # noqa: E402
from hopzero.rundir import RunDir  # noqa: E402
from hopzero.train import train  # noqa: E402
from learner.network_evaluator import load_network_evaluator  # noqa: E402
from learner.network_player import network_player  # noqa: E402,F401 (registers the mcts player)
from learner.records import decode_record  # noqa: E402

STAR3 = preset("star3")


def stream_records(url: str, run_dir: Path) -> list:
    client = redis.Redis.from_url(url)
    try:
        return [decode_record(fields[b"data"]) for _sid, fields in client.xrange(games_key(run_dir))]
    finally:
        client.close()


@pytest.mark.parametrize("name", ["fast", "star3"])
def test_star3_trains_on_ray_and_redis(name, local_ray, redis_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    config = load_config(name, preset_name="star3", seed=3, overrides=[
        *train_helpers.TINY, train_helpers.PROMOTE_ANY, "run.minutes=2", "stage1.games=16", "stage1.steps=20",
        "replay.min_positions=100", "replay.backend=redis", "evaluation.gate.games=4",
        "evaluation.greedy_games=3"])  # one set of three games each
    assert config.training_rules().adjudicate == "distance"  # the adjudication serves three players too
    assert config.stage1.teacher == ("greedy" if name == "fast" else "alphabeta:depth=3")
    summary = train(config, run_dir="run", redis_url=redis_server.url, out=open("/dev/null", "w"))

    records = stream_records(redis_server.url, run_dir)
    selfplay = [r for r in records if r.model_version >= 0]
    assert selfplay, "no self-play game reached Redis"
    for rec in records:
        assert rec.schema == 3 and rec.rules["players"] == 3 and rec.pieces.shape[1:] == (3, 10)
        assert rec.scores.shape == (3,) and abs(float(rec.scores.sum()) - 1.0) < 1e-5
        assert rec.root_shares.shape == (rec.num_positions, 3)
    assert set(np.unique(np.concatenate([r.to_move for r in selfplay]))) == {0, 1, 2}

    checkpoints = sorted((run_dir / "checkpoints").glob("checkpoint-*.pt"))
    assert checkpoints, "no checkpoint"
    evaluations = RunDir(run_dir).read_jsonl("evaluations.jsonl")
    gates = [e for e in evaluations if e["kind"] == "gate"]
    assert gates and all(e["players"] == 3 and e["games"] == 3 for e in gates), "no N-player gate was played"
    assert summary["best_version"] > 0, "the N-player gate promoted nothing"
    measured = [e for e in evaluations if e["kind"] == "greedy"]
    assert measured and measured[0]["games"] == 3 and "win_rate" in measured[0], "not measured against greedy"
    evaluator = load_network_evaluator(STAR3, checkpoints[-1], backend="eager")
    assert evaluator.inference.config.value_outputs == 3
    player = make_player(f"mcts:model={checkpoints[-1]},sims=8", STAR3, 1)
    state = new_state(STAR3)
    for _ in range(4):
        move = player.select(state)
        assert move in state.legal_moves()
        state.play(move)
