"""Rooms of ``hopzero serve``: people and engines in one game by link, seats held by secrets,
moves sent to every page at once, idle seats handed to engines, undo, hot-seat, turn timers, and
games kept in SQLite across a restart (tests/web_helpers.py serves the app for real)."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest
from web_helpers import LiveServer, engine, first_legal, person

from ccengine import new_state, preset
from hopzero.web.limits import Limits
from hopzero.web.store import DB_FILE

STAR3_END = ".................................................................2........122.......11222......11122220....1111.000000000 0 60"


@pytest.fixture()
def live(tmp_path):
    server = LiveServer(tmp_path / "data")
    yield server
    server.stop()


def _moved(feed, seat=None):
    return feed.until(lambda m: m["type"] == "moved" and (seat is None or m["record"]["seat"] == seat))


def test_two_people_and_an_engine_share_a_room_live(live):
    data = live.new_room("star3", [person(), person(), engine("greedy")])
    gid, a = data["id"], data["tokens"]["0"]
    with live.socket(f"/ws/rooms/{gid}") as feed_a, live.socket(f"/ws/rooms/{gid}") as feed_b, \
            live.socket(f"/ws/rooms/{gid}") as watcher:
        feed_a.send({"type": "hello", "tokens": {"0": a}})
        b = live.ok(f"/api/games/{gid}/seats/1/take", {"name": "Bea"})["token"]
        feed_b.send({"type": "hello", "tokens": {"1": b, "0": "a-guess-at-reds-token"}})
        assert feed_b.until(lambda m: m["type"] == "held")["seats"] == [1]  # a guess holds nothing
        feed_a.until(lambda m: m["type"] == "presence" and m["connected"] == [0, 1])
        seats = live.room(gid)["seats"]
        assert seats[1]["label"] == "Bea" and seats[1]["taken"] and "holder" not in str(seats)
        # a taken seat cannot be taken again; nobody plays for another (a watcher has no token)
        assert "taken" in live.post(f"/api/games/{gid}/seats/1/take").json()["error"]
        room = live.room(gid)
        move = first_legal(room)
        for seat, token in ((0, b), (1, a), (0, "not-the-token-at-all")):
            r = live.post(f"/api/games/{gid}/move", {"seat": seat, "token": token, "move": move})
            assert r.status_code == 400, r.text
        live.ok(f"/api/games/{gid}/move", {"seat": 0, "token": a, "move": move})
        # every page hears the move, with the same version
        got = [_moved(f, 0) for f in (feed_a, feed_b, watcher)]
        assert len({(m["version"], tuple(m["record"]["move"])) for m in got}) == 1
        room = live.room(gid)
        live.ok(f"/api/games/{gid}/move", {"seat": 1, "token": b, "move": first_legal(room)})
        reply = [_moved(f, 2) for f in (feed_a, feed_b)]
        assert reply[0]["version"] == reply[1]["version"] and reply[0]["record"]["by"] == "greedy"
        assert live.room(gid)["to_move"] == 0


def test_idle_seats_go_to_engines_only_by_the_creator_or_their_player(live):
    data = live.new_room("star3", [person(), person(), person()])
    gid, creator, a = data["id"], data["creator"], data["tokens"]["0"]
    b = live.ok(f"/api/games/{gid}/seats/1/take")["token"]
    greedy = {"kind": "greedy"}
    with live.socket(f"/ws/rooms/{gid}") as feed_b:
        feed_b.send({"type": "hello", "tokens": {"1": b}})
        feed_b.until(lambda m: m["type"] == "presence" and 1 in m["connected"])
        # Bea is here: her seat is not idle
        r = live.post(f"/api/games/{gid}/seats/1/engine", {"token": creator, "engine": greedy})
        assert r.status_code == 400 and "is here" in r.json()["error"]
    # gone: the creator may hand it over; anyone else may not
    r = live.post(f"/api/games/{gid}/seats/2/engine", {"token": b, "engine": greedy})
    assert r.status_code == 400 and "creator" in r.json()["error"]
    live.ok(f"/api/games/{gid}/seats/1/engine", {"token": creator, "engine": greedy})
    live.ok(f"/api/games/{gid}/seats/2/engine", {"token": creator, "engine": {"kind": "alphabeta", "level": "beginner"}})
    # a player hands their own seat over; the creator gives an engine seat back to people
    live.ok(f"/api/games/{gid}/seats/0/engine", {"token": a, "engine": greedy})
    live.ok(f"/api/games/{gid}/seats/2/person", {"creator": creator})
    seats = live.room(gid)["seats"]
    assert [s["kind"] for s in seats] == ["engine", "engine", "person"] and not seats[2]["taken"]
    assert seats[0]["spec"] == "greedy"
    r = live.post(f"/api/games/{gid}/seats/1/person", {"creator": a})
    assert r.status_code == 400 and "creator" in r.json()["error"]


def test_undo_takes_back_to_before_your_move_for_one_person_or_hot_seat(live):
    data = live.new_room("small-4-3", [person(), engine("greedy")])
    gid, a = data["id"], data["tokens"]["0"]
    with live.socket(f"/ws/rooms/{gid}") as feed:
        live.ok(f"/api/games/{gid}/move", {"seat": 0, "token": a, "move": first_legal(live.room(gid))})
        _moved(feed, 1)
        assert live.ok(f"/api/games/{gid}/undo", {"tokens": {"0": a}})["taken"] == 2
        room = live.room(gid)
        assert room["moves"] == [] and room["to_move"] == 0 and room["line"] == 1
        assert "no move of yours" in live.post(f"/api/games/{gid}/undo", {"tokens": {"0": a}}).json()["error"]
    # hot-seat: one page holds both seats and plays both
    hot = live.new_room("small-4-3", [person(), person()], take=[0, 1])
    hid, tokens = hot["id"], hot["tokens"]
    for seat in (0, 1, 0):
        live.ok(f"/api/games/{hid}/move", {"seat": seat, "token": tokens[str(seat)], "move": first_legal(live.room(hid))})
    assert live.ok(f"/api/games/{hid}/undo", {"tokens": tokens})["taken"] == 1
    # two people: one cannot take back the other's moves
    two = live.new_room("small-4-3", [person(), person()])
    tid, t0 = two["id"], two["tokens"]["0"]
    t1 = live.ok(f"/api/games/{tid}/seats/1/take")["token"]
    live.ok(f"/api/games/{tid}/move", {"seat": 0, "token": t0, "move": first_legal(live.room(tid))})
    live.ok(f"/api/games/{tid}/move", {"seat": 1, "token": t1, "move": first_legal(live.room(tid))})
    r = live.post(f"/api/games/{tid}/undo", {"tokens": {"0": t0}})
    assert r.status_code == 400 and "Blue" in r.json()["error"]
    # resigning ends a game of two; with three seats a player hands the seat to an engine instead
    live.ok(f"/api/games/{tid}/resign", {"seat": 1, "token": t1})
    assert live.room(tid)["result"]["scores"] == [1.0, 0.0]
    three = live.new_room("star3", [person(), engine(), engine()])
    r = live.post(f"/api/games/{three['id']}/resign", {"seat": 0, "token": three["tokens"]["0"]})
    assert r.status_code == 400 and "hand your seat to an engine" in r.json()["error"]


def test_a_timer_plays_greedys_move_for_a_person_out_of_time(live):
    data = live.new_room("small-4-3", [person(), engine("greedy")], settings={"timer_s": 1, "pace_ms": 0})
    gid = data["id"]
    with live.socket(f"/ws/rooms/{gid}") as feed:
        first = feed.until(lambda m: m["type"] == "clock")
        assert 0 < first["deadline_in"] <= 1
        timed = _moved(feed, 0)
        assert timed["record"]["by"] == "timeout"
        _moved(feed, 1)  # the engine replies, the person's clock starts again
        assert feed.until(lambda m: m["type"] == "clock" or (m["type"] == "moved" and m["deadline_in"]), timeout=10)
    assert live.room(gid)["by"][:2] == ["timeout", "greedy"]


def test_moves_are_kept_as_played_and_a_restart_keeps_the_rooms(tmp_path):
    data_dir = tmp_path / "data"
    first = LiveServer(data_dir)
    try:
        data = first.new_room("cc49", [person(), engine("greedy")])
        gid, a = data["id"], data["tokens"]["0"]
        with first.socket(f"/ws/rooms/{gid}") as feed:
            for _ in range(2):
                first.ok(f"/api/games/{gid}/move", {"seat": 0, "token": a, "move": first_legal(first.room(gid))})
                _moved(feed, 1)
        # in the database as it is played, read by another connection while the server runs
        with sqlite3.connect(data_dir / DB_FILE) as db:
            rows = db.execute("SELECT ply, seat, by FROM moves WHERE game = ? ORDER BY ply", (gid,)).fetchall()
        assert rows == [(0, 0, "person"), (1, 1, "greedy"), (2, 0, "person"), (3, 1, "greedy")]
        done = first.new_room("star3", [person(), engine("greedy"), engine("greedy")], position=STAR3_END)
        with first.socket(f"/ws/rooms/{done['id']}") as feed:
            first.ok(f"/api/games/{done['id']}/move", {"seat": 0, "token": done["tokens"]["0"], "move": [102, 111]})
            feed.until(lambda m: m["type"] == "moved" and m["over"])
        before = first.room(gid)
    finally:
        first.stop()
    second = LiveServer(data_dir)
    try:
        room = second.room(gid)
        assert room["moves"] == before["moves"] and room["board"] == before["board"]
        with second.socket(f"/ws/rooms/{gid}") as feed:  # the same token still holds the seat
            second.ok(f"/api/games/{gid}/move", {"seat": 0, "token": a, "move": first_legal(room)})
            assert _moved(feed, 1)["record"]["by"] == "greedy"
        finished = second.get("/api/games/finished").json()
        assert [g["id"] for g in finished["games"]] == [done["id"]] and finished["counts"]["finished"] == 1
        replay = second.room(done["id"])
        assert replay["over"] and replay["result"]["order"][0] == 0 and len(replay["moves"]) == 3
        mine = second.get("/api/games/summaries", params={"ids": f"{gid},{done['id']},nosuch"}).json()["games"]
        assert {g["id"] for g in mine} == {gid, done["id"]}
    finally:
        second.stop()


def test_old_games_expire(tmp_path):
    data_dir = tmp_path / "data"
    first = LiveServer(data_dir)
    try:
        old = first.new_room("star3", [person(), engine("greedy"), engine("greedy")], position=STAR3_END)
        with first.socket(f"/ws/rooms/{old['id']}") as feed:
            first.ok(f"/api/games/{old['id']}/move", {"seat": 0, "token": old["tokens"]["0"], "move": [102, 111]})
            feed.until(lambda m: m["type"] == "moved" and m["over"])
        idle = first.new_room("small-4-3")["id"]
        fresh = first.new_room("small-4-3")["id"]
    finally:
        first.stop()
    long_ago = time.time() - 3 * 86400
    with sqlite3.connect(data_dir / DB_FILE) as db:
        db.execute("UPDATE games SET finished = ?, updated = ? WHERE id IN (?, ?)", (long_ago, long_ago, old["id"], idle))
        db.execute("UPDATE games SET finished = NULL WHERE id = ?", (idle,))
    second = LiveServer(data_dir, Limits(keep_days=2))
    try:
        assert second.get(f"/api/games/{old['id']}").status_code == 404
        assert second.get(f"/api/games/{idle}").status_code == 404
        assert second.get(f"/api/games/{fresh}").status_code == 200
        with sqlite3.connect(data_dir / DB_FILE) as db:  # its moves and evaluations went with it
            assert db.execute("SELECT COUNT(*) FROM moves WHERE game = ?", (old["id"],)).fetchone() == (0,)
    finally:
        second.stop()


def test_rooms_beyond_the_limit_wait_in_the_database(tmp_path):
    live = LiveServer(tmp_path / "data", Limits(max_rooms=2))
    try:
        ids = [live.new_room("small-4-3")["id"] for _ in range(3)]
        hall = live.server.hall
        assert list(hall.rooms) == ids[1:]
        assert live.room(ids[0])["id"] == ids[0]  # loaded again from the database
        assert list(hall.rooms) == [ids[2], ids[0]]
        with live.socket(f"/ws/rooms/{ids[2]}") as one, live.socket(f"/ws/rooms/{ids[0]}") as two:
            one.until(lambda m: m["type"] == "room")
            two.until(lambda m: m["type"] == "room")
            r = live.post("/api/games", {"preset": "small-4-3"})  # both watched: nothing to unload
            assert r.status_code == 400 and "watching" in r.json()["error"]
            assert live.get(f"/api/games/{ids[1]}").status_code == 400
        assert live.room(ids[1])["id"] == ids[1]
    finally:
        live.stop()


def test_a_whole_star3_game_of_engines_is_watched_to_its_end(live):
    # watch mode: three engines, the page only watches; every position gets its evaluation
    data = live.new_room("star3", [engine("greedy"), engine("alphabeta", level="beginner"), engine("greedy")])
    gid = data["id"]
    rules = preset("star3")
    state = new_state(rules)
    with live.socket(f"/ws/rooms/{gid}") as feed:
        while True:
            m = _moved(feed)
            state.play(tuple(m["record"]["move"]))
            assert m["board"] == list(state.board)
            if m["over"]:
                break
    room = live.room(gid)
    assert room["result"]["scores"] == [float(x) for x in state.scores()]
    assert sorted(room["result"]["order"]) == [0, 1, 2]


def test_an_engine_that_cannot_move_says_why_and_its_seat_can_be_handed_on(tmp_path):
    # a run whose best model is damaged: the room says so to every page, a retry tries again,
    # and the creator gives the seat to another engine; no page waits forever
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"preset": "small-4-3"}))
    (run / "model.pt").write_bytes(b"not a model")
    (run / "best.json").write_text(json.dumps({"version": "3", "path": "model.pt", "sha256": "0" * 64,
                                               "promoted_at": "2026-11-24T06:00:00Z", "score": 0.6, "games": 10}))
    live = LiveServer(tmp_path / "data", run_dirs=[run])
    try:
        data = live.new_room("small-4-3", [engine("run", run=0, level="beginner"), person()])
        gid, creator = data["id"], data["creator"]
        with live.socket(f"/ws/rooms/{gid}") as feed:
            failed = feed.until(lambda m: m["type"] == "room" and m["room"]["engine_error"])
            assert "cannot be loaded" in failed["room"]["engine_error"] and "SHA-256" in failed["room"]["engine_error"]
            live.ok(f"/api/games/{gid}/retry")
            feed.until(lambda m: m["type"] == "room" and m["room"]["engine_error"] and m["version"] > failed["version"])
            live.ok(f"/api/games/{gid}/seats/0/engine", {"token": creator, "engine": {"kind": "greedy"}})
            moved = _moved(feed, 0)
        assert moved["record"]["by"] == "greedy" and moved["engine_error"] is None
        assert "no engine move failed" in live.post(f"/api/games/{gid}/retry").json()["error"]
    finally:
        live.stop()
