"""The analysis board's engine: the marks' thresholds, an evaluation kept for every position, any
position analysed on request with its top moves and principal variations, a new question
replacing the old one, a deeper analysis replacing the kept evaluation."""

from __future__ import annotations

import pytest
from web_helpers import LiveServer, engine, first_legal, person

from ccengine import new_state, preset
from ccengine.reference import is_witness_path
from hopzero.web.analysis import mark, marks
from hopzero.web.limits import Limits


@pytest.fixture()
def live(tmp_path):
    server = LiveServer(tmp_path / "data", Limits(max_simulations=400))
    yield server
    server.stop()


def test_marks_are_lichess_thresholds_scaled_to_the_fair_share():
    # two seats: lichess's 0.1 / 0.2 / 0.3 on -1..1 are drops of 0.05 / 0.10 / 0.15 of a share
    assert [mark(d, 2) for d in (0.049, 0.05, 0.099, 0.1, 0.149, 0.15, 0.9)] == [
        None, "inaccuracy", "inaccuracy", "mistake", "mistake", "blunder", "blunder"]
    # six seats: a sixth of those
    assert [mark(d, 6) for d in (0.016, 0.017, 0.034, 0.05)] == [None, "inaccuracy", "mistake", "blunder"]
    assert mark(-0.2, 3) is None  # a move that gained is no mistake
    evals = {0: {"shares": [0.5, 0.3, 0.2]}, 1: {"shares": [0.35, 0.4, 0.25]}, 2: {"shares": [0.36, 0.41, 0.23]}}
    assert marks(evals, [0, 1, 2], 3) == {"0": "blunder"}  # move 2 has no evaluation after it


def test_every_position_of_a_game_gets_an_evaluation(live):
    data = live.new_room("small-4-3", [person(), engine("greedy")])
    gid, token = data["id"], data["tokens"]["0"]
    with live.socket(f"/ws/rooms/{gid}") as feed:
        room = live.room(gid)
        while not room["over"]:
            if room["to_move"] == 0:
                live.ok(f"/api/games/{gid}/move", {"seat": 0, "token": token, "move": first_legal(room)})
            feed.until(lambda m: m["type"] == "moved")
            room = live.room(gid)
        plies = room["plies"]
        while len(room["evals"]) < plies + 1:
            feed.until(lambda m: m["type"] == "eval")
            room = live.room(gid)
    assert sorted(map(int, room["evals"])) == list(range(plies + 1))
    final = room["evals"][str(plies)]
    assert final["exact"] and final["shares"] == room["result"]["scores"]
    for e in room["evals"].values():
        assert len(e["shares"]) == 2 and sum(e["shares"]) == pytest.approx(1, abs=1e-3)
    assert room["marks"] == marks({int(k): v for k, v in room["evals"].items()}, room["movers"], 2)
    full = live.get(f"/api/games/{gid}/evals/0").json()["eval"]
    assert full["sims"] == 200 and "playouts" in full["engine"] and full["top"]  # small-4-3: no model


def test_any_position_is_analysed_with_top_moves_and_their_lines(live):
    rules = preset("star3")
    data = live.new_room("star3", [person(), engine("greedy"), engine("greedy")])
    gid, token = data["id"], data["tokens"]["0"]
    with live.socket(f"/ws/rooms/{gid}") as room_feed:
        live.ok(f"/api/games/{gid}/move", {"seat": 0, "token": token, "move": first_legal(live.room(gid))})
        room_feed.until(lambda m: m["type"] == "moved" and m["record"]["seat"] == 2)
    room = live.room(gid)
    with live.socket(f"/ws/analysis/{gid}") as feed:
        feed.send({"type": "analyze", "req": 7, "ply": 1, "line": room["line"], "sims": 400})
        final = feed.until(lambda m: m["type"] == "analysis" and m["final"])
        assert final["req"] == 7 and final["ply"] == 1
        thought = final["thought"]
        assert thought["simulations"] == 400 and thought["mover"] == 1
        assert sum(thought["shares"]) == pytest.approx(1, abs=1e-3) and len(thought["shares"]) == 3
        state = new_state(rules)
        state.play(tuple(room["moves"][0]))
        for top in thought["top"]:
            assert is_witness_path(rules, state.board, top["path"])
            walk = state.copy()
            for path in top["pv"]:  # the line: one legal move after the other
                assert is_witness_path(rules, walk.board, path) and walk.board[path[0]] == walk.to_move
                walk.play((path[0], path[-1]))
        assert len(thought["top"][0]["pv"]) > 1
        # deeper than the kept evaluation (64 simulations): it replaces it
        kept = live.get(f"/api/games/{gid}/evals/1").json()["eval"]
        assert kept["sims"] == 400 and kept["top"][0]["path"] == thought["top"][0]["path"]
        # a new question replaces the running one: the answer names it
        feed.send({"type": "analyze", "req": 8, "ply": 0, "line": room["line"], "sims": 400})
        feed.send({"type": "analyze", "req": 9, "ply": 2, "line": room["line"], "sims": 50})
        last = feed.until(lambda m: m["type"] == "analysis" and m["final"] and m["req"] == 9)
        assert last["thought"]["simulations"] == 50
        # a position of another line of the game, or beyond it, is refused
        feed.send({"type": "analyze", "req": 10, "ply": 0, "line": 5, "sims": 50})
        assert "no longer in the game" in feed.until(lambda m: m["type"] == "error")["error"]
        feed.send({"type": "analyze", "req": 11, "ply": 0, "line": 0, "sims": 401})
        assert "at most 400" in feed.until(lambda m: m["type"] == "error" and m["req"] == 11)["error"]
    assert live.server.pools.slots.used == 0
