"""The Redis replay backend against a real redis-server on a free loopback port (never 6379).

Each test starts its own server without persistence in a temporary directory; the restart test
stops it and starts a fresh, empty one on the same port, as a Redis restart without an
append-only file does.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from ccengine import encoding_for, preset
from hopzero.ports import free_port
from learner.records import GameRecord
from learner.replay import Backoff, RatioLimiter, WindowMirror

redis = pytest.importorskip("redis")
from learner.replay.redis_stream import ForeignRunError, RedisReplay, connect  # noqa: E402
from replay_helpers import random_game_record  # noqa: E402

REDIS_SERVER = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

RULES = preset("cc49")
ENC = encoding_for(RULES)


class Server:
    """One redis-server process on a fixed loopback port; start() after stop() is a fresh, empty one."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.dir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), "--logfile", str(self.dir / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        probe = connect(self.url, socket_timeout=0.5)
        deadline = time.monotonic() + 10
        while True:
            try:
                if probe.ping():
                    break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.02)
        probe.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def server(tmp_path):
    srv = Server(tmp_path)
    srv.start()
    yield srv
    srv.stop()


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def replay(server: Server, clock: FakeClock | None = None, run_id: str = "run-a", **kw) -> RedisReplay:
    clock = clock or FakeClock()
    return RedisReplay(connect(server.url, socket_timeout=1.0), run_id=run_id, prefix="t", clock=clock,
                       backoff=Backoff(base=0.05, cap=1.0, clock=clock), **kw)


def records(n: int, first_seed: int = 0, run_id: str = "run-a") -> list[GameRecord]:
    return [random_game_record(RULES, first_seed + s, run_id=run_id, max_plies=20) for s in range(n)]


def trainable(rec: GameRecord) -> int:
    return int((np.diff(rec.policy_offsets) > 0).sum())


def test_a_batching_writer_sends_a_full_batch_or_an_old_one_in_one_round_trip(server):
    clock = FakeClock()
    writer = replay(server, clock, send_batch=3, send_delay_s=5.0)
    calls = []
    writer.client.set_response_callback("EVALSHA", lambda response, **kw: calls.append(1) or response)
    recs = records(5)
    for r in recs[:2]:
        writer.add(r)
    assert writer.pending == 2 and writer.client.xlen("t:games") == 0
    writer.add(recs[2])  # the third: the batch is full
    assert writer.pending == 0 and writer.added == 3 and len(calls) == 1
    writer.add(recs[3])
    clock.t += 4.9
    assert writer.send() == 1  # not due yet
    clock.t += 0.1
    assert writer.send() == 0 and len(calls) == 2  # the oldest waited send_delay_s
    writer.add(recs[4])
    assert writer.flush(timeout=1.0) and writer.added == 5 and len(calls) == 3  # flush does not wait
    assert writer.client.xlen("t:games") == 5
    with pytest.raises(ValueError, match="send_batch=65"):
        replay(server, send_batch=65)


def test_records_reach_redis_and_the_mirror(server):
    writer, reader = replay(server), replay(server)
    recs = records(4)
    for r in recs[:2]:
        writer.add(r)
    writer.client.xadd("t:games", {"data": b"garbage"})  # a bad entry mid-stream
    writer.client.xadd("t:games", {"other": b"field"})  # an entry without data
    for r in recs[2:]:
        writer.add(r)
    assert writer.pending == 0 and writer.added == 4
    assert writer.client.xlen("t:games") == 6
    assert writer.client.hget("t:run", "run_id") == b"run-a"

    mirror = WindowMirror(reader, ENC, window_positions=10_000)
    assert mirror.poll(max_records=3) + mirror.poll(max_records=3) == sum(map(trainable, recs)) == mirror.size
    assert reader.stats()["skipped"] == {"malformed": 2}
    assert mirror.poll() == 0
    got = [random_game_record(RULES, 9, max_plies=20)]
    writer.add(got[0])
    assert mirror.poll() == trainable(got[0])  # follows new records incrementally


@pytest.mark.parametrize("first_back", ["writer", "reader"])
def test_a_restart_without_persistence_is_survived_and_answered_by_a_warm_up(server, caplog, first_back):
    caplog.set_level(logging.INFO)
    clock = FakeClock()
    writer, reader = replay(server, clock), replay(server, clock)
    limiter = RatioLimiter(samples_per_insert=4, min_size_to_sample=10, error_buffer=8)
    mirror = WindowMirror(reader, ENC, window_positions=10_000, limiter=limiter)
    rng = np.random.default_rng(0)
    before = records(3)
    for r in before:
        writer.add(r)
    mirror.poll()
    assert mirror.size == sum(map(trainable, before)) and mirror.try_sample(8, rng) is not None

    server.stop()
    assert mirror.poll() == 0  # no exception: the reader backs off
    errors = reader.connection_errors
    assert errors >= 1 and not reader.backoff.ready()
    assert mirror.poll() == 0 and reader.connection_errors == errors  # in backoff: no attempt
    after = records(2, first_seed=50)
    writer.add(after[0])  # queued, not lost, no exception
    assert writer.pending == 1 and writer.connection_errors >= 1
    assert mirror.size > 0  # nothing detected yet: the learner keeps its window while Redis is away

    server.start()  # a fresh, empty Redis on the same port
    for _ in range(20):
        clock.t += 2.0  # past any backoff
        if first_back == "writer":
            writer.send()
        mirror.poll()
        writer.send()
        if mirror.warmups and writer.pending == 0:
            break
    assert mirror.warmups == 1 and reader.epoch == 1
    assert "warms up again" in caplog.text
    # The window was dropped and refilled from the new buffer only; the limiter counts afresh.
    writer.add(after[1])
    mirror.poll()
    assert mirror.size == sum(map(trainable, after)) == limiter.inserted
    assert limiter.sampled == 0
    assert reader.stats()["skipped"] == {}
    assert writer.client.hget("t:run", "run_id") == b"run-a"


def test_a_foreign_run_key_is_detected(server, caplog):
    reader, writer = replay(server), replay(server)
    other = replay(server, run_id="run-b")
    other.add(records(1, run_id="run-b")[0])  # run-b registered the prefix first
    assert reader.poll() == []
    assert reader.epoch == 1 and reader.stats()["foreign_run"] == "run-b"
    assert "belongs to run 'run-b'" in caplog.text
    assert reader.poll() == [] and reader.epoch == 1  # detected once, nothing read
    with pytest.raises(ForeignRunError, match="run-b"):
        writer.add(records(1)[0])
    # The operator clears the old run: ours registers and is read from the start.
    reader.client.delete("t:run", "t:games")
    writer.send()
    assert len(reader.poll()) == 1 and reader.stats()["foreign_run"] is None


def test_trimmed_and_deleted_streams(server):
    writer, reader = replay(server), replay(server)
    recs = records(8)
    for r in recs[:2]:
        writer.add(r)
    assert len(reader.poll()) == 2
    for r in recs[2:]:
        writer.add(r)
    writer.client.xtrim("t:games", maxlen=2, approximate=False)  # the learner lagged behind the trimming
    assert len(reader.poll()) == 2
    assert reader.missed == 4 and reader.epoch == 0
    writer.client.delete("t:games")  # stream gone, run key intact
    assert reader.poll() == [] and reader.epoch == 1
    writer.add(recs[0])
    assert len(reader.poll()) == 1
