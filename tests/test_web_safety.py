"""``hopzero serve``'s limits and guards, on the real server (tests/web_helpers.py): Host and
Origin checks, wrong websocket frames answered and survived, socket tasks that end with their
socket, the analysis limit taken when a search is accepted, one copy of each model loaded off the
event loop, and the memory of 64 games with a model."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from test_cli import hopzero_command
from web_helpers import LiveServer, engine, person
from websockets.exceptions import InvalidStatus

from hopzero.web.limits import Limits
from hopzero.web.sockets import SocketTasks


@pytest.fixture()
def live(tmp_path):
    server = LiveServer(tmp_path / "data", Limits(max_searches=2), allowed_hosts=["games.example"])
    yield server
    server.stop()


def _wait(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_host_and_origin_are_checked(live):
    port = live.port
    for host, status in ((f"evil.example:{port}", 403), ("evil.example", 403), (f"127.0.0.1:{port}", 200),
                         (f"localhost:{port}", 200), (f"[::1]:{port}", 200), (f"games.example:{port}", 200)):
        r = live.get("/api/info", headers={"Host": host})
        assert r.status_code == status, (host, r.text)
    assert "--allow-host" in live.get("/", headers={"Host": "rebound.example"}).json()["error"]
    # a page of another site cannot make a visitor's browser act here
    r = live.post("/api/games", {"preset": "small-4-3"}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and "not accepted" in r.json()["error"]
    assert live.get("/api/games/finished").json()["counts"]["playing"] == 0
    same = live.post("/api/games", {"preset": "small-4-3"}, headers={"Origin": live.base})
    assert same.status_code == 200
    gid = same.json()["id"]
    for host, origin in (("127.0.0.1", "http://evil.example"), ("127.0.0.1", "null"), ("evil.example", None)):
        with pytest.raises(InvalidStatus) as refused:
            live.socket(f"/ws/rooms/{gid}", host=host, origin=origin)
        assert refused.value.response.status_code == 403
    with live.socket(f"/ws/rooms/{gid}", origin=live.base) as feed:
        assert feed.next()["type"] == "room"


def test_wrong_frames_are_answered_and_the_socket_stays(live):
    gid = live.new_room("small-4-3")["id"]
    for path in (f"/ws/rooms/{gid}", f"/ws/analysis/{gid}", "/ws/runs/0"):
        with live.socket(path) as feed:
            feed.send(b"\x00\x01binary")
            feed.until(lambda m: m["type"] == "error" and "binary frames are not accepted" in m["error"])
            feed.send(json.dumps({"type": "hello", "pad": "x" * 20_000}))
            feed.until(lambda m: m["type"] == "error" and "message too large: at most 16384 bytes" in m["error"])
            if path != "/ws/runs/0":
                feed.send("{not json")
                feed.until(lambda m: m["type"] == "error" and "invalid message" in m["error"])
            if path.startswith("/ws/rooms"):  # still open: a good message works
                feed.send({"type": "hello", "tokens": {}})
                assert feed.until(lambda m: m["type"] == "presence")["connected"] == []


def test_every_task_of_a_socket_ends_with_it(live):
    data = live.new_room("star2", [person(), engine("greedy")])
    gid = data["id"]
    room = live.socket(f"/ws/rooms/{gid}")
    analysis = live.socket(f"/ws/analysis/{gid}")
    runs = live.socket("/ws/runs/0")
    analysis.send({"type": "analyze", "req": 1, "ply": 0, "line": 0, "sims": 2000})
    analysis.until(lambda m: m["type"] == "analysis")
    assert SocketTasks.live and live.server.pools.slots.used == 1
    for feed in (room, analysis, runs):
        feed.close()
    _wait(lambda: not SocketTasks.live, f"tasks left: {SocketTasks.live}")
    _wait(lambda: live.server.pools.slots.used == 0, "the analysis kept its place")
    assert not live.server.hall.rooms[gid].watchers


def test_the_analysis_limit_is_taken_when_a_search_is_accepted(live):
    # eight analyses sent together with a limit of two: two run, six are refused with a message
    gid = live.new_room("star2", [person(), engine("greedy")])["id"]
    feeds = [live.socket(f"/ws/analysis/{gid}") for _ in range(8)]
    try:
        for k, feed in enumerate(feeds):
            feed.send({"type": "analyze", "req": k, "ply": 0, "line": 0, "sims": 2000})
        first = [feed.until(lambda m: m["type"] in ("analysis", "error")) for feed in feeds]
        refused = [m for m in first if m["type"] == "error"]
        assert len(refused) == 6 and all("the server is busy" in m["error"] and "at most 2" in m["error"] for m in refused)
        assert live.server.pools.slots.used == 2
    finally:
        for feed in feeds:
            feed.close()
    _wait(lambda: live.server.pools.slots.used == 0, "places not given back")


def test_one_copy_of_a_model_serves_every_game_and_loads_off_the_event_loop(live):
    library = live.server.library
    # star3's model is not loaded yet: an engine seat to move starts its load when the room is watched
    rooms = [live.new_room("star3", [engine("model", level="beginner"), person(), person()])["id"] for _ in range(4)]
    with live.socket(f"/ws/rooms/{rooms[0]}") as feed:
        _wait(lambda: library._loading, "no model load started")
        info = live.get("/api/info")  # answered while the model loads on a worker thread
        assert info.status_code == 200 and library._loading and library.loads == 0
        feed.until(lambda m: m["type"] == "moved")
    for gid in rooms[1:]:
        with live.socket(f"/ws/rooms/{gid}") as feed:
            feed.until(lambda m: m["type"] == "moved")
    assert library.loads == 1 and library.loaded() == ["hopzero star3 model"]


def test_sixty_four_games_with_a_model_fit_in_a_gigabyte(tmp_path):
    # the benchmark's own command: 64 star6 rooms of engines with the shipped model, each played
    # and evaluated, in a fresh process
    proc = subprocess.run(hopzero_command() + ["bench", "rooms", "--preset", "star6", "--games", "64", "--plies", "2",
                                               "--data", str(tmp_path / "data"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["games"] == 64 and data["models_loaded"] == 1 and data["rooms_in_memory"] == 64
    assert data["plies_played"] >= 64 * 2 and data["evaluations"] >= 64
    assert data["rss_mb"] < 1024, data
