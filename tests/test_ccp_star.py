"""The CCP engine protocol on the 121-hole star (preset ``star2``, the CCERL-2P10-v2 rules).

Two real ``hopzero engine --preset star2`` subprocesses play whole games against each other,
refereed by the pure-Python reference engine, which checks every ``bestmove`` (its witness path
hop by hop) and sends the positions: to one engine as ``position cells <COMPACT121> player P ply
N``, to the other as ``position startpos moves ...``. The players are the ones that play the star
today (greedy, greedy-stochastic, random); no test here depends on a tree search.
"""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from ccp_helpers import cells_text, engine  # noqa: F401 - engine is a fixture

from ccengine import new_state, preset
from ccengine.reference import ReferenceState, is_witness_path, move_path
from ccengine.star import STAR_DIRECTIONS

RULES = preset("star2")
GEO = RULES.geometry
#: Every way a star2 game may end (ccengine.reference.star_end), with the results it allows.
END_RESULTS = {
    "both_home": {0},
    "equal_turn": {0},
    "all_home": {1, -1},
    "anti_block": {1, -1},
    "repetition": {0},
    "max_plies": {0},
    "no_move": {0},
}


def _cells_command(state) -> str:
    return f"position cells {cells_text(state)} player {state.to_move} ply {state.ply}"


def _bestmove_path(e) -> list[int]:
    reply = e.until("bestmove")[-1].split()
    assert len(reply) == 2 and reply[1] != "pass", reply
    return [int(c) for c in reply[1].split("-")]


def _is_step_or_hops(board: tuple[int, ...], path: list[int]) -> bool:
    """The path's geometry checked apart from the engines: one step to an empty neighbour, or
    hops each over an occupied neighbour onto the empty cell beyond (the moving piece lifted)."""
    lifted = list(board)
    lifted[path[0]] = -1
    if len(path) == 2 and path[1] in GEO.step[path[0]]:
        return lifted[path[1]] == -1
    for a, b in pairwise(path):
        (qa, ra), (qb, rb) = GEO.coords[a], GEO.coords[b]
        direction = ((qb - qa) // 2, (rb - ra) // 2)
        if direction not in STAR_DIRECTIONS or (qb - qa, rb - ra) != (2 * direction[0], 2 * direction[1]):
            return False
        over = GEO.index[(qa + direction[0], ra + direction[1])]
        if lifted[over] == -1 or lifted[b] != -1:
            return False
    return True


def _referee(engines, go_commands) -> tuple[ReferenceState, list[str]]:
    """Play one game between two engine subprocesses; returns the finished reference state and
    the moves as sent (witness paths up to 3 cells, longer chains by their ends)."""
    ref = ReferenceState(RULES)
    sent: list[str] = []
    for e in engines:
        e.send("ccp")
        assert "info string preset star2 cells 121 pieces 10" in e.until("ccpok")
        e.send("newgame")
    while not ref.is_terminal():
        mover = ref.to_move
        e = engines[mover]
        if mover == 0:
            e.send(_cells_command(ref))
        else:
            e.send("position startpos moves " + " ".join(sent) if sent else "position startpos")
        e.send(go_commands[ref.ply % len(go_commands)])
        path = _bestmove_path(e)
        move = (path[0], path[-1])
        assert move in ref.legal_moves(), f"ply {ref.ply}: illegal bestmove {path}"
        assert len(set(path)) == len(path) and _is_step_or_hops(ref.board, path), f"ply {ref.ply}: path {path}"
        assert is_witness_path(RULES, ref.board, path), f"ply {ref.ply}: path {path} breaks the goal lock"
        ref.play(move)
        sent.append("-".join(map(str, path if len(path) <= 3 else move)))
    return ref, sent


@pytest.mark.parametrize(
    "players, seeds",
    [(("greedy", "greedy-stochastic"), (1, 2)), (("greedy-stochastic", "greedy"), (5, 6))],
)
def test_whole_star2_games_refereed_move_by_move(engine, players, seeds):
    engines = [engine("--preset", "star2", "--player", p, "--seed", str(s)) for p, s in zip(players, seeds)]
    ref, sent = _referee(engines, ["go nodes 10", "go movetime 5"])
    assert ref.end_reason in END_RESULTS and ref.result() in END_RESULTS[ref.end_reason], (ref.end_reason, ref.result())
    assert 0 < ref.ply <= RULES.max_plies and ref.ply == len(sent)
    assert ref.end_reason != "max_plies" or ref.ply == RULES.max_plies
    # the compiled engine replays the same game to the same end
    state = new_state(RULES)
    for text in sent:
        cells = [int(c) for c in text.split("-")]
        state.play((cells[0], cells[-1]))
    assert state.is_terminal() and (state.result(), state.end_reason) == (ref.result(), ref.end_reason)
    # both engines kept the game (the repetition draw needs its history) and know it is over; one
    # over only by its history plays on from the position, which a referee may still judge open
    engines[0].send(_cells_command(ref))
    engines[1].send("position startpos moves " + " ".join(sent))
    for e in engines:
        e.send("go nodes 1")
        lines = e.until("bestmove")
        if ref.end_reason == "repetition":
            assert lines[0] == ("info string the game is over in this engine's history (repetition, scores 0.5,0.5); "
                                "the position has legal moves: playing on from it"), lines
            path = [int(c) for c in lines[-1].split()[1].split("-")]
            assert (path[0], path[-1]) in ReferenceState(RULES, ref.board, ref.to_move, ref.ply).legal_moves()
        else:
            scores = ",".join(f"{x:g}" for x in ref.scores())
            assert lines == [f"info string error the game is over (scores {scores})", "bestmove pass"], lines
        assert e.close() == 0
        assert "Traceback" not in e.stderr()


def _shuffle_to_repetition() -> list[tuple[int, int]]:
    """Eight plies that bring the start position back twice: both sides step a piece out and back."""
    state = new_state(RULES)
    outs = []
    for _ in range(2):
        step = next(m for m in state.legal_moves() if m[1] in GEO.step[m[0]])
        outs.append(step)
        state.play(step)
    there_and_back = [outs[0], outs[1], outs[0][::-1], outs[1][::-1]]
    return there_and_back * 2


def test_the_repetition_draw_needs_the_history_the_engine_kept(engine):
    """Positions sent one by one build the history: at the third occurrence of the start position
    the game is over for the engine that followed it, and not for one that sees it cold. The
    follower says so, and answers a legal move all the same: the position has moves, and a
    referee that judges positions alone plays on."""
    moves = _shuffle_to_repetition()
    follower = engine("--preset", "star2", "--player", "greedy")
    state = new_state(RULES)
    follower.send(_cells_command(state))
    for m in moves:
        state.play(m)
        follower.send(_cells_command(state))
    assert state.is_terminal() and state.end_reason == "repetition" and state.ply == 8
    belief = ("info string the game is over in this engine's history (repetition, scores 0.5,0.5); "
              "the position has legal moves: playing on from it")
    follower.send("go nodes 1")
    lines = follower.until("bestmove")
    assert lines[0] == belief, lines
    path = [int(c) for c in lines[-1].split()[1].split("-")]
    assert (path[0], path[-1]) in new_state(RULES).legal_moves()
    cold = engine("--preset", "star2", "--player", "greedy")
    cold.send(_cells_command(state))
    cold.send("go nodes 1")
    lines = cold.until("bestmove")
    assert not any(line.startswith("info string") for line in lines), lines  # for it the start is new
    # the moves form gives the history in one line, also as hop paths or plain ends
    told = engine("--preset", "star2", "--player", "greedy")
    told.send("position startpos moves " + " ".join(f"{s}-{e}" for s, e in moves))
    told.send("go nodes 1")
    assert told.until("bestmove")[0] == belief
    for e in (follower, cold, told):
        assert e.close() == 0


def test_analyze_on_the_star_reports_witness_paths(engine):
    e = engine("--preset", "star2", "--player", "random", "--seed", "3")  # its policy: every legal move
    state = new_state(RULES)
    while all(len(move_path(RULES, state.board, m)) == 2 for m in state.legal_moves()):  # until a chain exists
        state.play(max(state.legal_moves(), key=lambda m: GEO.forward_distance(state.to_move, m)))
    e.send(_cells_command(state))
    e.send("analyze topk 1000")
    line = e.until("analysis")[-1]
    assert line.count("\n") == 0 and line.startswith("analysis {")
    data = json.loads(line[len("analysis ") :])
    assert set(data) == {"value", "moves"} and data["value"] == 0
    assert abs(sum(m["policy"] for m in data["moves"]) - 1) < 1e-3
    for m in data["moves"]:
        path = [int(c) for c in m["move"].split("-")]
        assert (path[0], path[-1]) in state.legal_moves() and is_witness_path(RULES, state.board, path)
    assert any(len(m["move"].split("-")) > 2 for m in data["moves"])  # a hop chain, written whole
    e.send("analyze topk 2")
    assert len(json.loads(e.until("analysis")[-1][len("analysis ") :])["moves"]) == 2
    e.send("stop")  # nothing runs: no reply
    e.send("isready")
    assert e.until("readyok") == ["readyok"]
    assert e.close() == 0


def test_a_search_player_behind_the_protocol_on_the_star(engine):
    """The tree search on the star through CCP: ``analyze`` gives visit shares over witness
    paths, and ``stop`` ends a search that would run for a day with a legal witness path."""
    e = engine("--preset", "star2", "--player", "mcts-rollout:sims=16", "--seed", "2", "--max-movetime-ms", "86400000")
    state = new_state(RULES)
    for move in [(3, 16), (117, 106)]:
        state.play(move)
    e.send("position startpos moves 3-16 117-106")
    e.send("analyze topk 1000")
    data = json.loads(e.until("analysis")[-1][len("analysis ") :])
    assert abs(sum(m["policy"] for m in data["moves"]) - 1) < 1e-3 and -1 <= data["value"] <= 1
    for m in data["moves"]:
        path = [int(c) for c in m["move"].split("-")]
        assert (path[0], path[-1]) in state.legal_moves() and is_witness_path(RULES, state.board, path)
    e.send("go movetime 86400000")
    e.send("isready")  # answered between chunks of the running search: it is running
    assert e.until("readyok") == ["readyok"]
    e.send("stop")
    path = _bestmove_path(e)
    assert (path[0], path[-1]) in state.legal_moves() and is_witness_path(RULES, state.board, path)
    assert e.close() == 0
