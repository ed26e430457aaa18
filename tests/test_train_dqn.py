"""``hopzero train --config dqn`` end to end on a real local Ray, tiny settings, well under a minute
of training: DQN actors play against greedy and send whole games to the embedded replay buffer,
the learner trains double DQN from them, every candidate becomes the best without a gate, the
actors act with it, the evaluator measures it against greedy with the ``dqn`` player, and the run
directory's best model plays as ``dqn:model=RUN_DIR``."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

from ccengine.players import PlayerSpecError  # noqa: E402
from learner.players import make_player
from evaluator.arena import play_match  # noqa: E402
from evaluator.promotion import promotion_history  # noqa: E402
from hopzero.config import load_config  # noqa: E402
from hopzero.rundir import RunDir  # noqa: E402
from hopzero.train import train  # noqa: E402
from learner.checkpoint import latest_checkpoint  # noqa: E402
from learner.model_files import read_model_file  # noqa: E402
from plumbing.run_files import read_best  # noqa: E402

TINY_DQN = [
    "network.size=tiny",
    "selfplay.games_per_actor=8",
    "replay.min_positions=300",
    "replay.error_buffer=512",
    "learner.batch_size=32",
    "learner.checkpoint_every_steps=50",
    "evaluation.candidate_every_steps=50",
    "evaluation.greedy_games=2",
    "evaluation.parallel_games=2",
    "dqn.epsilon_decay_steps=200",
    "dqn.target_update_steps=20",
    "run.progress_every_s=2",
]


def test_dqn_trains_on_the_system(local_ray, tmp_path):
    run_dir = tmp_path / "run"
    config = load_config("dqn", overrides=[*TINY_DQN, "run.minutes=0.45"], seed=5)
    summary = train(config, run_dir=run_dir, out=open("/dev/null", "w"))

    last = RunDir(run_dir).read_jsonl("metrics.jsonl")[-1]
    assert last["learner"]["steps"] >= 100, last["learner"]
    assert "huber" in last["learner"]["losses"] and not last["learner"]["skipped"].get("foreign")
    assert last["selfplay"]["epsilon"] < 1.0 and sum(last["selfplay"]["results"]) > 0
    assert last["selfplay"]["waited_s"] > 0, "the actors never waited for the learner's ratio limiter"
    history = promotion_history(run_dir)
    assert len(history) >= 2, "every candidate becomes the best in a DQN run"
    assert set(last["selfplay"]["model_versions"]) & {int(p.version) for p in history}, "actors kept no new best"
    greedy = [e for e in RunDir(run_dir).read_jsonl("evaluations.jsonl") if e["kind"] == "greedy"]
    assert greedy and all(e["player"] == "dqn" and e["games"] == 2 for e in greedy)
    assert not [e for e in RunDir(run_dir).read_jsonl("evaluations.jsonl") if e["kind"] == "gate"]
    assert summary["vs_greedy"] is not None

    best = read_best(run_dir)
    state, meta = read_model_file(best.checkpoint(run_dir))
    assert meta["algo"] == "dqn" and meta["encoding"] == "paper"
    checkpoint = latest_checkpoint(run_dir / "checkpoints")
    assert checkpoint is not None and "dqn_target" in checkpoint.extra
    assert checkpoint.extra["config"]["algo"] == "dqn"

    rules = config.game_rules()
    player = make_player(f"dqn:model={run_dir}", rules)
    match = play_match(rules, player, "greedy", games=2, seed=1)
    assert match.games == 2
    with pytest.raises(PlayerSpecError, match="dqn:model"):
        make_player(f"mcts:model={run_dir},sims=2", rules)
