"""The real training loop: local Ray, a real redis-server on a free loopback port, tiny settings.

One run per test, each about a minute: self-play actors, learner, evaluator and driver exactly
as ``hopzero train`` starts them, with a gate threshold low enough that a promotion happens
(the gate's arithmetic is tested in test_gating.py; here the mechanism is under test).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import train_helpers

ray = pytest.importorskip("ray")
redis = pytest.importorskip("redis")

from replay_helpers import games_key  # noqa: E402

from evaluator.promotion import promotion_history  # noqa: E402
from hopzero.config import load_config  # noqa: E402
from hopzero.rundir import RunDir  # noqa: E402
from hopzero.train import train  # noqa: E402
from learner.records import decode_record  # noqa: E402
from plumbing.run_files import read_best  # noqa: E402

TINY = [*train_helpers.TINY, train_helpers.PROMOTE_ANY]


def tiny_config(minutes: float, *extra: str):
    return load_config("demo", preset_name="cc49", overrides=[*TINY, f"run.minutes={minutes}", *extra], seed=3)


def stream_length(url: str, run_dir: Path) -> int:
    client = redis.Redis.from_url(url)
    try:
        return int(client.xlen(games_key(run_dir)))
    except redis.ResponseError:
        return 0
    finally:
        client.close()


def first_record_rules(url: str, run_dir: Path) -> dict:
    client = redis.Redis.from_url(url)
    try:
        (_sid, fields), = client.xrange(games_key(run_dir), count=1)
        return decode_record(fields[b"data"]).rules
    finally:
        client.close()


def snapshots(run_dir: Path) -> list[dict]:
    return RunDir(run_dir).read_jsonl("metrics.jsonl")


def registry_and_store(name: str):
    """A model registry and a memory replay store, named ``NAME-registry`` and ``NAME-replay``."""
    from hopzero.registry import ModelRegistry
    from learner.replay import MemoryReplay

    registry = ray.remote(ModelRegistry).options(name=f"{name}-registry").remote()
    store = ray.remote(MemoryReplay).options(name=f"{name}-replay").remote(name)
    return registry, store


def learner_actor(config, name: str, run_dir: Path, **options):
    """A learner actor on :func:`registry_and_store`'s pair for ``name`` (run id ``name``)."""
    from learner.replay import ReplayLink
    from learner.service import LearnerService

    return ray.remote(LearnerService).options(max_concurrency=2).remote(
        rules=config.training_rules(), network=config.network, learner=config.learner,
        replay_config=config.replay, candidate_every_steps=config.evaluation.candidate_every_steps,
        seed=config.seed, run_config=config.to_dict(), config_hash=config.hash(), run_dir=str(run_dir),
        replay=ReplayLink("memory", name, store=f"{name}-replay"), registry=f"{name}-registry", **options,
    )


def test_the_loop_runs_end_to_end_on_redis(local_ray, redis_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative run directory, as `hopzero train` gets by default
    run_dir = tmp_path / "run"
    # Training games under their own rules (selfplay.rules): the learner must train on them.
    config = tiny_config(1.2, "replay.backend=redis", "selfplay.rules.adjudicate=distance",
                         "selfplay.rules.max_plies=90")
    summary = train(config, run_dir="run", redis_url=redis_server.url, out=open("/dev/null", "w"))

    assert stream_length(redis_server.url, run_dir) > 0, "no game reached Redis"
    rules = first_record_rules(redis_server.url, run_dir)
    assert (rules["adjudicate"], rules["max_plies"]) == ("distance", 90), "games not played under selfplay.rules"
    last = snapshots(run_dir)[-1]
    assert last["learner"]["steps"] > config.stage1.steps, "the learner did not train past stage 1"
    assert list((run_dir / "checkpoints").glob("checkpoint-*.pt")), "no checkpoint"
    evaluations = RunDir(run_dir).read_jsonl("evaluations.jsonl")
    gates = [e for e in evaluations if e["kind"] == "gate"]
    assert gates and all(e["decision"] in ("promote", "reject") for e in gates), "the evaluator decided nothing"
    history = promotion_history(run_dir)
    assert len(history) >= 2, "stage 1's model and at least one gated promotion"
    best = read_best(run_dir)
    assert best is not None and int(best.version) == max(int(p.version) for p in history)
    promoted = {int(p.version) for p in history[1:]}
    assert promoted & set(last["selfplay"]["model_versions"]), "the actors did not switch to a promoted model"
    assert summary["best_version"] == int(best.version)
    assert (run_dir / "plots" / "winrate.png").is_file()


def test_a_run_without_stage_1_starts_self_play_from_the_untrained_network(local_ray, tmp_path):
    """Tabula rasa: with stage 1 off, the untrained network is the first best model (v0), so
    self-play starts at once, and the learner trains on those games."""
    run_dir = tmp_path / "run"
    config = tiny_config(1.0, "stage1.enabled=false", "selfplay.rules.adjudicate=distance")
    train(config, run_dir=str(run_dir), out=open("/dev/null", "w"))

    history = promotion_history(run_dir)
    assert history and int(history[0].version) == 0, "the untrained network was not the first best"
    last = snapshots(run_dir)[-1]
    assert last["selfplay"]["games"] > 0, "self-play never started"
    assert last["learner"]["steps"] > 0, "the learner did not train on the self-play games"
    measured = [e for e in RunDir(run_dir).read_jsonl("evaluations.jsonl") if e["kind"] == "greedy"]
    assert measured and measured[0]["version"] == 0, "the starting point was not measured against greedy"


def _run_in_thread(config, run_dir, **kwargs):
    result: dict = {}

    def target():
        result["summary"] = train(config, run_dir=run_dir, out=open("/dev/null", "w"), **kwargs)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not (run_dir / "run.json").is_file():
        assert time.monotonic() < deadline, "train() did not start"
        time.sleep(0.2)
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    return thread, result, run_id


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1.0)
    raise AssertionError(f"timed out waiting for {what}")


def test_killed_actor_and_learner_are_restarted_and_redis_is_rejoined(local_ray, redis_server, tmp_path):
    run_dir = tmp_path / "run"
    config = tiny_config(2.0, "replay.backend=redis", "evaluation.gate.threshold=0.99")
    thread, result, run_id = _run_in_thread(config, run_dir, redis_url=redis_server.url)

    # A self-play actor killed: Ray restarts it and its games go on.
    _wait_for(lambda: snapshots(run_dir) and snapshots(run_dir)[-1]["selfplay"]["games"] > 150, 180, "self-play")
    ray.kill(ray.get_actor(f"{run_id}-actor-0"), no_restart=False)
    games_at_kill = snapshots(run_dir)[-1]["selfplay"]["games"]
    _wait_for(lambda: snapshots(run_dir)[-1]["restarts"] >= 1, 30, "the driver to restart the actor's loop")
    _wait_for(lambda: snapshots(run_dir)[-1]["selfplay"]["games"] > 0
              and snapshots(run_dir)[-1]["selfplay"]["stage"] == 2, 30, "the restarted actor to play")

    # The learner killed after a checkpoint: it resumes from it, not from step 0.
    ckpt_dir = run_dir / "checkpoints"
    _wait_for(lambda: list(ckpt_dir.glob("checkpoint-*.pt")), 60, "a checkpoint")
    checkpointed = max(int(p.stem.split("-")[1]) for p in ckpt_dir.glob("checkpoint-*.pt"))
    old_pid = snapshots(run_dir)[-1]["learner"]["pid"]
    ray.kill(ray.get_actor(f"{run_id}-learner"), no_restart=False)
    back = _wait_for(lambda: [s["learner"] for s in snapshots(run_dir)
                              if s["learner"].get("pid") not in (None, old_pid)], 90,
                     "the learner to come back in a new process")
    assert back[0]["steps"] >= checkpointed, "the learner did not resume from its checkpoint"
    _wait_for(lambda: snapshots(run_dir)[-1]["learner"].get("window", 0) > 0, 60, "the new learner to read Redis")

    # Redis restarted empty on the same port (no persistence): writers and the learner rejoin.
    port = redis_server.port
    redis_server.stop()
    time.sleep(2)
    redis_server.port = port
    redis_server.start()
    _wait_for(lambda: stream_length(redis_server.url, run_dir) > 0, 60, "games in the restarted Redis")
    _wait_for(lambda: snapshots(run_dir)[-1]["learner"].get("warmups", 0) >= 1, 60,
              "the learner to notice the empty buffer and warm up")

    thread.join(timeout=180)
    assert not thread.is_alive(), "train() did not finish"
    assert result["summary"]["interrupted"] is False
    assert snapshots(run_dir)[-1]["selfplay"]["games"] > games_at_kill


def test_a_learner_without_checkpoints_adopts_the_registrys_best(local_ray, tmp_path):
    """Its node replaced (checkpoints gone), a learner must not train stage 1 again and put a
    weaker network in as the best: it continues from the best model, in stage 2."""
    from learner.training import Trainer

    config = tiny_config(1.0)
    rules = config.training_rules()
    _, weights = Trainer(config.network.net_config(rules), config.learner, seed=9).export_weights()
    registry, store = registry_and_store("adopt")
    ray.get(registry.set_best.remote(700, weights))
    learner = learner_actor(config, "adopt", tmp_path, stage1_steps=config.stage1.steps)
    stats = ray.get(learner.stats.remote())
    assert (stats["stage"], stats["steps"]) == (2, 700)
    ray.get(learner.checkpoint.remote())
    assert [p.name for p in (tmp_path / "checkpoints").glob("checkpoint-*.pt")] == ["checkpoint-0000000700.pt"]
    for handle in (learner, store, registry):
        ray.kill(handle)


@pytest.mark.parametrize("keep", [False, True])
def test_stage_1_positions_leave_the_window_at_self_play_unless_kept(local_ray, tmp_path, keep):
    """At the switch to self-play the learner empties its window and skips stage-1 games from then
    on; with ``stage1.keep_window`` the stage-1 positions stay for self-play to push out."""
    import dataclasses

    from replay_helpers import random_game_record

    from learner.records import encode_record

    config = tiny_config(1.0)
    rules = config.training_rules()
    name = f"switch-{keep}"
    registry, store = registry_and_store(name)
    for seed in range(6):  # stage-1 games carry model version -1
        record = dataclasses.replace(random_game_record(rules, seed, run_id=name), model_version=-1)
        ray.get(store.add_encoded.remote(encode_record(record)))
    learner = learner_actor(config, name, tmp_path, stage1_steps=5, keep_stage1_window=keep)
    loop = learner.run.remote()
    try:
        deadline = time.monotonic() + 60
        while (stats := ray.get(learner.stats.remote()))["stage"] != 2:
            assert time.monotonic() < deadline, f"stage 1 did not end: {stats}"
            time.sleep(0.2)
        before = stats["window"]
        record = dataclasses.replace(random_game_record(rules, 99, run_id=name), model_version=-1)
        ray.get(store.add_encoded.remote(encode_record(record)))  # a stage-1 game still in flight
        time.sleep(1.0)
        after = ray.get(learner.stats.remote())
    finally:
        ray.get(learner.stop.remote())
        ray.get(loop)
    if keep:
        assert 0 < before < after["window"], "the stage-1 window was not kept"
    else:
        assert (before, after["window"]) == (0, 0), "stage-1 positions stayed in self-play's window"
        assert after["skipped"].get("stale") == 1, "the stage-1 game in flight was not skipped"
    for handle in (store, registry):
        ray.kill(handle)
