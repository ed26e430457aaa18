"""Short real training runs of three and six players: local Ray, a real redis-server
on a free loopback port, tiny settings, star3 under ``fast`` (stage 1 from greedy) and ``star3``
(stage 1 from paranoid alpha-beta), star6 under ``star6`` (stage 1 from the race plan). Stage 1's
games and the self-play games reach Redis as records with result vectors; the learner trains the
value-vector head and writes a checkpoint that plays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import train_helpers

ray = pytest.importorskip("ray")
redis = pytest.importorskip("redis")

from replay_helpers import games_key  # noqa: E402

from learner.players import make_player  # noqa: E402
from ccengine.engines import new_state  # noqa: E402
from ccengine.rules import preset  # noqa: E402
from hopzero.config import load_config  # noqa: E402
from hopzero.rundir import RunDir  # noqa: E402
from hopzero.train import train  # noqa: E402
from learner.network_evaluator import load_network_evaluator  # noqa: E402
from learner.network_player import network_player  # noqa: E402,F401 (registers the mcts player)
from learner.records import decode_record  # noqa: E402


def stream_records(url: str, run_dir: Path) -> list:
    client = redis.Redis.from_url(url)
    try:
        return [decode_record(fields[b"data"]) for _sid, fields in client.xrange(games_key(run_dir))]
    finally:
        client.close()


@pytest.mark.parametrize(("name", "preset_name", "teacher", "extra"), [
    ("fast", "star3", "greedy", []),
    ("star3", "star3", "alphabeta:depth=3", []),
    # six players of a barely trained network wander for hundreds of plies: cut the training games
    # short (scored by distance) so that some reach the buffer within the test's minutes
    ("star6", "star6", "alphabeta:depth=2,opponents=still", ["selfplay.rules.max_plies=150"]),
])
def test_multi_player_configs_train_on_ray_and_redis(name, preset_name, teacher, extra, local_ray, redis_server,
                                                    tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    rules = preset(preset_name)
    n = rules.players
    config = load_config(name, preset_name=preset_name, seed=3, overrides=[
        *train_helpers.TINY, train_helpers.PROMOTE_ANY, "run.minutes=2", "stage1.games=16", "stage1.steps=20",
        "replay.min_positions=100", "replay.backend=redis", f"evaluation.gate.games={n + n % 2}",
        f"evaluation.greedy_games={n}", *extra])  # one set of N games each (the gate's count is even)
    assert config.training_rules().adjudicate == "distance"  # the adjudication serves N players too
    assert config.stage1.teacher == teacher
    summary = train(config, run_dir="run", redis_url=redis_server.url, out=open("/dev/null", "w"))

    records = stream_records(redis_server.url, run_dir)
    selfplay = [r for r in records if r.model_version >= 0]
    assert selfplay, "no self-play game reached Redis"
    for rec in records:
        assert rec.rules["players"] == n and rec.pieces.shape[1:] == (n, 10)
        assert rec.scores.shape == (n,) and abs(float(rec.scores.sum()) - 1.0) < 1e-5
        assert rec.root_shares.shape == (rec.num_positions, n)
    assert set(np.unique(np.concatenate([r.to_move for r in selfplay]))) == set(range(n))

    checkpoints = sorted((run_dir / "checkpoints").glob("checkpoint-*.pt"))
    assert checkpoints, "no checkpoint"
    evaluations = RunDir(run_dir).read_jsonl("evaluations.jsonl")
    gates = [e for e in evaluations if e["kind"] == "gate"]
    assert gates and all(e["players"] == n and e["games"] == n for e in gates), "no N-player gate was played"
    assert summary["best_version"] > 0, "the N-player gate promoted nothing"
    measured = [e for e in evaluations if e["kind"] == "greedy"]
    assert measured and measured[0]["games"] == n and "win_rate" in measured[0], "not measured against greedy"
    evaluator = load_network_evaluator(rules, checkpoints[-1], backend="eager")
    assert evaluator.inference.config.value_outputs == n
    player = make_player(f"mcts:model={checkpoints[-1]},sims=8", rules, 1)
    state = new_state(rules)
    for _ in range(4):
        move = player.select(state)
        assert move in state.legal_moves()
        state.play(move)
