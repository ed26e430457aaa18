"""``hopzero serve``'s API, served for real (uvicorn on a loopback port, tests/web_helpers.py):
the page, the boards, the engines offered, whole games against engines checked against the
engine after every move, the star3 end of game, the run view and its kept games, the Tables view,
bad requests answered with one clear error that changes nothing."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import urllib.request

import pytest
from test_cli import hopzero_command
from web_helpers import LiveServer, engine, first_legal, person

from ccengine import PASS, new_state, preset
from ccengine.notation import parse_position
from evaluator.arena import play_match
from evaluator.game_log import add_match_games, read_games
from evaluator.results import append_result, result_lines
from hopzero.web.geometry import cell_points
from hopzero.web.limits import Limits

#: The star3 position of the end-of-game bug: Red moves 102-111, two replies end the game.
STAR3_END = ".................................................................2........122.......11222......11122220....1111.000000000 0 60"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A run directory shaped like a training run's, with kept games, and a results file."""
    tmp = tmp_path_factory.mktemp("files")
    run = tmp / "run-a"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"preset": "cc49", "config": "fast", "started": "2026-11-24T06:00:00Z"}))
    wall = 1795500000.0  # 2026-11-24T06:00:00Z
    lines = [
        {"kind": "greedy", "wall": wall + 600, "version": 1, "score": 0.4, "elo": -70.0, "games": 20,
         "wins": 7, "draws": 2, "losses": 11},
        {"kind": "gate", "wall": wall + 900, "candidate": 2, "best": 1, "score": 0.6, "games": 40,
         "decision": "promote", "reason": "score 0.600 >= 0.55"},
        {"kind": "greedy", "wall": wall + 1200, "version": 2, "score": 0.7, "elo": 150.0, "games": 20,
         "wins": 14, "draws": 0, "losses": 6},
    ]
    (run / "evaluations.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines) + '{"kind": "gre')  # torn tail
    (run / "promotions.jsonl").write_text(json.dumps({"version": "2", "promoted_at": "2026-11-24T06:15:00+00:00",
                                                      "score": 0.6, "games": 40}) + "\n")
    (run / "elo.json").write_text(json.dumps({"format": "hopzero.elo-ladder", "version": 1, "anchor": "greedy",
                                              "prior_draws": 1.0, "matches": [
                                                  {"a": "v2", "b": "greedy", "wins": 14, "draws": 0, "losses": 6}]}))
    for name, games in (("star2", 2), ("small-4-3", 3)):
        match = play_match(preset(name), "greedy", "random", games=games, seed=5, keep_moves=True)
        add_match_games(run, preset(name), match, kind="greedy", model_versions=(7, None), config_hash="abc",
                        software={})
    results = tmp / "results.jsonl"
    for a, b, seed in (("greedy", "random", 1), ("greedy-stochastic", "greedy", 2), ("random", "greedy-stochastic", 3)):
        append_result(results, *result_lines(play_match(preset("small-4-3"), a, b, games=4, seed=seed), {}))
    return run, results


@pytest.fixture()
def live(tmp_path, files):
    run, results = files
    server = LiveServer(tmp_path / "data", Limits(max_simulations=500, max_depth=3, max_searches=1),
                        run_dirs=[run], results=[results])
    yield server
    server.stop()


# ---------------------------------------------------------------------------------------------
# The page, the boards, the engines
# ---------------------------------------------------------------------------------------------


def test_the_page_and_its_files_are_served_from_the_package(live):
    for path in ("/", "/g/anything"):
        page = live.get(path)
        assert page.status_code == 200 and '<svg id="board"' in page.text
        # no network at run time: every script and style sheet comes from this server
        assert 'src="http' not in page.text and 'href="http' not in page.text and "//cdn" not in page.text
    for name in ("main.js", "api.js", "board.js", "room.js", "analysis.js", "lobby.js", "graph.js", "runs.js",
                 "tables.js", "style.css"):
        assert live.get(f"/static/{name}").status_code == 200, name


@pytest.mark.parametrize("name", ["cc49", "star2", "star6", "small-4-3", "cc81"])
def test_board_points_come_from_the_geometry_neighbours_one_step_apart(live, name):
    rules = preset(name)
    board = live.get(f"/api/presets/{name}").json()["board"]
    assert board["cells"] == rules.cells == len(board["points"]) and board["players"] == rules.players
    assert board["kind"] == rules.geometry.kind
    for p in range(rules.players):
        assert board["homes"][p] == sorted(rules.geometry.home[p])
        assert board["goals"][p] == sorted(rules.geometry.goal(p))
    # a colour and a name for every seat, all different
    assert len(set(board["colours"])) == len(set(board["names"])) == rules.players
    pts = cell_points(rules)
    for i, steps in enumerate(rules.geometry.step):
        for j in steps:
            if j >= 0:
                d = ((pts[i][0] - pts[j][0]) ** 2 + (pts[i][1] - pts[j][1]) ** 2) ** 0.5
                assert abs(d - 1) < 1e-9, (i, j, d)
    assert len({(round(x, 6), round(y, 6)) for x, y in pts}) == rules.cells


def test_engines_offered_with_named_levels_within_the_limits(live):
    info = live.get("/api/presets/star6").json()
    kinds = [e["choice"]["kind"] for e in info["engines"]]
    assert kinds[0] == "model" and {"alphabeta", "rollout", "greedy", "random"} <= set(kinds)
    model = info["engines"][0]
    assert [lv["level"] for lv in model["levels"]] == ["beginner", "club", "strong", "max"]
    assert [lv["number"] for lv in model["levels"]] == [8, 64, 256, 500]  # Max (800) capped at --max-sims 500
    # the race plan stops at depth 3 (depth 4 takes seconds a move): Max is not listed apart
    alphabeta = next(e for e in info["engines"] if e["choice"]["kind"] == "alphabeta")
    assert alphabeta["unit"] == "depth" and [lv["number"] for lv in alphabeta["levels"]] == [1, 2, 3]
    seats = live.ok("/api/games", {"preset": "star6", "seats": [person()] + [engine("alphabeta", level="max")] * 5})
    assert seats["room"]["seats"][1]["spec"] == "alphabeta:depth=3,opponents=still"
    two = live.get("/api/presets/cc49").json()["engines"]
    assert [lv["number"] for lv in next(e for e in two if e["choice"]["kind"] == "alphabeta")["levels"]] == [1, 2, 3]  # --max-depth 3
    assert info["default_engine"] == {"kind": "model", "level": "club", "number": None, "run": 0}
    # cc81 ships no model: alpha-beta is its default and analysis uses playouts
    cc81 = live.get("/api/presets/cc81").json()
    assert "model" not in [e["choice"]["kind"] for e in cc81["engines"]]
    assert cc81["default_engine"]["kind"] == "alphabeta" and "playouts" in cc81["analyst"]
    star4 = live.get("/api/presets/star4").json()  # star4's model ships
    assert star4["default_engine"]["kind"] == "model" and "playouts" not in star4["analyst"]
    # the run directory has no best model yet: not offered
    assert "run" not in [e["choice"]["kind"] for e in live.get("/api/presets/cc49").json()["engines"]]


# ---------------------------------------------------------------------------------------------
# Playing
# ---------------------------------------------------------------------------------------------


def test_a_whole_game_against_greedy_matches_the_engine(live):
    data = live.new_room("small-4-3", [person(), engine("greedy")])
    gid, token, rules = data["id"], data["tokens"]["0"], preset("small-4-3")
    state, played = new_state(rules), []
    with live.socket(f"/ws/rooms/{gid}") as feed:
        feed.send({"type": "hello", "tokens": {"0": token}})
        room = feed.until(lambda m: m["type"] == "room")["room"]
        while not room["over"]:
            assert room["board"] == list(state.board) and room["to_move"] == state.to_move == 0
            move = PASS if room["must_pass"] else tuple(first_legal(room))
            moved = live.ok(f"/api/games/{gid}/move", {"seat": 0, "token": token, "move": list(move),
                                                       "version": room["version"]})
            state.play(move)
            played.append(list(move))
            assert moved["board"] == list(state.board)
            if moved["over"]:
                room = moved
                break
            reply = feed.until(lambda m: m["type"] == "moved" and m["record"]["seat"] == 1)
            state.play(tuple(reply["record"]["move"]))
            played.append(reply["record"]["move"])
            assert reply["board"] == list(state.board) and reply["record"]["by"] == "greedy"
            room = reply
    assert state.is_terminal()
    final = live.room(gid)
    assert final["result"]["scores"] == [float(x) for x in state.scores()]
    assert final["moves"] == played


def test_the_star3_end_of_game_gives_a_result_vector_not_an_error(live):
    # The bug: the end of a three-player game raised ValueError from a two-player result call,
    # the page waited forever, GET answered a plain-text 500.
    data = live.new_room("star3", [person(), engine("greedy"), engine("greedy")], position=STAR3_END)
    gid, token = data["id"], data["tokens"]["0"]
    with live.socket(f"/ws/rooms/{gid}") as feed:
        live.ok(f"/api/games/{gid}/move", {"seat": 0, "token": token, "move": [102, 111]})
        final = feed.until(lambda m: m["type"] == "moved" and m["over"])
    assert final["result"]["scores"] == [1.0, 0.0, 0.0] and final["result"]["reason"] == "all_home"
    assert final["result"]["order"][0] == 0 and final["result"]["winners"] == [0]
    assert "Red wins" in final["result"]["text"]
    r = live.get(f"/api/games/{gid}")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    state = new_state(preset("star3"), parse_position(preset("star3"), STAR3_END))
    for move in r.json()["room"]["moves"]:
        state.play(tuple(move))
    assert state.is_terminal() and list(state.scores()) == r.json()["room"]["result"]["scores"]


def test_a_play_link_seats_a_person_and_the_default_engines(live):
    data = live.ok("/api/games", {"preset": "star6"})
    seats = data["room"]["seats"]
    assert [s["kind"] for s in seats] == ["person"] + ["engine"] * 5
    assert seats[0]["taken"] and list(data["tokens"]) == ["0"]
    assert {s["spec"] for s in seats[1:]} == {"mcts:model=shipped,sims=64,opponent=auto"}
    assert len(data["id"]) >= 16 and data["creator"] not in json.dumps(data["room"])


@pytest.mark.parametrize("body, needle", [
    ({"preset": "nope"}, "unknown preset"),
    ({"preset": "star3", "seats": [person(), person()]}, "star3 has 3 seats"),
    ({"preset": "star3", "seats": [person(), engine(), engine()], "take": [1]}, "not a person's seat"),
    ({"preset": "cc49", "seats": [person(), engine("model", number=501)]}, "at most 500"),
    ({"preset": "cc49", "seats": [person(), engine("alphabeta", number=9)]}, "at most 3"),
    ({"preset": "cc49", "seats": [person(), engine("run", run=3)]}, "run 3 does not exist"),
    ({"preset": "cc49", "seats": [person(), engine("run", run=0)]}, "no best model"),
    ({"preset": "small-4-3", "seats": [person(), engine("model")]}, "no hopzero model ships"),
    ({"preset": "cc49", "seats": [person(), {"kind": "engine", "engine": {"kind": "mcts:model=/etc/passwd"}}]}, "kind"),
    ({"preset": "cc49", "side": "x"}, "side: Extra inputs are not permitted"),
    ({"preset": "cc49", "position": "garbage"}, "position"),
    ({"preset": "cc49", "settings": {"timer_s": -1}}, "timer_s"),
])
def test_bad_new_games_are_refused(live, body, needle):
    r = live.post("/api/games", body)
    assert r.status_code in (400, 422) and needle in r.json()["error"], r.text
    assert live.get("/api/games/finished").json()["counts"] == {"playing": 0, "finished": 0}


def test_bad_moves_change_nothing(live):
    data = live.new_room("small-4-3", [person(), engine("greedy")])
    gid, token = data["id"], data["tokens"]["0"]
    before = live.room(gid)
    s, e = first_legal(before)
    for body, status, needle in [
        ({"seat": 0, "token": "x" * 22, "move": [s, e]}, 400, "you do not hold Red's seat"),  # a watcher
        ({"seat": 1, "token": token, "move": [s, e]}, 400, "Red's turn, not Blue's"),
        ({"seat": 0, "token": token, "move": [s, s]}, 400, "not legal"),
        ({"seat": 0, "token": token, "move": [0, 999]}, 400, "cells are 0.."),
        ({"seat": 0, "token": token, "move": [-1, -1]}, 400, "pass is legal only"),
        ({"seat": 0, "token": token, "move": [s, e], "version": 99}, 400, "game changed"),
        ({"seat": 0, "token": token, "move": [s, e], "extra": 1}, 422, "extra"),
        ({"seat": 9, "token": token, "move": [s, e]}, 422, "seat"),
    ]:
        r = live.post(f"/api/games/{gid}/move", body)
        assert r.status_code == status and needle.lower() in r.json()["error"].lower(), r.text
    assert live.room(gid)["version"] == before["version"] and live.room(gid)["board"] == before["board"]
    assert live.get("/api/games/nosuchgame").status_code == 404
    assert "no game" in live.post("/api/games/nosuchgame/move", {"seat": 0, "token": token, "move": [s, e]}).json()["error"]


def test_size_limits(live):
    data = live.new_room()
    big = {"seat": 0, "token": data["tokens"]["0"], "move": [0, 1], "pad": "x" * 20_000}
    r = live.post(f"/api/games/{data['id']}/move", big)
    assert r.status_code == 413 and "at most 16384 bytes" in r.json()["error"]
    r = live.http.post(f"/api/games/{data['id']}/move", content=iter([b"{}"]))  # streamed, no length
    assert r.status_code == 411


# ---------------------------------------------------------------------------------------------
# The run view
# ---------------------------------------------------------------------------------------------


def test_the_run_view_reads_the_runs_files(live):
    run = live.get("/api/runs/0").json()
    assert run["preset"] == "cc49" and [g["version"] for g in run["greedy"]] == [1, 2]
    assert run["gates"][0]["decision"] == "promote" and run["promotions"][0]["version"] == "2"
    assert {r["name"] for r in run["ratings"]} == {"v2", "greedy"}
    assert live.get("/api/runs/5").status_code == 400


def test_the_run_feed_sends_the_run_and_changes(live, files):
    run, _ = files
    with live.socket("/ws/runs/0") as feed:
        first = feed.until(lambda m: m["type"] == "run")
        assert first["run"]["name"] == run.name
    with live.socket("/ws/runs/9") as feed:
        assert "run 9 does not exist" in feed.until(lambda m: m["type"] == "error")["error"]


def test_a_kept_game_replays_move_by_move(live, files):
    run, _ = files
    kept = read_games(run)
    listed = live.get("/api/runs/0").json()["games"]
    assert [g["id"] for g in listed] == [g["id"] for g in kept][::-1]  # newest first
    for game in kept:
        data = live.get(f"/api/runs/0/games/{game['id']}").json()
        rules = preset(data["board"]["preset"])
        state = new_state(rules)
        assert data["start_board"] == list(state.board)
        for move, path in zip(data["moves"], data["paths"]):
            assert path[0] == move[0] and path[-1] == move[1]
            state.play(tuple(move))
        assert data["result"]["scores"] == [float(x) for x in state.scores()]
    r = live.get("/api/runs/0/games/999")
    assert r.status_code == 404 and "keeps no game 999" in r.json()["error"]


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


def test_the_tables_cross_the_results_and_rate_the_players(live):
    data = live.get("/api/tables").json()
    t = data["table"]
    assert data["presets"] == ["small-4-3"] and not data["pairwise"]
    names = [p["name"] for p in t["players"]]
    assert sorted(names) == ["greedy", "greedy-stochastic", "random"] and t["anchor"] == "greedy"
    for i in range(len(names)):
        for j in range(len(names)):
            if i != j:
                a, b = t["cells"][i][j], t["cells"][j][i]
                assert a["wins"] == b["losses"] and a["score"] + b["score"] == pytest.approx(1)


def test_a_tournament_directory_shows_the_multi_player_ladder(tmp_path):
    # `hopzero tournament` on star3 writes DIR/results.jsonl: pairwise comparisons of finishing order
    out = tmp_path / "t"
    proc = subprocess.run(hopzero_command() + ["tournament", "--preset", "star3", "--players", "greedy", "random",
                                               "greedy-stochastic", "--games", "3", "--random-opening", "0",
                                               "--out", str(out), "--seed", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    server = LiveServer(tmp_path / "data", results=[out])
    try:
        data = server.get("/api/tables").json()
        assert data["presets"] == ["star3"] and data["pairwise"] and data["files"] == ["t/results.jsonl"]
        t = data["table"]
        assert sorted(p["name"] for p in t["players"]) == ["greedy", "greedy-stochastic", "random"]
        # three games of one group: every pair compared three times
        assert all(c["games"] == 3 for row in t["cells"] for c in row if c is not None)
        # the tournament's own intervals (whole games resampled), never narrower than the fit's
        ladder = {s["player"]: s for s in json.loads((out / "ladder.json").read_text())["standings"]}
        assert t["intervals"] == "games"
        for p in t["players"]:
            s = ladder[p["name"]]
            assert p["high"] - p["low"] == pytest.approx(s["high"] - s["low"], abs=0.2)
            assert p["high"] - p["low"] >= 2 * 1.95 * p["stderr"] - 0.2
    finally:
        server.stop()
    # beside another file of the same board the ladder's intervals no longer apply: the fit's
    other = tmp_path / "more.jsonl"
    other.write_text((out / "results.jsonl").read_text().replace('"greedy"', '"greedy-again"', 1))
    server = LiveServer(tmp_path / "data2", results=[out, other])
    try:
        t = server.get("/api/tables").json()["table"]
        assert t["intervals"] == "fit"
        for p in t["players"]:
            if p["stderr"]:
                assert p["high"] - p["low"] == pytest.approx(2 * 1.959964 * p["stderr"])
    finally:
        server.stop()


def test_the_printed_address_takes_connections_as_soon_as_it_is_printed(tmp_path):
    # The socket listens before the address is printed: a page opened at once is not refused
    # while the server is still starting up (it was, every time, when only bound).
    proc = subprocess.Popen(hopzero_command() + ["serve", "--port", "0", "--data", str(tmp_path / "data")],
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = proc.stdout.readline()
        address = re.search(r"open (http://127\.0\.0\.1:(\d+)/)", line)
        assert address is not None, line
        socket.create_connection(("127.0.0.1", int(address.group(2))), timeout=10).close()
        with urllib.request.urlopen(address.group(1), timeout=60) as page:
            assert page.status == 200 and b"<html" in page.read().lower()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert (tmp_path / "data" / "games.sqlite3").is_file()
