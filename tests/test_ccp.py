"""The CCP engine protocol, driven as a subprocess the way a rating-list referee drives it."""

from __future__ import annotations

import json

import pytest
from ccp_helpers import cells_text, engine  # noqa: F401 - engine is a fixture

from ccengine import move_path, new_state, preset
from learner.players import make_player


def test_a_whole_game_refereed_move_by_move(engine):
    """The referee owns the game: it sends every position and checks every bestmove."""
    rules = preset("cc49")
    e = engine("--preset", "cc49", "--player", "greedy", "--seed", "3")
    opponent = make_player("greedy-stochastic", rules, seed=7)
    state = new_state(rules)
    e.send("ccp")
    e.until("ccpok")
    e.send("newgame")
    while not state.is_terminal():
        if state.to_move == 0:  # the engine plays x
            e.send(f"position cells {cells_text(state)} player {state.to_move} ply {state.ply}")
            e.send("go nodes 50")
            reply = e.until("bestmove")[-1].split()[1]
            if reply == "pass":
                move = (-1, -1)
            else:
                path = [int(c) for c in reply.split("-")]
                move = (path[0], path[-1])
                assert path == move_path(rules, state.board, move)
            assert move in state.legal_moves(), f"engine answered an illegal move {reply}"
        else:
            move = opponent.select(state)
        state.play(move)
    assert state.result() in (-1, 0, 1)
    assert state.ply > 10
    assert e.close() == 0


def test_startpos_with_moves_gives_the_game(engine):
    """``position startpos moves ...`` (our extension): the moves as ``s-e`` or witness paths."""
    rules = preset("cc49")
    state = new_state(rules)
    players = [make_player("greedy-stochastic", rules, seed=s) for s in (8, 9)]
    written = []
    for _ in range(7):
        move = players[state.to_move].select(state)
        path = move_path(rules, state.board, move)
        written.append("-".join(map(str, path if len(written) % 2 else move)))
        state.play(move)
    e = engine("--preset", "cc49", "--player", "greedy")
    e.send("position startpos moves " + " ".join(written))
    e.send("go nodes 1")
    best = [int(c) for c in e.until("bestmove")[-1].split()[1].split("-")]
    assert (best[0], best[-1]) in state.legal_moves()
    assert e.close() == 0


def test_analyze_reports_json(engine):
    e = engine("--preset", "cc49", "--player", "greedy-stochastic")
    e.send("position startpos")
    e.send("analyze topk 3")
    line = e.until("analysis")[-1]
    data = json.loads(line[len("analysis ") :])
    assert set(data) == {"value", "moves"} and 1 <= len(data["moves"]) <= 3
    assert all({"move", "policy"} <= set(m) for m in data["moves"])
    assert sum(m["policy"] for m in data["moves"]) <= 1.0 + 1e-6


@pytest.mark.parametrize(
    "command",
    [
        "fly",
        "position cells 0000 player 0 ply 0",
        "position cells " + "." * 49 + " player 0 ply 0",
        "position cells " + "x" * 49 + " player 0 ply 0",
        "position cells " + "." * 37 + "000000" + "111111" + " player 2 ply 0",
        "position startpos please",
        "go nodes many",
        "analyze topk 0",
    ],
)
def test_bad_input_is_an_error_line_and_the_engine_goes_on(engine, command):
    e = engine("--preset", "cc49", "--player", "greedy")
    e.send(command)
    e.send("isready")
    lines = e.until("readyok")
    assert lines[0].startswith("info string error"), lines
    e.send("position startpos")
    e.send("go nodes 1")
    assert e.until("bestmove")[-1].startswith("bestmove ")
    assert e.close() == 0


def test_search_player_behind_the_protocol(engine):
    """``go nodes`` overrides the player's simulations; ``analyze`` reports visit shares."""
    e = engine("--preset", "small-5-6", "--player", "mcts-rollout:sims=2000", "--seed", "1")
    e.send("position startpos")
    e.send("analyze topk 40")
    data = json.loads(e.until("analysis")[-1][len("analysis ") :])
    assert abs(sum(m["policy"] for m in data["moves"]) - 1.0) < 1e-3 and -1 <= data["value"] <= 1
    e.send("go nodes 30")
    best = e.until("bestmove")[-1].split()[1]
    path = [int(c) for c in best.split("-")]
    assert (path[0], path[-1]) in new_state(preset("small-5-6")).legal_moves()
    e.send("go movetime 100")
    assert e.until("bestmove")[-1].startswith("bestmove ")
    assert e.close() == 0


def test_a_player_that_keeps_its_tree_searches_on_through_the_referees_moves():
    """With ``reuse=1`` each ``go`` after ``position startpos moves ...`` starts from the subtree
    the moves since the last search lead to (the engine's game carries them)."""
    from hopzero.ccp import CCPEngine

    e = CCPEngine(preset("small-5-6"), "mcts-rollout:sims=64,reuse=1", seed=1)
    moves: list[str] = []
    searched = []
    for _ in range(4):
        moves.append(e.handle("go")[-1].split()[1])
        searched.append(e.player._last[1].simulations)  # the search behind that bestmove
        e.handle("position startpos moves " + " ".join(moves))
    assert searched[0] == 64 and all(n > 64 for n in searched[1:])
