"""Placement on a real multi-node Ray cluster, and a run that survives a node leaving.

The unit tests check ``plan_placement``'s arithmetic. The cluster test starts three Ray nodes
on this machine as separate ``ray start --block`` processes (tests/ray_nodes.py), a real
``redis-server``, and ``hopzero train --ray-address ... --redis-url ...`` as a subprocess, the
way a driver joins a cluster:

    head  1 CPU                        the driver's node: evaluator, registry
    w1    2 CPUs + hopzero_learner     the learner and a self-play actor
    w2    2 CPUs                       a self-play actor; stopped in the middle of the run

It checks through Ray's state API where each component runs, then stops w2 the way a machine
leaves (SIGTERM to its ``ray start``: Ray drains it and ends its processes) and checks that its
actor comes back on w1 and that the moved actor's games reach Redis again, then stops the driver
with Ctrl-C and checks its summary. On one machine all nodes share the filesystem, so this test
says nothing about where files are written (see the deploy docs for that).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis
import train_helpers
from ray_nodes import LocalCluster, RayNode, cluster_env, wait_for
from replay_helpers import games_key

from hopzero.config import load_config
from hopzero.redis_server import LocalRedis
from hopzero.rundir import RunDir
from hopzero.train import LEARNER_RESOURCE, plan_placement
from learner.records import decode_record
from learner.replay.redis_url import PASSWORD_ENV

# -- plan_placement ------------------------------------------------------------------------------


def _config(*overrides: str):
    return load_config("demo", preset_name="cc49", overrides=list(overrides), seed=1)


def test_a_small_box_gets_fractional_cpus_and_an_unpinned_learner():
    place = plan_placement(_config("selfplay.actors=4"), cpus=2, gpus=0, nodes=[{"CPU": 2}])
    assert (place.learner_cpus, place.evaluator_cpus, place.learner_gpus) == (0.5, 0.5, 0.0)
    assert place.actors == 4 and place.actor_cpus == 0.25, "four actors share the one CPU left"
    assert place.learner_resources == {}


def test_the_learner_is_pinned_by_a_gpu_or_the_learner_resource_and_then_takes_no_cpu_slot():
    with_gpu = plan_placement(_config(), cpus=32, gpus=1, nodes=[{"CPU": 16}, {"CPU": 16, "GPU": 1}])
    assert (with_gpu.learner_gpus, with_gpu.learner_cpus, with_gpu.learner_resources) == (1.0, 0.0, {})
    marked = plan_placement(_config(), cpus=32, gpus=0, nodes=[{"CPU": 16}, {"CPU": 16, LEARNER_RESOURCE: 1}])
    assert (marked.learner_gpus, marked.learner_cpus) == (0.0, 0.0)
    assert marked.learner_resources == {LEARNER_RESOURCE: 1.0}
    # The learner's core is still kept out of the actors' count: 32 - 1 (learner) - 1 (evaluator).
    assert marked.actors == with_gpu.actors == 30


def test_the_marked_node_decides_whether_the_learner_asks_for_a_gpu():
    gpu_there = plan_placement(_config(), cpus=24, gpus=1,
                               nodes=[{"CPU": 16}, {"CPU": 8, "GPU": 1, LEARNER_RESOURCE: 1}])
    assert (gpu_there.learner_gpus, gpu_there.learner_resources) == (1.0, {LEARNER_RESOURCE: 1.0})
    # A GPU on another node: asking for both would fit nowhere, so the marked node wins, on CPU.
    gpu_elsewhere = plan_placement(_config(), cpus=24, gpus=1,
                                   nodes=[{"CPU": 8, "GPU": 1}, {"CPU": 16, LEARNER_RESOURCE: 1}])
    assert (gpu_elsewhere.learner_gpus, gpu_elsewhere.learner_resources) == (0.0, {LEARNER_RESOURCE: 1.0})


def test_on_a_cluster_actors_keep_their_configured_cpus_and_wait_for_nodes():
    place = plan_placement(_config("selfplay.actors=100"), cpus=16, gpus=0, nodes=[{"CPU": 16}])
    assert place.actors == 100 and place.actor_cpus == 1.0, "an autoscaler adds nodes for the ones that wait"
    auto = plan_placement(_config(), cpus=16, gpus=0, nodes=[{"CPU": 16}])
    assert auto.actors == 14 and auto.actor_cpus == 1.0, "without a count: as many as the cluster holds now"


def test_the_summary_needs_no_file_from_the_evaluators_node(tmp_path):
    """Without a shared filesystem evaluations.jsonl may be on another node: the evaluator's stats,
    which every snapshot carries, give the summary its measurement against greedy."""
    from hopzero.train import _summary

    measured = {"kind": "greedy", "version": 120, "score": 0.75, "wins": 3, "draws": 0, "losses": 1, "games": 4,
                "simulations": 6}
    snap = {"selfplay": {"games": 10}, "learner": {"steps": 130}, "evaluator": {"vs_greedy": measured},
            "registry": {"best_version": -1, "promotions": 1}}
    summary = _summary(_config(), RunDir(tmp_path), snap, 60.0, False, [])
    assert summary["vs_greedy"] == measured and summary["best_version"] == 120
    assert "score 75.0% against greedy" in summary["text"]


def test_self_play_totals_survive_a_restarted_or_silent_actor():
    from hopzero.train import _ActorCounts

    counts = _ActorCounts(2)
    assert counts.update([{"games": 5, "positions": 50, "simulations": 500}, {"games": 3}])["games"] == 8
    # Actor 1 does not answer in time: its last counts stand.
    assert counts.update([{"games": 6, "positions": 60, "simulations": 600}, {}])["games"] == 9
    # Actor 0 was restarted and counts from zero again: its first life's counts are kept.
    totals = counts.update([{"games": 1, "positions": 10, "simulations": 100}, {"games": 4}])
    assert totals == {"games": 11, "positions": 70, "simulations": 700}


# -- the cluster -------------------------------------------------------------------------------

needs_cluster = pytest.mark.skipif(
    not Path("/proc").is_dir() or shutil.which("redis-server") is None,
    reason="needs Linux (/proc) and redis-server",
)

TINY = [
    *train_helpers.TINY,
    "selfplay.actors=2",
    "run.minutes=8",  # a cap only: the test stops the run with Ctrl-C once it has seen enough
]


@pytest.fixture
def cluster():
    # Not tmp_path: Ray's Unix socket paths below the root must stay under 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="hzmn-", dir="/tmp"))
    local = LocalCluster(root)
    try:
        yield local
    finally:
        survivors = local.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    assert not survivors, f"processes of the test cluster survived its shutdown: {survivors}"


def _hopzero() -> list[str]:
    beside = Path(sys.executable).parent / "hopzero"
    return [str(beside)] if beside.is_file() else [sys.executable, "-m", "hopzero.cli"]


def _start_driver(cluster: LocalCluster, server: LocalRedis, run_dir: Path) -> subprocess.Popen[bytes]:
    """``hopzero train`` joining the cluster, as on a real one (the Redis password in its
    environment, not its command line); its output goes to files beside the run."""
    args = [*_hopzero(), "train", "--config", "demo", "--preset", "cc49", "--ray-address", cluster.address,
            "--redis-url", server.address, "--seed", "1", "--run-dir", str(run_dir), "--json"]
    for setting in TINY:
        args += ["--set", setting]
    env = {**cluster_env(), PASSWORD_ENV: server.password()}
    with open(run_dir.parent / "driver.out", "wb") as out, open(run_dir.parent / "driver.err", "wb") as err:
        return subprocess.Popen(args, cwd=cluster.root, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)


def _games_by_actor(url: str, stream: str, after: str = "-") -> Counter[str]:
    """Games in the Redis stream after stream id ``after`` (exclusive), by the actor that played them."""
    client = redis.Redis.from_url(url)
    try:
        start = f"({after}" if after != "-" else "-"
        return Counter(decode_record(fields[b"data"]).actor for _, fields in client.xrange(stream, start, "+"))
    finally:
        client.close()


def _last_stream_id(url: str, stream: str) -> str:
    client = redis.Redis.from_url(url)
    try:
        last = client.xrevrange(stream, "+", "-", count=1)
        return last[0][0].decode() if last else "-"
    finally:
        client.close()


def _placed(cluster: LocalCluster, run_id: str, actors: int) -> dict[str, Any] | None:
    """The run's alive actors by name, once its learner, evaluator and all actors are alive."""
    alive = {a.name: a for a in cluster.alive_actors() if (a.name or "").startswith(run_id)}
    wanted = [f"{run_id}-learner", f"{run_id}-evaluator", *(f"{run_id}-actor-{i}" for i in range(actors))]
    return alive if all(name in alive for name in wanted) else None


def _snapshots(run_dir: Path) -> list[dict]:
    return RunDir(run_dir).read_jsonl("metrics.jsonl")


def _driver_output(run_dir: Path) -> str:
    return "".join((run_dir.parent / name).read_text(errors="replace")[-4000:] for name in ("driver.out", "driver.err"))


@needs_cluster
def test_components_are_placed_by_resources_and_the_run_survives_a_node_leaving(cluster, redis_server, tmp_path):
    head = cluster.start_head(num_cpus=1)
    w1 = cluster.add_worker("w1", num_cpus=2, resources={LEARNER_RESOURCE: 1})
    w2 = cluster.add_worker("w2", num_cpus=2)
    cluster.wait_for_nodes(3, timeout=180)
    ids = {node.name: node.node_id() for node in (head, w1, w2)}
    assert all(ids.values()), f"a raylet without a node id: {ids}"

    run_dir = tmp_path / "run"
    driver = _start_driver(cluster, redis_server, run_dir)
    try:
        _check_placement_and_failover(cluster, redis_server.url, run_dir, driver, ids, w2)
        driver.send_signal(signal.SIGINT)  # Ctrl-C: the driver's clean stop, which prints the summary
        driver.wait(timeout=180)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    output = _driver_output(run_dir)
    assert driver.returncode == 0, output
    summary = json.loads((run_dir.parent / "driver.out").read_text().strip().splitlines()[-1])
    assert summary["interrupted"] is True and summary["elapsed_s"] > 0, summary
    assert "Stopped after" in output and "self-play games" in output, output
    assert _snapshots(run_dir)[-1]["selfplay"]["actors"] == 2, "the final snapshot did not hear from both actors"


def _check_placement_and_failover(cluster: LocalCluster, url: str, run_dir: Path, driver: subprocess.Popen[bytes],
                                  ids: dict[str, str | None], leaving: RayNode) -> None:
    def driver_alive() -> None:
        assert driver.poll() is None, f"the driver exited:\n{_driver_output(run_dir)}"

    wait_for(lambda: driver_alive() or (run_dir / "run.json").is_file(), 120, "the driver to start the run")
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    stream = games_key(run_dir)
    alive = wait_for(lambda: driver_alive() or _placed(cluster, run_id, 2), 180, "the run's actors")

    # Where Ray put them: by the learner resource, on the driver's node, spread over the workers.
    learner = alive[f"{run_id}-learner"]
    assert learner.node_id == ids["w1"], "the learner is not on the node that offers hopzero_learner"
    assert learner.required_resources.get(LEARNER_RESOURCE) == 1.0
    assert alive[f"{run_id}-evaluator"].node_id == ids["head"], "the evaluator is not on the driver's node"
    registry = [a for a in cluster.alive_actors() if a.class_name == "ModelRegistry"]
    assert [a.node_id for a in registry] == [ids["head"]], "the registry is not on the driver's node"
    players = {name: alive[f"{run_id}-actor-{i}"] for i, name in enumerate(("actor-0", "actor-1"))}
    assert {a.node_id for a in players.values()} == {ids["w1"], ids["w2"]}, "SPREAD did not use both workers"

    # Both actors' games reach Redis from their nodes.
    wait_for(lambda: driver_alive() or set(players) <= set(_games_by_actor(url, stream)), 180, "games from both actors")

    # w2 leaves; its actor must come back on w1 and play there.
    moving = next(name for name, a in players.items() if a.node_id == ids["w2"])
    survivors = leaving.stop()
    assert not survivors and not leaving.running(), f"w2 did not stop: {survivors}"
    cutoff = _last_stream_id(url, stream)  # w2's processes are gone: later games come from elsewhere

    def moved() -> object:
        actor = _placed(cluster, run_id, 2)
        return actor and actor[f"{run_id}-{moving}"]

    back = wait_for(lambda: driver_alive() or moved(), 180, f"{moving} to come back on another node")
    assert back.node_id == ids["w1"] and back.num_restarts >= 1, back
    wait_for(lambda: driver_alive() or _games_by_actor(url, stream, cutoff)[moving] > 0, 240,
             f"games from {moving} after it moved")
    wait_for(lambda: driver_alive() or (_snapshots(run_dir) and _snapshots(run_dir)[-1]["restarts"] >= 1), 60,
             "the driver to start the moved actor's loop again")
