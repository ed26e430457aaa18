"""The linear evaluation learned by TD(lambda) (Li 2016): the board features against a plain
Python computation from the geometry, learning that improves against greedy, the weights file
that `alphabeta:...,eval=linear,weights=PATH` reads (and refuses when it is not one), and
`hopzero td-train`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from test_cli import run, run_json

from ccengine import preset
from learner.players import make_player
from ccengine.alphabeta import WEIGHTS_FORMAT, AlphaBetaPlayer, read_weights
from ccengine.engines import new_state
from ccengine.players import PlayerSpecError
from evaluator.arena import play_match
from learner.td_learning import TDConfig, train_td


def python_features(rules, board, p):
    """FEATURES of player ``p`` (board cells hold 0, 1 or -1 for empty), from the geometry alone."""
    geo = rules.geometry
    goal, home = geo.goal(p), geo.goal(1 - p)
    steps = {c: 0 for c in goal}
    frontier = list(goal)
    while frontier:  # breadth-first from the goal over single steps
        nxt = []
        for c in frontier:
            for d in range(6):
                x = geo.offset(c, d, 1)
                if x >= 0 and x not in steps:
                    steps[x] = steps[c] + 1
                    nxt.append(x)
        frontier = nxt
    mine = [c for c in range(rules.cells) if board[c] == p]
    f = [0.0] * 7
    for c in mine:
        f[0] += geo.advance(p, c)
        f[1] += c in goal
        f[2] += c in home
        f[3] = max(f[3], steps[c])
        f[4] += steps[c] ** 2
        forward = False
        for d in range(6):
            x, y = geo.offset(c, d, 1), geo.offset(c, d, 2)
            if x >= 0 and board[x] < 0 and geo.advance(p, x) > geo.advance(p, c):
                forward = True
            if x >= 0 and y >= 0 and board[x] >= 0 and board[y] < 0 and geo.advance(p, y) > geo.advance(p, c):
                f[5] += 1
                forward = True
        f[6] += not forward
    return f


@pytest.mark.parametrize("name", ["cc49", "paper", "small-5-3", "star2"])
def test_features_agree_with_the_geometry(name):
    rules = preset(name)
    player = AlphaBetaPlayer(rules, depth=1)
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(6):
        state = new_state(rules)
        for _ in range(int(rng.integers(0, 60))):
            if state.is_terminal():
                break
            moves = state.legal_moves()
            state.play(moves[int(rng.integers(len(moves)))])
        got = player.features(state)
        for p in (0, 1):
            assert got[p] == python_features(rules, list(state.board), p)
            checked += 1
    assert checked == 12


def test_learning_beats_its_start_against_greedy():
    rules = preset("cc49")
    result = train_td(rules, TDConfig(episodes=300), seed=1)
    scores = [(r + 1) / 2 for r in result.results]
    assert np.mean(scores[:50]) < 0.1 < 0.25 < np.mean(scores[-100:])  # measured: 0.0 and 0.35
    assert result.curve()[-1] == pytest.approx(np.mean(scores[-100:]))
    assert train_td(rules, TDConfig(episodes=20), seed=4).weights == train_td(rules, TDConfig(episodes=20),
                                                                              seed=4).weights


def test_the_command_writes_weights_the_search_plays(tmp_path):
    data = run_json("td-train", "--preset", "small-5-3", "--episodes", "200", "--seed", "2", "--out", str(tmp_path))
    assert data["episodes"] == 200 and len(data["weights"]) == 7
    doc = json.loads((tmp_path / "weights.json").read_text())
    assert doc["format"] == WEIGHTS_FORMAT and doc["preset"] == "small-5-3" and doc["trained"]["seed"] == 2
    assert len((tmp_path / "curve.jsonl").read_text().splitlines()) == 200
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
    rules = preset("small-5-3")
    assert read_weights(tmp_path / "weights.json", rules) == data["weights"]
    spec = f"alphabeta:depth=2,eval=linear,weights={tmp_path / 'weights.json'}"
    match = play_match(rules, spec, "random", games=10, seed=1)
    assert match.a_wins >= 9


def test_bad_weights_are_refused_with_the_reason(tmp_path):
    rules = preset("cc49")
    good = {"format": WEIGHTS_FORMAT, "preset": "cc49",
            "features": ["advance", "in_goal", "at_home", "rear_steps", "sum_sq_steps", "forward_hops", "blocked"],
            "weights": [1, 0, 0, 0, 0, 0, 0], "trained": {}, "versions": {}}
    cases = [
        ("not json {", "not JSON"),
        (json.dumps({**good, "format": "x"}), "not a weights file"),
        (json.dumps({**good, "preset": "paper"}), "weights for 'paper', not 'cc49'"),
        (json.dumps({**good, "features": ["advance"]}), "weights for features"),
        (json.dumps({**good, "weights": [1, 2]}), "7 finite numbers"),
        (json.dumps({**good, "weights": [1, 0, 0, 0, 0, 0, math.inf]}).replace("Infinity", "1e999"), "7 finite"),
        (json.dumps({**good, "weights": [True, 0, 0, 0, 0, 0, 0]}), "7 finite numbers"),
    ]
    for k, (text, words) in enumerate(cases):
        path = tmp_path / f"w{k}.json"
        path.write_text(text)
        with pytest.raises(PlayerSpecError, match=words):
            make_player(f"alphabeta:eval=linear,weights={path}", rules)
    (tmp_path / "good.json").write_text(json.dumps(good))
    assert make_player(f"alphabeta:eval=linear,weights={tmp_path / 'good.json'}", rules).select(new_state(rules))
    with pytest.raises(PlayerSpecError, match="weights=PATH goes with eval=linear"):
        make_player(f"alphabeta:weights={tmp_path / 'good.json'}", rules)
    with pytest.raises(PlayerSpecError, match="eval=linear needs it"):
        make_player("alphabeta:eval=linear", rules)
    bad = run("td-train", "--alpha", "3", "--out", str(tmp_path / "x"), check=False)
    assert bad.returncode == 2 and "alpha" in bad.stderr and "Traceback" not in bad.stderr
