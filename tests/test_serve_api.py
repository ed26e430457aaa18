"""``hopzero serve``'s API through FastAPI's test client: games, the engine's thinking over the
websocket, the run view with its games to replay, the tables of match results, and every kind of
bad request answered with a clear error that changes nothing."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.request

import pytest
from fastapi.testclient import TestClient
from test_cli import hopzero_command

from ccengine import PASS, new_state, preset
from ccengine.notation import Position, format_position
from ccengine.reference import is_witness_path, move_path
from evaluator.arena import play_match
from evaluator.game_log import add_match_games, read_games
from evaluator.results import append_result, result_lines
from hopzero.web.app import create_app
from hopzero.web.board import cell_points
from hopzero.web.opponents import Limits


@pytest.fixture()
def client(tmp_path):
    run = tmp_path / "run-a"
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
    # the games of two real matches, kept as the evaluator keeps them
    for name, games in (("star2", 2), ("small-4-3", 3)):
        match = play_match(preset(name), "greedy", "random", games=games, seed=5, keep_moves=True)
        add_match_games(run, preset(name), match, kind="greedy", model_versions=(7, None), config_hash="abc",
                        software={})
    results = tmp_path / "results.jsonl"
    for a, b, seed in (("greedy", "random", 1), ("greedy-stochastic", "greedy", 2), ("random", "greedy-stochastic", 3)):
        append_result(results, *result_lines(play_match(preset("small-4-3"), a, b, games=4, seed=seed), {}))
    app = create_app([run], Limits(max_simulations=500, max_depth=3, max_searches=1, max_games=3), [results])
    with TestClient(app) as c:
        yield c


def _new(client, preset_name="small-4-3", side="x", **opponent):
    r = client.post("/api/games", json={"preset": preset_name, "side": side, "opponent": opponent or {"kind": "greedy"}})
    assert r.status_code == 200, r.text
    return r.json()


def _first_legal(game):
    s, ends = next(iter(game["legal"].items()))
    return int(s), ends[0]


# ---------------------------------------------------------------------------------------------
# The page and the board
# ---------------------------------------------------------------------------------------------


def test_the_page_and_its_files_are_served_from_the_package(client):
    page = client.get("/")
    assert page.status_code == 200 and "<svg id=\"board\"" in page.text
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    # no network at run time: every script and style sheet comes from this server
    assert 'src="http' not in page.text and 'href="http' not in page.text and "//cdn" not in page.text


@pytest.mark.parametrize("name", ["cc49", "star2", "small-4-3", "cc81"])
def test_board_points_come_from_the_geometry_neighbours_one_step_apart(client, name):
    rules = preset(name)
    board = client.get(f"/api/presets/{name}").json()["board"]
    assert board["cells"] == rules.cells == len(board["points"])
    assert board["kind"] == rules.geometry.kind
    assert board["homes"][0] == sorted(rules.geometry.home[0])
    pts = cell_points(rules)
    for i, steps in enumerate(rules.geometry.step):
        for j in steps:
            if j >= 0:
                d = ((pts[i][0] - pts[j][0]) ** 2 + (pts[i][1] - pts[j][1]) ** 2) ** 0.5
                assert abs(d - 1) < 1e-9, (i, j, d)
    # distinct cells never share a point
    assert len({(round(x, 6), round(y, 6)) for x, y in pts}) == rules.cells


def test_opponents_offered_per_preset(client):
    cc49 = [o["choice"] for o in client.get("/api/presets/cc49").json()["opponents"]]
    assert {"kind": "mcts", "model": "shipped", "sims": 200} in cc49
    assert any(c.get("model") == "run" and c["run"] == 0 for c in cc49) is False  # run-a has no best.json
    star = [o["choice"]["kind"] for o in client.get("/api/presets/star2").json()["opponents"]]
    assert "greedy" in star and "mcts-rollout" in star


# ---------------------------------------------------------------------------------------------
# Playing
# ---------------------------------------------------------------------------------------------


def test_a_whole_game_against_greedy_matches_the_engine(client):
    data = _new(client)
    gid, rules = data["id"], preset("small-4-3")
    state = new_state(rules)
    with client.websocket_connect(f"/ws/games/{gid}") as ws:
        game = data["game"]
        while not game["over"]:
            if game["to_move"] == 0:
                move = _first_legal(game) if not game["must_pass"] else PASS
                r = client.post(f"/api/games/{gid}/move", json={"move": list(move), "version": game["version"]})
                assert r.status_code == 200, r.text
                reply = r.json()
                if move != PASS:
                    assert reply["path"] == move_path(rules, state.board, move)
                state.play(move)
                game = reply["game"]
            else:
                ws.send_text(json.dumps({"type": "reply"}))
                msg = ws.receive_json()
                assert msg["type"] == "moved", msg
                move = tuple(msg["move"])
                assert move in state.legal_moves()
                if msg["path"]:
                    assert is_witness_path(rules, state.board, msg["path"])
                state.play(move)
                game = msg["game"]
            assert game["board"] == list(state.board)
            assert game["to_move"] == state.to_move and game["ply"] == state.ply
            assert sorted((int(s), e) for s, ends in game["legal"].items() for e in ends) == sorted(
                m for m in (state.legal_moves() if not state.is_terminal() else []) if m != PASS)
    assert game["result"] == state.result()
    exported = client.get(f"/api/games/{gid}/download").json()
    assert exported["moves"] == game["moves"] and exported["result"] == state.result()
    text = client.get(f"/api/games/{gid}/download?format=moves").text
    assert text.split() == game["moves"]


def test_undo_swap_resign_restart_and_load(client):
    data = _new(client, "cc49")
    gid = data["id"]
    move = _first_legal(data["game"])
    game = client.post(f"/api/games/{gid}/move", json={"move": list(move)}).json()["game"]
    assert game["moves"] == [f"{move[0]}-{move[1]}"]
    game = client.post(f"/api/games/{gid}/undo").json()["game"]
    assert game["moves"] == [] and game["board"] == list(preset("cc49").geometry.start_board())
    assert client.post(f"/api/games/{gid}/undo").json() == {"error": "there is no move to undo"}
    game = client.post(f"/api/games/{gid}/swap").json()["game"]
    assert game["human"] == 1
    game = client.post(f"/api/games/{gid}/resign").json()["game"]
    assert game["over"] and game["result"] == 1 and "o resigned" in game["result_text"]
    assert "already over" in client.post(f"/api/games/{gid}/resign").json()["error"]
    game = client.post(f"/api/games/{gid}/restart").json()["game"]
    assert not game["over"] and game["ply"] == 0
    rules = preset("cc49")
    state = new_state(rules)
    for m in [(41, 34), (7, 14)]:
        if m not in state.legal_moves():
            m = state.legal_moves()[0]
        state.play(m)
    text = format_position(rules, Position(tuple(state.board), state.to_move, state.ply))
    game = client.post(f"/api/games/{gid}/position", json={"text": text}).json()["game"]
    assert game["board"] == list(state.board) and game["position"] == text and game["moves"] == []


def test_a_star_position_loads_from_compact121(client):
    gid = _new(client, "star2")["id"]
    rules = preset("star2")
    state = new_state(rules)
    state.play(state.legal_moves()[0])
    text = "".join("." if v < 0 else str(v) for v in state.board) + f" {state.to_move} {state.ply}"
    game = client.post(f"/api/games/{gid}/position", json={"text": text}).json()["game"]
    assert game["board"] == list(state.board) and game["to_move"] == 1


# ---------------------------------------------------------------------------------------------
# The engine's thinking
# ---------------------------------------------------------------------------------------------


def test_analysis_streams_visit_shares_and_a_win_chance(client):
    data = _new(client, "cc49", kind="mcts", model="shipped", sims=64)
    gid = data["id"]
    with client.websocket_connect(f"/ws/games/{gid}") as ws:
        ws.send_text(json.dumps({"type": "analyze", "sims": 300}))
        seen = []
        while True:
            msg = ws.receive_json()
            seen.append(msg["type"])
            if msg["type"] != "thinking":
                break
        assert msg["type"] == "analysis", msg
        t = msg["thought"]
        assert t["simulations"] == 300 and not t["stopped"]
        assert 0 <= t["win_chance"] <= 1 and t["prior_value"] is not None
        assert t["top"] and abs(sum(m["share"] for m in t["top"]) - 1) < 0.2
        legal = {(int(s), e) for s, ends in data["game"]["legal"].items() for e in ends}
        assert all(tuple(m["move"]) in legal for m in t["top"])
        assert t["version"] == data["game"]["version"] and t["mover"] == 0


def test_a_stop_ends_a_search_early_and_the_engine_plays_its_best_so_far(client):
    data = _new(client, "cc49", side="o", kind="mcts-rollout", sims=500)
    with client.websocket_connect(f"/ws/games/{data['id']}") as ws:
        ws.send_text(json.dumps({"type": "reply"}))
        ws.send_text(json.dumps({"type": "stop"}))
        msg = ws.receive_json()
        while msg["type"] == "thinking":
            msg = ws.receive_json()
        assert msg["type"] == "moved"
        assert msg["thought"]["stopped"] and msg["thought"]["simulations"] < 500
        assert msg["game"]["ply"] == 1


#: Searches far too long to end by themselves: still running whatever the machine's speed.
ENDLESS = 1_000_000


def _endless_client() -> TestClient:
    """A server allowing one search at a time of up to :data:`ENDLESS` simulations."""
    return TestClient(create_app([], Limits(max_simulations=ENDLESS, max_depth=3, max_searches=1, max_games=3), []))


def test_searches_beyond_the_limit_are_refused_not_queued():
    with _endless_client() as client:
        first = _new(client, "cc49", side="o", kind="mcts-rollout", sims=ENDLESS)
        second = _new(client, "cc49", side="o", kind="mcts-rollout", sims=ENDLESS)
        with client.websocket_connect(f"/ws/games/{first['id']}") as ws1, \
                client.websocket_connect(f"/ws/games/{second['id']}") as ws2:
            ws1.send_text(json.dumps({"type": "reply"}))
            assert ws1.receive_json()["type"] == "thinking"  # the one search allowed is running
            ws2.send_text(json.dumps({"type": "reply"}))
            msg = ws2.receive_json()
            assert msg["type"] == "error" and "server is busy" in msg["error"] and "at most 1" in msg["error"]
            ws1.send_text(json.dumps({"type": "reply"}))
            while (msg := ws1.receive_json())["type"] == "thinking":
                pass
            assert "a search is running" in msg["error"]
            r = client.post(f"/api/games/{first['id']}/undo")
            assert "thinking" in r.json()["error"]
            ws1.send_text(json.dumps({"type": "stop"}))
            while (msg := ws1.receive_json())["type"] == "thinking":
                pass
            assert msg["type"] == "moved"
        assert client.get(f"/api/games/{second['id']}").json()["game"]["ply"] == 0


def test_the_server_answers_while_the_engine_thinks():
    # the search runs on a worker thread: requests are served meanwhile, not after it
    with _endless_client() as client:
        data = _new(client, "cc49", side="o", kind="mcts-rollout", sims=ENDLESS)
        with client.websocket_connect(f"/ws/games/{data['id']}") as ws:
            ws.send_text(json.dumps({"type": "reply"}))
            assert ws.receive_json()["type"] == "thinking"
            assert client.get("/api/info").status_code == 200
            assert client.get(f"/api/games/{data['id']}").json()["game"]["ply"] == 0
            assert "thinking" in client.post(f"/api/games/{data['id']}/undo").json()["error"]  # still searching
            ws.send_text(json.dumps({"type": "stop"}))
            while (msg := ws.receive_json())["type"] == "thinking":
                pass
            assert msg["type"] == "moved"


def test_a_search_is_cancelled_when_its_client_leaves():
    with _endless_client() as client:
        data = _new(client, "cc49", side="o", kind="mcts-rollout", sims=ENDLESS)
        server = client.app.state.server
        with client.websocket_connect(f"/ws/games/{data['id']}") as ws:
            ws.send_text(json.dumps({"type": "reply"}))
            ws.receive_json()  # thinking: the search is under way
        deadline = time.monotonic() + 20
        while server.searching and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.searching == 0  # stopped long before its million playouts
        game = client.get(f"/api/games/{data['id']}").json()["game"]
        assert game["ply"] == 0  # the search that lost its client played nothing


# ---------------------------------------------------------------------------------------------
# Bad requests: a clear error, nothing changed
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"preset": "nope"}, "unknown preset 'nope'"),
        ({"preset": "../../etc"}, "preset"),
        ({"preset": "cc49", "side": "z"}, "side"),
        ({"preset": "cc49", "opponent": {"kind": "mcts", "model": "/etc/passwd"}}, "opponent.model"),
        ({"preset": "cc49", "opponent": {"kind": "mcts", "model": "run", "run": 7}}, "run 7 does not exist"),
        ({"preset": "cc49", "opponent": {"kind": "mcts", "sims": 501}}, "at most 500"),
        ({"preset": "cc49", "opponent": {"kind": "alphabeta", "depth": 4}}, "at most 3"),
        ({"preset": "cc81", "opponent": {"kind": "mcts", "model": "shipped"}}, "no shipped model"),
        ({"preset": "cc49", "opponent": {"kind": "greedy", "spec": "mcts:model=/x"}}, "spec"),
        ({"preset": "cc49", "extra": 1}, "extra"),
    ],
)
def test_bad_new_games_are_refused(client, body, needle):
    before = len(client.app.state.server.games)
    r = client.post("/api/games", json=body)
    assert 400 <= r.status_code < 500 and needle in r.json()["error"], r.text
    assert len(client.app.state.server.games) == before


def test_bad_moves_change_nothing(client):
    data = _new(client, "small-4-3")
    gid, game = data["id"], data["game"]
    cases = [
        ({"move": [0, 99]}, "cells are 0..15"),
        ({"move": [0, 1, 2]}, "move"),
        ({"move": "8-4"}, "move"),
        ({"move": [3, 11]}, "not the side to move's"),
        ({"move": [5, 6]}, "cell 5 is empty"),
        ({"move": [-1, -1]}, "pass is legal only"),
        ({"move": list(_first_legal(game)), "version": 99}, "the game changed"),
    ]
    for body, needle in cases:
        r = client.post(f"/api/games/{gid}/move", json=body)
        assert r.status_code in (400, 422) and needle in r.json()["error"], (body, r.text)
    assert client.get(f"/api/games/{gid}").json()["game"] == game
    r = client.post(f"/api/games/{gid}/position", json={"text": "x" * 20})
    assert "position" in r.json()["error"] and client.get(f"/api/games/{gid}").json()["game"] == game
    assert client.post("/api/games/0000/move", json={"move": [8, 4]}).status_code == 404


def test_size_limits(client):
    gid = _new(client)["id"]
    r = client.post(f"/api/games/{gid}/position", content=b'{"text": "' + b"." * 20000 + b'"}',
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "too large" in r.json()["error"]

    def streamed():
        yield b'{"text": "'
        yield b"." * 100
        yield b'"}'

    r = client.post(f"/api/games/{gid}/position", content=streamed(), headers={"Content-Type": "application/json"})
    assert r.status_code == 411 and "Content-Length" in r.json()["error"]
    with client.websocket_connect(f"/ws/games/{gid}") as ws:
        ws.send_text(json.dumps({"type": "analyze", "sims": 10, "pad": "." * 20000}))
        assert "too large" in ws.receive_json()["error"]
        for text, needle in [("{}", "type"), ('{"type": "go"}', "type"), ('{"type": "analyze", "sims": 0}', "sims"),
                             ('{"type": "analyze", "sims": 501}', "at most 500"), ('{"type": "reply"}', "your turn")]:
            ws.send_text(text)
            msg = ws.receive_json()
            assert msg["type"] == "error" and needle in msg["error"], (text, msg)


def test_games_beyond_the_limit_drop_the_oldest(client):
    ids = [_new(client)["id"] for _ in range(4)]
    assert client.get(f"/api/games/{ids[0]}").status_code == 404
    assert client.get(f"/api/games/{ids[-1]}").status_code == 200


# ---------------------------------------------------------------------------------------------
# Watching a run
# ---------------------------------------------------------------------------------------------


def test_the_run_view_reads_the_runs_files(client):
    run = client.get("/api/runs/0").json()
    assert run["preset"] == "cc49" and run["best"] is None
    assert [(g["version"], g["score"], g["elo"]) for g in run["greedy"]] == [(1, 0.4, -70.0), (2, 0.7, 150.0)]
    assert run["greedy"][0]["minutes"] == pytest.approx(10.0)
    assert run["gates"][0]["decision"] == "promote" and run["promotions"][0]["version"] == "2"
    assert {r["name"] for r in run["ratings"]} == {"greedy", "v2"}
    assert client.get("/api/runs/1").json()["error"].startswith("run 1 does not exist")
    assert client.get("/api/runs/-1").status_code == 400


def test_the_run_feed_sends_changes(client, monkeypatch):
    import hopzero.web.app as web_app

    monkeypatch.setattr(web_app, "RUN_POLL_S", 0.05)
    path = client.app.state.server.runs.get(0)
    with client.websocket_connect("/ws/runs/0") as ws:
        first = ws.receive_json()["run"]
        assert len(first["greedy"]) == 2
        with open(path / "evaluations.jsonl", "a") as f:
            f.write('\n{"kind": "greedy", "wall": 1795502000.0, "version": 3, "score": 0.8, "elo": 240.0}\n')
        second = ws.receive_json()["run"]
        assert [g["version"] for g in second["greedy"]] == [1, 2, 3]


def test_the_run_view_lists_the_kept_games_newest_first(client):
    path = client.app.state.server.runs.get(0)
    kept = read_games(path)
    games = client.get("/api/runs/0").json()["games"]
    assert [g["id"] for g in games] == [g["id"] for g in reversed(kept)] == [4, 3, 2, 1, 0]
    assert games[0]["players"] in (["greedy", "random"], ["random", "greedy"])
    assert {g["kind"] for g in games} == {"greedy"}


@pytest.mark.parametrize("game_id", [0, 4])
def test_a_kept_game_replays_move_by_move(client, game_id):
    kept = next(g for g in read_games(client.app.state.server.runs.get(0)) if g["id"] == game_id)
    rules = preset(kept["preset"])
    data = client.get(f"/api/runs/0/games/{game_id}").json()
    assert data["board"]["cells"] == rules.cells and data["board"]["kind"] == rules.geometry.kind
    assert data["moves"] == kept["moves"] and data["scores"] == kept["scores"]
    assert data["players"] == kept["players"]
    seven = data["model_versions"].index(7)
    assert data["players"][seven] == "greedy"  # model versions by seat, as the players
    state = new_state(rules)
    assert data["start_board"] == list(state.board)
    for (s, e), path in zip(data["moves"], data["paths"], strict=True):
        if (s, e) == PASS:
            assert path == []
        else:
            assert path[0] == s and path[-1] == e and is_witness_path(rules, state.board, path)
        state.play((s, e))
    assert state.is_terminal() and list(state.scores()) == data["scores"]


def test_bad_game_requests_name_the_problem(client):
    for url, status, needle in [
        ("/api/runs/0/games/99", 404, "keeps no game 99"),
        ("/api/runs/0/games/-1", 422, "game_id"),
        ("/api/runs/0/games/abc", 422, "game_id"),
        ("/api/runs/0/games/games.jsonl", 422, "game_id"),
        ("/api/runs/3/games/0", 400, "run 3 does not exist"),
    ]:
        r = client.get(url)
        assert r.status_code == status and needle in r.json()["error"], (url, r.text)
    assert client.get("/api/runs/0/games/..%2F..%2Fetc%2Fpasswd").status_code in (404, 422)
    # a game damaged on disk is refused with the move that does not replay
    path = client.app.state.server.runs.get(0) / "games.jsonl"
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])
    last["moves"][-1] = [0, 0]
    path.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    r = client.get(f"/api/runs/0/games/{last['id']}")
    assert r.status_code == 400 and f"move {len(last['moves'])}" in r.json()["error"]


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


def test_the_tables_cross_the_results_and_rate_the_players(client):
    data = client.get("/api/tables").json()
    assert data["presets"] == ["small-4-3"] and data["files"] == ["results.jsonl"] and data["notes"] == []
    t = data["table"]
    assert t["anchor"] == "greedy" and t["matches"] == 3
    names = [p["name"] for p in t["players"]]
    assert sorted(names) == ["greedy", "greedy-stochastic", "random"]
    elos = [p["elo"] for p in t["players"]]
    assert elos == sorted(elos, reverse=True) and dict(zip(names, elos))["greedy"] == 0
    for i, row in enumerate(t["cells"]):
        assert row[i] is None and all(p["games"] == 8 for p in t["players"])
        for j, cell in enumerate(row):
            if i != j:  # i's record against j mirrors j's against i
                mirror = t["cells"][j][i]
                assert (cell["wins"], cell["draws"], cell["losses"]) == (mirror["losses"], mirror["draws"], mirror["wins"])
                assert cell["score"] + mirror["score"] == pytest.approx(1.0)
    assert client.get("/api/tables?preset=cc49").json()["table"]["players"] == []
    r = client.get("/api/tables?preset=../x")
    assert r.status_code == 422 and "preset" in r.json()["error"]


def test_a_bad_results_line_is_a_note_not_an_error(client):
    path = client.app.state.server.tables.paths[0]
    with open(path, "a") as f:
        f.write('{"format": "hopzero.match-result", "schema": 1, "preset": "cc49", "a": "x", "b": "y", '
                '"games": 3, "a_wins": 1, "draws": 0, "b_wins": 1}\n')
    data = client.get("/api/tables").json()
    assert data["table"] is None and "line 4" in data["notes"][0] and "games" in data["notes"][0]


def test_the_printed_address_takes_connections_as_soon_as_it_is_printed(tmp_path):
    # The socket listens before the address is printed: a page opened at once is not refused
    # while the server is still starting up (it was, every time, when only bound).
    proc = subprocess.Popen(hopzero_command() + ["serve", "--port", "0"], stdout=subprocess.PIPE, text=True,
                            cwd=tmp_path)
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
