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

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
from learner.replay.redis_url import PASSWORD_ENV  # noqa: E402

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


def start_train(
    run_dir: Path, *settings: str, extra: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """A driver in the background; its screen goes to ``<run_dir>.out``."""
    out = open(f"{run_dir}.out", "w")  # noqa: SIM115 - closed with the process (by the OS)
    return subprocess.Popen([*train_args(run_dir, *settings), *extra], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, cwd=run_dir.parent, env={**os.environ, **(env or {})})


def screen(run_dir: Path) -> str:
    return Path(f"{run_dir}.out").read_text(errors="replace")


def run_train(
    run_dir: Path, *settings: str, extra: tuple[str, ...] = (), timeout: float = 420, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*train_args(run_dir, *settings), *extra], capture_output=True, text=True,
                          timeout=timeout, cwd=run_dir.parent, env={**os.environ, **(env or {})})


def password_env(server: LocalRedis) -> dict[str, str]:
    """The environment that gives ``hopzero train`` a Redis password (never its command line)."""
    return {PASSWORD_ENV: server.password()}


def files_holding(root: Path, secret: str) -> list[Path]:
    """Every file under ``root`` whose bytes hold ``secret``."""
    needle = secret.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


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
    second run's actors failed on every game (ForeignRunError) and its learner made 0 steps.

    And the password stays secret: the first run takes it from the environment (the URL from
    ``--redis-url``), the second from ``--redis-password-file`` (the URL from
    ``--set replay.redis_url``); neither run writes it into any file (config.yaml, run.json,
    checkpoints, models, metrics, logs) nor prints it."""
    password = shared_redis.password()
    secret_file = tmp_path / "redis-password"
    secret_file.write_text(password + "\n")
    ways = {"first": ([], ("--redis-url", shared_redis.address), password_env(shared_redis)),
            "second": (["replay.backend=redis", f"replay.redis_url={shared_redis.address}"],
                       ("--redis-password-file", str(secret_file)), {})}
    done = []
    for name, (settings, extra, env) in ways.items():
        run_dir = tmp_path / name
        proc = run_train(run_dir, "run.minutes=3", "run.max_learner_steps=1", *settings, extra=extra, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert snapshots(run_dir)[-1]["learner"]["steps"] >= 1, f"the {name} run's learner never trained"
        assert password not in proc.stdout + proc.stderr, "the Redis password was printed"
        assert files_holding(run_dir, password) == [], "the Redis password was written down"
        done.append(run_dir)
    assert list((done[0] / "checkpoints").glob("checkpoint-*.pt")), "no checkpoint to look into"
    assert f"redis_url: {shared_redis.address}" in (done[1] / "config.yaml").read_text()
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
    url, env = ("--redis-url", shared_redis.address), password_env(shared_redis)
    ran = run_train(first, "run.minutes=0.05", "replay.key_prefix=team:shared", extra=url, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr

    refused = run_train(second, "replay.key_prefix=team:shared", extra=url, timeout=120, env=env)
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
    again = run_train(first, "run.minutes=0.05", "replay.key_prefix=team:shared", extra=url, env=env)
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_bad_key_prefix_or_an_unreachable_redis_is_one_line_and_starts_nothing(tmp_path):
    bad = run_train(tmp_path / "bad", "replay.key_prefix=two words", extra=("--redis-url", "redis://127.0.0.1:1/0"),
                    timeout=120)
    assert bad.returncode == 2 and bad.stdout == "", bad.stdout + bad.stderr
    assert bad.stderr.strip() == ("hopzero train: error: replay.key_prefix: must be empty or 1-200 characters of "
                                  "A-Z a-z 0-9 _ . : -, got 'two words'"), bad.stderr
    assert not (tmp_path / "bad").exists()  # refused as the config loads, before the run directory

    from hopzero.ports import free_port
    from hopzero.train import RunStartError, _claim_prefix

    url = f"redis://:s3cret@127.0.0.1:{free_port()}/0"  # nothing listens there
    with pytest.raises(RunStartError, match=r"cannot reach Redis at redis://:\*\*\*@127\.0\.0\.1:\d+/0") as caught:
        _claim_prefix(url, "p", "run-a", wait_s=0)
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize("args", [
    ["--redis-url", "redis://:s3cret@127.0.0.1:1/0"],
    ["--redis-url", "redis://hopzero:s3cret@127.0.0.1:1/0"],
    ["--redis-url", "redis://127.0.0.1:1/0?password=s3cret"],
    ["--set", "replay.backend=redis", "--set", "replay.redis_url=redis://:s3cret@127.0.0.1:1/0"],
], ids=["url", "user-and-password", "query", "set"])
def test_a_password_in_a_redis_url_is_refused_with_where_it_goes(tmp_path, capsys, args):
    """Before, the password landed in config.yaml (0644), the config hash and every checkpoint,
    and `--redis-url` showed it in `ps`. Now the URL is refused before anything is written, in
    one line that names where the password goes, and the line does not echo it."""
    from hopzero.cli import main

    status = main(["train", "--config", "demo", "--run-dir", str(tmp_path / "run"), *args])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and out == "", err
    assert PASSWORD_ENV in lines[0] and "--redis-password-file" in lines[0] and "s3cret" not in err
    assert not (tmp_path / "run").exists()


def test_a_password_file_that_cannot_be_read_is_one_line(tmp_path, capsys):
    from hopzero.cli import main

    (tmp_path / "empty").write_text("\n")
    for name, words in (("missing", "cannot read it"), ("empty", "is empty")):
        status = main(["train", "--config", "demo", "--run-dir", str(tmp_path / "run"), "--redis-url",
                       "redis://127.0.0.1:1/0", "--redis-password-file", str(tmp_path / name)])
        err = capsys.readouterr().err
        assert status == 2 and len(err.strip().splitlines()) == 1 and words in err, err
    assert not (tmp_path / "run").exists()


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
    # cwd away from the checkout: `-c` puts the cwd first on sys.path, and the source tree has no
    # compiled core when the package is installed non-editable
    holder = subprocess.Popen([sys.executable, "-c", HOLD_SERVER, str(directory)], stdout=subprocess.PIPE,
                              text=True, cwd=tmp_path)
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


@contextlib.contextmanager
def running_learner(url: str, run_id: str, run_dir: Path) -> Iterator[tuple[Any, Any]]:
    """A real learner of the tiny config on the Redis at ``url`` (``run_id``'s keys), its loop
    running on a thread, with the registry actor it reports to: ``(config, learner)``; stopped
    (its last checkpoint written) at the end."""
    from hopzero.config import load_config
    from hopzero.registry import ModelRegistry
    from learner.replay import ReplayLink
    from learner.service import LearnerService

    config = load_config("demo", preset_name="cc49", overrides=list(TINY), seed=3)
    prefix = config.replay.key_prefix_for(run_id)
    registry = ray.remote(ModelRegistry).options(name=f"{run_id}-registry").remote()
    learner = LearnerService(
        rules=config.training_rules(), network=config.network, learner=config.learner, replay_config=config.replay,
        stage1_steps=config.stage1.steps, candidate_every_steps=config.evaluation.candidate_every_steps,
        seed=config.seed, run_config=config.to_dict(), config_hash=config.hash(), run_dir=str(run_dir),
        replay=ReplayLink("redis", run_id, redis_url=url, key_prefix=prefix), registry=f"{run_id}-registry",
    )
    loop = threading.Thread(target=learner.run, daemon=True)
    loop.start()
    try:
        yield config, learner
    finally:
        learner.stop()
        loop.join(timeout=60)
        ray.kill(registry)


def test_skipped_records_are_counted_in_the_learners_stats_and_prometheus(shared_redis, local_ray, tmp_path):
    import prometheus_client

    from hopzero.config import load_config
    from learner.replay.redis_stream import RedisReplay

    prefix = load_config("demo").replay.key_prefix_for("skip-run")
    writer = RedisReplay(shared_redis.url, run_id="skip-run", prefix=prefix)
    writer.claim()
    rules = preset("cc49")
    good = encode_record(random_game_record(rules, 1, run_id="skip-run", max_plies=20))
    foreign = encode_record(random_game_record(rules, 2, run_id="another-run", max_plies=20))
    for payload in (b"garbage", good, foreign, future_schema(good), b"\x81\xa5magic\xa3xyz"):
        writer.client.xadd(f"{prefix}:games", {"data": payload})

    with running_learner(shared_redis.url, "skip-run", tmp_path) as (_, learner):
        expected = {"malformed": 1, "foreign": 2, "future": 1}
        wait_for(lambda: learner.stats()["skipped"] == expected, 60, "the learner to count the skipped records")

        def exported(kind: str) -> float | None:
            return prometheus_client.REGISTRY.get_sample_value("hopzero_replay_skipped_records_total", {"kind": kind})

        wait_for(lambda: all(exported(kind) == n for kind, n in expected.items()), 30, "the Prometheus counter")


def test_the_progress_line_names_the_skipped_records():
    from hopzero.train import _progress_line

    snap = {"time": 61.0, "selfplay": {"games": 3, "positions_per_s": 1.0, "sims_per_s": 2.0},
            "learner": {"skipped": {"future": 2, "malformed": 1, "stale": 9}}, "evaluator": {},
            "registry": {"best_version": 1, "promotions": 0}}
    line = _progress_line(snap)
    assert line.endswith("| skipped 2 future, 1 malformed"), line
    snap["learner"]["skipped"] = {"stale": 9}  # expected at the switch to self-play: not shown
    assert "skipped" not in _progress_line(snap)


# -- 5. Redis killed mid-run: said where a person looks, and said again when it is back -----------


def test_redis_killed_under_a_learner_is_said_and_said_again_when_back(local_ray, tmp_path, caplog):
    """Before, nothing said so and the progress line kept the learner's last rate. Now the
    learner's stats (the progress line's source), its Prometheus gauge and its log say how long
    Redis has been away, its rate falls to 0 while it waits, and all of it clears when Redis is
    back on the same port."""
    import logging

    import prometheus_client

    from hopzero.config import load_config
    from learner.replay.redis_stream import RedisReplay

    caplog.set_level(logging.WARNING, logger="learner.replay.redis_stream")
    server = LocalRedis(tmp_path / "redis", persistent=False)
    server.start()
    port = server.port
    writer = RedisReplay(server.url, run_id="kill-run", prefix=load_config("demo").replay.key_prefix_for("kill-run"))
    rules = preset("cc49")
    for seed in range(40):  # stage 1's positions (model version -1): enough for its 40 steps
        writer.add(random_game_record(rules, seed, run_id="kill-run", max_plies=40))
    assert writer.flush()

    def gauge() -> float | None:
        return prometheus_client.REGISTRY.get_sample_value("hopzero_replay_unreachable_seconds")

    try:
        with running_learner(server.url, "kill-run", tmp_path) as (config, learner):
            _kill_redis_under(learner, config, server, gauge, caplog)
            server = LocalRedis(tmp_path / "redis", port=port, persistent=False)  # back, same port and password
            server.start()
            wait_for(lambda: learner.stats()["replay_unreachable_s"] == 0, 60, "the learner to reach Redis again")
            wait_for(lambda: gauge() == 0, 30, "the gauge to clear")
            assert any("Redis reachable again" in r.getMessage() for r in caplog.records)
    finally:
        server.stop()


def _kill_redis_under(learner: Any, config: Any, server: LocalRedis, gauge: Any, caplog: Any) -> None:
    """Kill Redis once the learner has trained; check that every place a person looks says so."""
    from hopzero.train import _progress_line

    wait_for(lambda: learner.stats()["steps"] >= config.stage1.steps, 120, "stage 1's steps")
    os.kill(server.pid, signal.SIGKILL)  # the attack
    server.process.wait()
    server.stop()  # releases the directory's lock: a new server may start on it
    wait_for(lambda: learner.stats()["replay_unreachable_s"] > 0, 30, "the learner to notice")
    wait_for(lambda: (gauge() or 0) > 0, 30, "the Prometheus gauge")
    assert any("Redis unreachable" in r.getMessage() for r in caplog.records)
    wait_for(lambda: learner.stats()["steps_per_s"] == 0, 30, "the learner's rate to show it waits")
    snap = {"time": 1.0, "selfplay": {"games": 0, "positions_per_s": 0.0, "sims_per_s": 0.0},
            "learner": learner.stats(), "evaluator": {}, "registry": {"best_version": 40, "promotions": 0}}
    assert "REDIS UNREACHABLE for" in _progress_line(snap)


def test_the_driver_says_once_that_redis_is_gone_and_once_that_it_is_back():
    from hopzero.train import _ReplayWatch

    watch = _ReplayWatch()
    said = [watch.update(stats) for stats in (
        {"replay_unreachable_s": 0.0}, {"replay_unreachable_s": 3.2}, {}, {"replay_unreachable_s": 9.0},
        {"replay_unreachable_s": 0.0}, {"replay_unreachable_s": 0.0})]
    assert [len(lines) for lines in said] == [0, 1, 0, 0, 1, 0]
    assert said[1][0].startswith("Redis of the replay buffer unreachable for 3 s") and "Start Redis again" in said[1][0]
    assert said[4][0].startswith("Redis of the replay buffer reachable again")
