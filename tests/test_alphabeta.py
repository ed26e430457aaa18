"""The classical baseline ``alphabeta:depth=D`` (ccengine/_alphabeta.pyx, ccengine/alphabeta.py).

Wins in one on the rhombus and the star, the exact minimax value against a plain Python negamax
over the reference engine, the draw by repetition on the star (sought when losing, avoided when
winning), legal moves on every preset, the SPEC's errors, and a match on the command line.
"""

from __future__ import annotations

import json
import random
import subprocess

import pytest
from test_cli import hopzero_command

from ccengine import _core
from ccengine._alphabeta import MATE, AlphaBetaSearch
from ccengine.alphabeta import AlphaBetaPlayer
from ccengine.players import PlayerSpecError
from learner.players import make_player
from ccengine.reference import ReferenceState
from ccengine.rules import PASS, Rules, preset

STAR2 = preset("star2")
GEO = STAR2.geometry


def _played(rules: Rules, plies: int, seed: int, engine=_core.State):
    """A state after up to ``plies`` random plies (forward-biased on the star, which is big)."""
    rng = random.Random(seed)
    state = engine(rules)
    advance = rules.geometry.advances
    for _ in range(plies):
        moves = state.legal_moves()
        if state.is_terminal() or not moves:
            break
        if rules.is_star and rng.random() < 0.7:
            p = state.to_move
            moves = [m for m in moves if m == PASS or advance[p][m[1]] > advance[p][m[0]]] or moves
        state.play(rng.choice(moves))
    return state


# ---------------------------------------------------------------------------------------------
# Wins in one
# ---------------------------------------------------------------------------------------------


def _rhombus_win_in_one() -> tuple[_core.State, tuple[int, int]]:
    """cc49: player 0 has five pieces in its goal and the sixth one step from the free goal cell."""
    rules = preset("cc49")
    goal = sorted(rules.geometry.goal(0), key=lambda i: rules.geometry.advances[0][i])
    hole = goal[0]  # the goal's least advanced cell: it has neighbours outside the goal
    outside = next(c for c in rules.geometry.step[hole] if c >= 0 and c not in goal)
    board = [-1] * rules.geometry.cells
    for c in goal[1:] + [outside]:
        board[c] = 0
    middle = [c for c in range(rules.geometry.cells) if board[c] == -1 and c != hole
              and c not in rules.geometry.goal(1) and 4 <= rules.geometry.advances[0][c] <= 6]
    for c in middle[:6]:
        board[c] = 1
    return _core.State(rules, board, 0, 40), (outside, hole)


def _star_win_in_one() -> tuple[_core.State, tuple[int, int]]:
    """star2: player 0 has nine pieces in its goal and the tenth one step from the free cell."""
    goal = sorted(GEO.goal(0))
    hole = next(h for h in goal if any(n >= 0 and n not in goal for n in GEO.step[h]))
    outside = next(n for n in GEO.step[hole] if n >= 0 and n not in goal)
    board = [-1] * GEO.cells
    for c in [g for g in goal if g != hole] + [outside]:
        board[c] = 0
    middle = sorted(c for c in range(GEO.cells) if board[c] == -1 and GEO.coords[c][1] in (0, 1) and c != hole)
    for c in middle[:10]:
        board[c] = 1
    return _core.State(STAR2, board, 0, 60), (outside, hole)


@pytest.mark.parametrize("build", [_rhombus_win_in_one, _star_win_in_one], ids=["cc49", "star2"])
@pytest.mark.parametrize("depth", [1, 2, 4])
def test_a_win_in_one_is_found_and_scored_exactly(build, depth):
    state, winning = build()
    assert not state.is_terminal()
    after = state.copy()
    after.play(winning)
    assert after.result() == 1  # the position is what it claims
    search = AlphaBetaSearch(_core.tables_for(state.rules))
    move, score, nodes = search.search(state, depth)
    assert move == winning and score == MATE - 1 and nodes >= 1
    player = make_player(f"alphabeta:depth={depth}", state.rules)
    assert player.select(state) == winning
    assert player.analyze(state) == (1.0, [(winning, 1.0)])


def test_the_loser_delays_and_the_score_counts_plies():
    """Player 1 to move, player 0 wins next move whatever happens: the loss is scored -(MATE - 2)."""
    state, winning = _rhombus_win_in_one()
    board = list(state.board)
    loser_view = _core.State(state.rules, board, 1, 41)
    # player 1 cannot stop the win: none of its moves reaches the goal's hole
    assert winning[1] not in {m[1] for m in loser_view.legal_moves()}
    _, score, _ = AlphaBetaSearch(_core.tables_for(state.rules)).search(loser_view, 3)
    assert score == -(MATE - 2)


# ---------------------------------------------------------------------------------------------
# The exact minimax value: a Python negamax over the reference engine
# ---------------------------------------------------------------------------------------------


def _advance_eval(rules: Rules, state: ReferenceState) -> int:
    """The ``advance`` evaluation, written again: total advance, side to move minus the other."""
    advance = rules.geometry.advances
    total = [0, 0]
    for cell, owner in enumerate(state.board):
        if owner >= 0:
            total[owner] += advance[owner][cell]
    return total[state.to_move] - total[1 - state.to_move]


def _negamax(rules: Rules, state: ReferenceState, depth: int, distance: int = 0) -> int:
    """Plain negamax, no pruning: finished games score MATE - plies from the root."""
    if state.is_terminal():
        mover_view = state.result() if state.to_move == 0 else -state.result()
        return mover_view * (MATE - distance)
    if depth == 0:
        return _advance_eval(rules, state)
    best = -(10**9)
    for move in state.legal_moves():
        state.play(move)
        best = max(best, -_negamax(rules, state, depth - 1, distance + 1))
        state.undo()
    return best


@pytest.mark.parametrize(
    ("name", "depth", "count"), [("small-4-3", 1, 20), ("small-4-3", 2, 20), ("small-4-3", 3, 8), ("small-5-6", 2, 8)]
)
def test_the_search_value_is_the_minimax_value(name, depth, count):
    rules = preset(name)
    search = AlphaBetaSearch(_core.tables_for(rules), evaluation="advance")
    checked = 0
    for seed in range(200):
        fast = _played(rules, random.Random(seed).randrange(0, 30), seed)
        if fast.is_terminal():
            continue
        ref = ReferenceState(rules, fast.board, fast.to_move, fast.ply)
        want = _negamax(rules, ref, depth)
        move, score, _ = search.search(_core.State(rules, fast.board, fast.to_move, fast.ply), depth)
        assert score == want, (name, seed, depth)
        ref.play(move)  # the chosen move reaches that value
        assert -_negamax(rules, ref, depth - 1, 1) == want
        checked += 1
        if checked == count:
            break
    assert checked == count


# ---------------------------------------------------------------------------------------------
# Repetition on the star
# ---------------------------------------------------------------------------------------------


def _far_apart(front: int) -> list[int]:
    """A star2 board: side ``front`` has its ten pieces far advanced (two rows before its goal),
    the other side has its ten at home."""
    ahead = [c for c in range(GEO.cells) if GEO.advances[front][c] in (10, 11) and c not in GEO.home[1 - front]]
    board = [-1] * GEO.cells
    for c in ahead[:10]:
        board[c] = front
    for c in sorted(GEO.home[1 - front])[:10]:
        board[c] = 1 - front
    return board


def _step(state: _core.State, forward: bool) -> tuple[int, int]:
    """A single step of the side to move one row forward (or backward)."""
    advance = GEO.advances[state.to_move]
    for s, e in state.legal_moves():
        if e in GEO.step[s] and advance[e] - advance[s] == (1 if forward else -1):
            return s, e
    raise AssertionError("no such step")


def _cycle(front: int, p1_forward_first: bool) -> tuple[_core.State, list[tuple[int, int]]]:
    """Position X (player 0 to move) and a four-ply cycle back to it: player 0 steps and player 1
    steps, then both step back. The caller plays the cycle once and three plies of it again, so
    that player 1's last step back would make X's third occurrence: a draw."""
    state = _core.State(STAR2, _far_apart(front), 0, 20)
    m0 = _step(state, forward=True)
    probe = state.copy()
    probe.play(m0)
    m1 = _step(probe, forward=p1_forward_first)
    return state, [m0, m1, m0[::-1], m1[::-1]]


def test_the_losing_side_takes_the_repetition_draw():
    # player 0 far ahead; player 1 stepped forward, so the drawing step back looks bad
    state, cycle = _cycle(front=0, p1_forward_first=True)
    for move in cycle + cycle[:3]:
        state.play(move)
    draw_move = cycle[3]
    assert state.to_move == 1 and not state.is_terminal() and state.occurrences == 2
    search = AlphaBetaSearch(_core.tables_for(STAR2))
    for depth in (1, 3):
        assert search.search(state, depth)[:2] == (draw_move, 0)
    # the same position without its history: no draw in sight, a worse score and another move
    fresh = _core.State(STAR2, state.board, state.to_move, state.ply)
    move, score, _ = search.search(fresh, 1)
    assert move != draw_move and score < 0
    assert make_player("alphabeta:depth=2", STAR2).select(state) == draw_move


@pytest.mark.parametrize("depth", [1, 3])
def test_the_winning_side_avoids_the_repetition_draw(depth):
    # C: player 1, far ahead, to move; b: its best move when C has no past
    search = AlphaBetaSearch(_core.tables_for(STAR2))
    fresh = _core.State(STAR2, _far_apart(front=1), 1, 23)
    b, score, _ = search.search(fresh, depth)
    assert score > 0
    # a game through Y = C after b: Y, p0 steps, p1 plays b backward (C), p0 steps back, p1 plays b
    # (Y again), and the same three plies again: C with Y seen twice, so b now draws
    y = fresh.copy()
    y.play(b)
    state = _core.State(STAR2, y.board, 0, 20)
    m0 = _step(state, forward=True)
    cycle = [m0, b[::-1], m0[::-1], b]
    for move in cycle + cycle[:3]:
        state.play(move)  # raises if b's way back is not legal there
    assert state.board == fresh.board and state.to_move == 1 and state.occurrences == 2
    probe = state.copy()
    probe.play(b)
    assert probe.end_reason == "repetition"
    move, score, _ = search.search(state, depth)
    assert move != b and score > 0


def test_a_reference_state_carries_its_history_into_the_search():
    state, cycle = _cycle(front=0, p1_forward_first=True)
    ref = ReferenceState(STAR2, state.board, state.to_move, state.ply)
    for move in cycle + cycle[:3]:
        ref.play(move)
    assert make_player("alphabeta:depth=1", STAR2).select(ref) == cycle[3]


# ---------------------------------------------------------------------------------------------
# Legal moves everywhere, speed on the star, determinism
# ---------------------------------------------------------------------------------------------

PRESETS = ["paper", "cc49", "cc81", "small-4-1", "small-4-3", "small-5-6", "small-6-6", "star2"]


@pytest.mark.parametrize("name", PRESETS)
def test_the_move_is_always_legal(name):
    rules = preset(name)
    players = [make_player("alphabeta:depth=1", rules), make_player("alphabeta:depth=2", rules)]
    checked = 0
    for seed in range(40):
        state = _played(rules, random.Random(seed).randrange(0, 120), seed)
        if state.is_terminal():
            continue
        for player in players:
            move = player.select(state)
            assert move in state.legal_moves(), (name, seed)
        checked += 1
    assert checked >= 20


def test_the_search_is_deterministic_and_leaves_the_state_alone():
    state = _played(STAR2, 40, 7)
    before = (state.board, state.to_move, state.ply, state.occurrences)
    a = make_player("alphabeta:depth=3", STAR2)
    b = make_player("alphabeta:depth=3", STAR2)
    b.select(_played(STAR2, 30, 8))  # another position in b's table first
    assert a.think(state) == b.think(state)
    assert (state.board, state.to_move, state.ply, state.occurrences) == before


# ---------------------------------------------------------------------------------------------
# The SPEC
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("alphabeta:depth=0", "must be at least 1"),
        ("alphabeta:depth=13", "must be at most 12"),
        ("alphabeta:depth=-2", "must be at least 1"),
        ("alphabeta:depth=three", "is not an integer"),
        ("alphabeta:depth=2.5", "is not an integer"),
        ("alphabeta:depth=", "is not an integer"),
        ("alphabeta:eval=psi", "valid: distance, advance"),
        ("alphabeta:tt=4", "must be at least 10"),
        ("alphabeta:width=3", "unknown option 'width'"),
        ("alphabeta:depth=2,depth=3", "given twice"),
    ],
)
def test_bad_specs_are_refused_clearly(spec, message):
    with pytest.raises(PlayerSpecError, match=message):
        make_player(spec, preset("cc49"))


def test_good_specs_build_the_player():
    player = make_player("alphabeta", preset("cc49"))
    assert isinstance(player, AlphaBetaPlayer) and player.depth == 3 and player.name == "alphabeta"
    player = make_player("alphabeta:depth=12,eval=advance,tt=12", preset("small-4-3"))
    assert player.depth == 12 and player.name == "alphabeta:depth=12,eval=advance,tt=12"
    with pytest.raises(ValueError, match="depth=0 must be in 1..12"):
        AlphaBetaSearch(_core.tables_for(preset("cc49"))).search(_core.State(preset("cc49")), 0)


def test_match_on_the_command_line_with_and_without_parallel():
    args = [*hopzero_command(), "match", "--preset", "small-5-6", "--a", "alphabeta:depth=2",
            "--b", "greedy", "--games", "4", "--seed", "1", "--json"]
    results = []
    for extra in ([], ["--parallel", "4"]):
        proc = subprocess.run(args + extra, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stdout))
    for key in ("a_wins", "b_wins", "draws", "mean_plies"):
        assert results[0][key] == results[1][key]
    assert results[0]["a_wins"] + results[0]["b_wins"] + results[0]["draws"] == 4
