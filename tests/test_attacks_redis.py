"""Attacks on the Redis replay and the processes around it, replayed against real components.

Each test runs ``hopzero train`` as a person does (a subprocess on the local Ray it starts, a real
``redis-server``), or a real learner on a real Redis, and checks what the reliability issue asked:

- a second run on the same Redis gets its own key prefix and trains; two runs on one prefix are
  refused at start, in one line, before anything starts;
- the local ``redis-server`` of a killed driver is reused by the next driver, never doubled, its
  data intact, behind a password that is never printed;
- a local Ray listens on loopback only, and Ray's object-store warning stays off the screen;
- records kept from the learner (malformed, foreign, future schema) are counted where a person
  looks: the learner's stats and its Prometheus metric.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgpack
import pytest
from test_cli import hopzero_command
from train_helpers import TINY

from replay_helpers import games_key, random_game_record

redis = pytest.importorskip("redis")
ray = pytest.importorskip("ray")

from ccengine import preset  # noqa: E402
from hopzero.redis_server import LocalRedis  # noqa: E402
from learner.records import SCHEMA, encode_record  # noqa: E402

needs_linux_and_redis = pytest.mark.skipif(
    not Path("/proc/self/stat").is_file() or shutil.which("redis-server") is None or shutil.which("ss") is None,
    reason="needs Linux (/proc), redis-server and ss",
)
pytestmark = needs_linux_and_redis

OBJECT_STORE_WARNING = "constructor arguments in the object store"


# -- helpers ---------------------------------------------------------------------------------------


def train_args(run_dir: Path, *settings: str) -> list[str]:
    """``hopzero train`` with the tiny configuration the system tests share."""
    sets = [arg for item in [*TINY, *settings] for arg in ("--set", item)]
    return hopzero_command() + ["train", "--config", "demo", "--seed", "1", "--run-dir", str(run_dir), *sets]


def start_train(run_dir: Path, *settings: str, extra: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """A driver in the background; its screen goes to ``<run_dir>.out``."""
    out = open(f"{run_dir}.out", "w")  # noqa: SIM115 - closed with the process (by the OS)
    return subprocess.Popen([*train_args(run_dir, *settings), *extra], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, cwd=run_dir.parent)


def screen(run_dir: Path) -> str:
    return Path(f"{run_dir}.out").read_text(errors="replace")


def run_train(
    run_dir: Path, *settings: str, extra: tuple[str, ...] = (), timeout: float = 420
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*train_args(run_dir, *settings), *extra], capture_output=True, text=True,
                          timeout=timeout, cwd=run_dir.parent)


def wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen[str] | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the driver exited ({proc.returncode}) while waiting for {what}")
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def snapshots(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().endswith("}")]


def run_id_of(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["run_id"]


def local_redis_client(run_dir: Path) -> redis.Redis:
    """A client of the server ``hopzero train`` started for ``run_dir`` (its port and password files)."""
    state = json.loads((run_dir / "redis" / "server.json").read_text())
    password = (run_dir / "redis" / "password").read_text().strip()
    return redis.Redis(host="127.0.0.1", port=state["port"], password=password, socket_timeout=5)


def stream_ids(client: redis.Redis, key: str) -> list[bytes]:
    return [sid for sid, _ in client.xrange(key)]


def redis_servers_serving(directory: Path) -> list[int]:
    """Pids of the live redis-server processes whose data directory (their cwd) is ``directory``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            zombie = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
            if zombie or (entry / "comm").read_text().strip() != "redis-server":
                continue
            if Path(os.readlink(entry / "cwd")).resolve() == directory.resolve():
                found.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours to look at
    return found


def descendants(root: int) -> set[int]:
    """``root`` and every process below it (from /proc's parent pids)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, []))
    return out


def listening_sockets(pids: set[int]) -> list[tuple[str, str]]:
    """``(local address, process)`` of every TCP socket in LISTEN state owned by one of ``pids``."""
    lines = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout.splitlines()
    out = []
    for line in lines:
        fields = line.split()
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            out.append((fields[3], line[line.find("users:"):]))
    return out


def is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "::1", "::ffff:127.0.0.1") or host.startswith("127.")


@pytest.fixture
def shared_redis(tmp_path):
    """A Redis that several runs are pointed at (``--redis-url``), as a team's Redis would be."""
    server = LocalRedis(tmp_path / "shared-redis", persistent=False)
    server.start()
    yield server
    server.stop()


# -- 1. a second run on the same Redis ---------------------------------------------------------------


def test_two_run_directories_on_one_redis_both_train(shared_redis, tmp_path):
    """The attack: a new run directory against a Redis holding another run's stream. Before, the
    second run's actors failed on every game (ForeignRunError) and its learner made 0 steps."""
    done = []
    for name in ("first", "second"):
        run_dir = tmp_path / name
        proc = run_train(run_dir, "run.minutes=3", "run.max_learner_steps=1", extra=("--redis-url", shared_redis.url))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert snapshots(run_dir)[-1]["learner"]["steps"] >= 1, f"the {name} run's learner never trained"
        done.append(run_dir)
    client = redis.Redis.from_url(shared_redis.url)
    try:
        keys = [games_key(d) for d in done]
        assert keys[0] != keys[1]
        for run_dir, key in zip(done, keys):
            assert client.xlen(key) > 0, f"no game of {run_dir.name} in {key}"
            assert client.hget(key.rsplit(":", 1)[0] + ":run", "run_id").decode() == run_id_of(run_dir)
    finally:
        client.close()


def test_a_run_on_another_runs_key_prefix_is_refused_before_anything_starts(shared_redis, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    url = ("--redis-url", shared_redis.url)
    ran = run_train(first, "run.minutes=0.05", "replay.key_prefix=team:shared", extra=url)
    assert ran.returncode == 0, ran.stdout + ran.stderr

    refused = run_train(second, "replay.key_prefix=team:shared", extra=url, timeout=120)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith("hopzero train: error: Redis key prefix 'team:shared' belongs to run "
                               f"'{run_id_of(first)}', not to run '{run_id_of(second)}'"), lines[0]
    assert "replay.key_prefix" in lines[0]
    assert refused.stdout == "", "the refused run started something"
    assert not (second / "metrics.jsonl").exists()
    password = shared_redis.password()
    assert password not in refused.stderr and "***" in lines[0], "the Redis password was printed"

    # The owner resumes on its prefix as before.
    again = run_train(first, "run.minutes=0.05", "replay.key_prefix=team:shared", extra=url)
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_bad_key_prefix_or_an_unreachable_redis_is_one_line_and_starts_nothing(tmp_path):
    bad = run_train(tmp_path / "bad", "replay.key_prefix=two words", extra=("--redis-url", "redis://127.0.0.1:1/0"),
                    timeout=120)
    assert bad.returncode == 2 and bad.stdout == "", bad.stdout + bad.stderr
    assert bad.stderr.strip() == ("hopzero train: error: replay.key_prefix: must be empty or 1-200 characters of "
                                  "A-Z a-z 0-9 _ . : -, got 'two words'"), bad.stderr
    assert not (tmp_path / "bad").exists()  # refused as the config loads, before the run directory

    from hopzero.redis_server import free_port
    from hopzero.train import RunStartError, _claim_prefix

    url = f"redis://:s3cret@127.0.0.1:{free_port()}/0"  # nothing listens there
    with pytest.raises(RunStartError, match=r"cannot reach Redis at redis://:\*\*\*@127\.0\.0\.1:\d+/0") as caught:
        _claim_prefix(url, "p", "run-a", wait_s=0)
    assert "s3cret" not in str(caught.value)


# -- 2. the local redis-server of a killed driver ------------------------------------------------


def test_a_killed_drivers_redis_server_is_reused_not_doubled_and_its_data_kept(tmp_path):
    redis_dir = tmp_path / "run" / "redis"
    try:
        _kill_the_driver_and_run_again(tmp_path / "run", redis_dir)
    finally:
        for orphan in redis_servers_serving(redis_dir):  # a failed test leaves no server behind
            os.kill(orphan, signal.SIGTERM)


def _kill_the_driver_and_run_again(run_dir: Path, redis_dir: Path) -> None:
    driver = start_train(run_dir, "replay.backend=redis", "run.minutes=4")
    try:
        wait_for(lambda: (redis_dir / "server.json").is_file() and (run_dir / "run.json").is_file(), 120,
                 "the driver's redis-server", driver)
        key = games_key(run_dir)
        client = local_redis_client(run_dir)
        wait_for(lambda: client.xlen(key) >= 20, 240, "games in the local Redis", driver)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    before = stream_ids(client, key)
    client.close()
    assert redis_servers_serving(redis_dir) == [json.loads((redis_dir / "server.json").read_text())["pid"]], \
        "the killed driver's server should still serve its directory"
    assert (redis_dir / "password").stat().st_mode & 0o777 == 0o600

    rerun = start_train(run_dir, "replay.backend=redis", "run.minutes=0.3")
    try:
        wait_for(lambda: "reusing the redis-server" in screen(run_dir), 120, "the rerun to take over the server",
                 rerun)
        assert len(redis_servers_serving(redis_dir)) == 1, "two servers on one directory"
        assert rerun.wait(timeout=300) == 0, screen(run_dir)
    finally:
        if rerun.poll() is None:
            rerun.kill()
    output = screen(run_dir)
    assert (redis_dir / "password").read_text().strip() not in output, "the password was printed"
    assert OBJECT_STORE_WARNING not in output, output
    assert redis_servers_serving(redis_dir) == [], "the rerun did not stop the server it took over"

    # Data intact: the append-only file holds every game the killed driver's run had written.
    server = LocalRedis(redis_dir)
    server.start()
    try:
        client = redis.Redis.from_url(server.url)
        after = stream_ids(client, key)
        client.close()
    finally:
        server.stop()
    assert after[: len(before)] == before, "games written before the kill were lost"
    assert len(after) > len(before), "the rerun wrote no games"


HOLD_SERVER = """
import sys, time
from hopzero.redis_server import LocalRedis
server = LocalRedis(sys.argv[1], persistent=False)
server.start()
print(server.pid, flush=True)
time.sleep(600)
"""


def test_a_directory_is_never_served_twice_and_a_live_drivers_server_is_not_taken(tmp_path):
    """The lock, without Ray: a stand-in driver holds the directory's server; a second start is
    refused while it lives, and takes the server over (same pid, same data) once it is killed."""
    from hopzero.redis_server import RedisDirectoryBusy

    directory = tmp_path / "redis"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_SERVER, str(directory)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(holder.stdout.readline())
        port = json.loads((directory / "server.json").read_text())["port"]
        password = (directory / "password").read_text().strip()
        redis.Redis(host="127.0.0.1", port=port, password=password).set("kept", "yes")
        with pytest.raises(RedisDirectoryBusy, match=f"driver pid {holder.pid}, which is still running"):
            LocalRedis(directory, persistent=False).start(timeout=2)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert redis_servers_serving(directory) == [pid]
    server = LocalRedis(directory, persistent=False)
    try:
        server.start()
        assert (server.reused, server.pid) == (True, pid)
        assert redis.Redis.from_url(server.url).get("kept") == b"yes"
        anonymous = redis.Redis(host="127.0.0.1", port=server.port)
        with pytest.raises(redis.AuthenticationError):
            anonymous.get("kept")
        anonymous.close()
        server.stop()
        assert redis_servers_serving(directory) == [], "stop() left the server it took over running"
    finally:
        for orphan in redis_servers_serving(directory):  # a failed test leaves no server behind
            os.kill(orphan, signal.SIGTERM)
    assert (directory / "password").stat().st_mode & 0o777 == 0o600


# -- 3 and 4. a local Ray on loopback, and no object-store warning ---------------------------------


def test_a_local_ray_listens_on_loopback_only_and_prints_no_object_store_warning(tmp_path):
    run_dir = tmp_path / "run"
    driver = start_train(run_dir, "run.minutes=0.4")
    try:
        wait_for(lambda: snapshots(run_dir) and snapshots(run_dir)[-1]["selfplay"]["actors"] > 0
                 and snapshots(run_dir)[-1]["learner"], 180, "the run's components to report", driver)
        sockets = listening_sockets(descendants(driver.pid))
        assert driver.wait(timeout=300) == 0, screen(run_dir)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert any("raylet" in owner for _, owner in sockets), f"Ray's sockets were not found: {sockets}"
    exposed = [(address, owner) for address, owner in sockets if not is_loopback(address)]
    assert not exposed, f"listening beyond loopback: {exposed}"
    assert OBJECT_STORE_WARNING not in screen(run_dir), screen(run_dir)


# -- 5. skipped records where a person looks ---------------------------------------------------------


@pytest.fixture
def local_ray(tmp_path):
    from hopzero.train import neutral_directory

    assert not ray.is_initialized()
    with neutral_directory(tmp_path):
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def future_schema(data: bytes) -> bytes:
    doc = msgpack.unpackb(data, raw=False)
    doc["schema"] = SCHEMA + 1
    return msgpack.packb(doc, use_bin_type=True)


def test_skipped_records_are_counted_in_the_learners_stats_and_prometheus(shared_redis, local_ray, tmp_path):
    import prometheus_client

    from hopzero.config import load_config
    from hopzero.registry import ModelRegistry
    from learner.replay import ReplayLink
    from learner.replay.redis_stream import RedisReplay
    from learner.service import LearnerService

    config = load_config("demo", preset_name="cc49", overrides=list(TINY), seed=3)
    prefix = config.replay.key_prefix_for("skip-run")
    writer = RedisReplay(shared_redis.url, run_id="skip-run", prefix=prefix)
    writer.claim()
    rules = preset("cc49")
    good = encode_record(random_game_record(rules, 1, run_id="skip-run", max_plies=20))
    foreign = encode_record(random_game_record(rules, 2, run_id="another-run", max_plies=20))
    for payload in (b"garbage", good, foreign, future_schema(good), b"\x81\xa5magic\xa3xyz"):
        writer.client.xadd(f"{prefix}:games", {"data": payload})

    registry = ray.remote(ModelRegistry).options(name="skip-registry").remote()
    learner = LearnerService(
        rules=config.training_rules(), network=config.network, learner=config.learner, replay_config=config.replay,
        stage1_steps=config.stage1.steps, candidate_every_steps=config.evaluation.candidate_every_steps,
        seed=config.seed, run_config=config.to_dict(), config_hash=config.hash(), run_dir=str(tmp_path),
        replay=ReplayLink("redis", "skip-run", redis_url=shared_redis.url, key_prefix=prefix), registry="skip-registry",
    )
    loop = threading.Thread(target=learner.run, daemon=True)
    loop.start()
    try:
        expected = {"malformed": 1, "foreign": 2, "future": 1}
        wait_for(lambda: learner.stats()["skipped"] == expected, 60, "the learner to count the skipped records")

        def exported(kind: str) -> float | None:
            return prometheus_client.REGISTRY.get_sample_value("hopzero_replay_skipped_records_total", {"kind": kind})

        wait_for(lambda: all(exported(kind) == n for kind, n in expected.items()), 30, "the Prometheus counter")
    finally:
        learner.stop()
        loop.join(timeout=60)
        ray.kill(registry)


def test_the_progress_line_names_the_skipped_records():
    from hopzero.train import _progress_line

    snap = {"time": 61.0, "selfplay": {"games": 3, "positions_per_s": 1.0, "sims_per_s": 2.0},
            "learner": {"skipped": {"future": 2, "malformed": 1, "stale": 9}}, "evaluator": {},
            "registry": {"best_version": 1, "promotions": 0}}
    line = _progress_line(snap)
    assert line.endswith("| skipped 2 future, 1 malformed"), line
    snap["learner"]["skipped"] = {"stale": 9}  # expected at the switch to self-play: not shown
    assert "skipped" not in _progress_line(snap)
