"""A game as a file: downloaded as JSON and as ``s-e`` text, loaded back as a new room, and every
kind of bad file refused with one clear message that creates nothing."""

from __future__ import annotations

import json

import pytest
from web_helpers import LiveServer, engine, first_legal, person

STAR3_END = ".................................................................2........122.......11222......11122220....1111.000000000 0 60"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(tmp_path_factory.mktemp("data"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def finished(live):
    """A finished star3 game and its JSON download."""
    data = live.new_room("star3", [person(), engine("greedy"), engine("greedy")], position=STAR3_END, name="Ada")
    gid = data["id"]
    with live.socket(f"/ws/rooms/{gid}") as feed:
        live.ok(f"/api/games/{gid}/move", {"seat": 0, "token": data["tokens"]["0"], "move": [102, 111]})
        feed.until(lambda m: m["type"] == "moved" and m["over"])
        while len(live.room(gid)["evals"]) < 4:
            feed.until(lambda m: m["type"] == "eval")
    r = live.get(f"/api/games/{gid}/download", params={"format": "json"})
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    return gid, r.json()


def test_a_finished_game_downloads_and_loads_back(live, finished):
    gid, doc = finished
    assert doc["format"] == "hopzero.game" and doc["schema"] == 1 and doc["preset"] == "star3"
    assert doc["moves"][0] == [102, 111] and doc["result"]["scores"] == [1.0, 0.0, 0.0]
    assert doc["seats"][0] == {"kind": "person", "name": "Ada"} and doc["seats"][1]["engine"] == {"kind": "greedy"}
    assert set(doc["evals"]) == {"0", "1", "2", "3"} and doc["software"]["numpy"]
    text = live.get(f"/api/games/{gid}/download", params={"format": "moves"}).text
    assert text.split() == [f"{s}-{e}" for s, e in doc["moves"]]
    loaded = live.post("/api/games/import", content=json.dumps(doc).encode())
    assert loaded.status_code == 200, loaded.text
    room = loaded.json()["room"]
    assert room["id"] != gid and room["over"] and room["moves"] == doc["moves"] and room["start"] == doc["start"]
    assert room["result"] == live.room(gid)["result"]
    assert {k: {f: v[f] for f in ("shares", "sims", "exact")} for k, v in room["evals"].items()} == doc["evals"]
    assert loaded.json()["id"] in [g["id"] for g in live.get("/api/games/finished").json()["games"]]


def test_a_game_in_progress_loads_back_with_its_person_seats_held_by_the_loader(live):
    data = live.new_room("star3", [person(), person(), engine("alphabeta", level="beginner")])
    gid, token = data["id"], data["tokens"]["0"]
    live.ok(f"/api/games/{gid}/move", {"seat": 0, "token": token, "move": first_legal(live.room(gid))})
    doc = live.get(f"/api/games/{gid}/download").json()
    loaded = live.post("/api/games/import", content=json.dumps(doc).encode()).json()
    assert set(loaded["tokens"]) == {"0", "1"} and not loaded["room"]["over"]
    assert loaded["room"]["seats"][2]["spec"] == "alphabeta:depth=1,opponents=still"
    new = loaded["id"]
    live.ok(f"/api/games/{new}/move", {"seat": 1, "token": loaded["tokens"]["1"], "move": first_legal(loaded["room"])})


def _changed(doc, **changes):
    out = json.loads(json.dumps(doc))
    for key, value in changes.items():
        if value is _DROP:
            out.pop(key)
        else:
            out[key] = value
    return out


_DROP = object()


@pytest.mark.parametrize("change, needle", [
    (lambda d: b"{not json", "not a hopzero.game file"),
    (lambda d: _changed(d, format="something"), "format"),
    (lambda d: _changed(d, schema=2), "schema"),
    (lambda d: _changed(d, extra=1), "extra: Extra inputs are not permitted"),
    (lambda d: _changed(d, moves=_DROP), "moves: Field required"),
    (lambda d: _changed(d, preset="star9"), "rules: unknown preset"),
    (lambda d: _changed(d, rules={**d["rules"], "max_plies": 5}), "not the rules of preset 'star3'"),
    (lambda d: _changed(d, seats=d["seats"][:2]), "star3 has 3 seats, the file 2"),
    (lambda d: _changed(d, moves=[[102, 0]] + d["moves"][1:]), "moves.0 (102-0): move 102-0 is not legal"),
    (lambda d: _changed(d, moves=d["moves"] + [[1, 2]], paths=d["paths"] + [[1, 2]], movers=None, by=None, walls=None),
     "moves.3 (1-2)"),
    (lambda d: _changed(d, paths=[[102, 120, 111]] + d["paths"][1:]), "paths.0"),
    (lambda d: _changed(d, result={**d["result"], "scores": [0.0, 1.0, 0.0]}), "result: the file's scores"),
    (lambda d: _changed(d, evals={"9": {"shares": [0.3, 0.3, 0.4], "sims": 1}}), "evals.9: not a position"),
    (lambda d: _changed(d, evals={"1": {"shares": [0.5, 0.5, 0.5], "sims": 1}}), "shares summing to 1"),
    (lambda d: _changed(d, start="nonsense"), "start: position"),
    (lambda d: _changed(d, moves=[[0, 1]] * 2001), "moves: List should have at most 2000"),
])
def test_bad_game_files_are_refused_with_one_clear_message(live, finished, change, needle):
    _, doc = finished
    bad = change(doc)
    body = bad if isinstance(bad, bytes) else json.dumps(bad).encode()
    before = live.get("/api/games/finished").json()["counts"]
    r = live.post("/api/games/import", content=body)
    assert r.status_code in (400, 413) and needle in r.json()["error"], r.text
    assert r.json()["error"].startswith("game file: ") or r.status_code == 413
    assert "\n" not in r.json()["error"]
    assert live.get("/api/games/finished").json()["counts"] == before
