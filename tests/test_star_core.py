"""The compiled engine on the 121-hole star (preset ``star2``) against the pure-Python reference.

Games played to their end move by move in both engines (every position's legal moves, result, end
reason, repetition count and hash compared), games biased towards the goals (so pieces stand in
their goals under the chain lock) and towards undoing the last move (so positions repeat), and
hand-built endings: equal turns, anti-block, no move. Perft of the start:
tests/test_conformance.py.
"""

from __future__ import annotations

import json
import pickle
import random
import subprocess

import numpy as np
import pytest

from ccengine import _core
from ccengine.perft_data import STAR_START_PERFT
from ccengine.reference import IllegalMoveError, ReferenceState
from ccengine.rules import Rules, preset
from test_cli import hopzero_command
from engine_helpers import scratch_hash

STAR2 = preset("star2")
GEO = STAR2.geometry
#: star2 and the variants that switch one of its rules off (each changes moves or endings).
VARIANTS = [
    STAR2,
    STAR2.replace(goal_lock=True, name="star2-destination-lock"),
    STAR2.replace(goal_lock=False, win_rule="all_own", equal_turn=False, repetition=0, name="star2-openspiel"),
    STAR2.replace(repetition=2, max_plies=120, name="star2-rep2-120"),
    # the training-only distance adjudication of the move limit, and its order against repetition
    STAR2.replace(adjudicate="distance", distance_margin=0, max_plies=120, name="star2-distance-120"),
]


def assert_same(fast: _core.State, ref: ReferenceState) -> None:
    """Both engines hold the same position, moves, result and end reason."""
    assert fast.board == ref.board
    assert (fast.to_move, fast.ply) == (ref.to_move, ref.ply)
    assert fast.legal_moves() == ref.legal_moves()
    assert (fast.is_terminal(), fast.result(), fast.end_reason) == (ref.is_terminal(), ref.result(), ref.end_reason)
    if ref.rules.repetition:
        assert fast.occurrences == ref.seen[ref.key()]
    assert fast.hash == scratch_hash(fast)


def _advance(player: int, move: tuple[int, int]) -> int:
    return GEO.forward_distance(player, move)


def _pick(rng: random.Random, state: _core.State, last: dict[int, tuple[int, int]], style: str) -> tuple[int, int]:
    """A move: mostly forward (``forward``), or often taking back the mover's last move (``shuffle``)."""
    moves = state.legal_moves()
    player = state.to_move
    back = last.get(player)
    if style == "shuffle" and back is not None and back[::-1] in moves and rng.random() < 0.7:
        return back[::-1]
    if rng.random() < 0.75:
        best = max(_advance(player, m) for m in moves)
        moves = [m for m in moves if _advance(player, m) == best]
    return moves[rng.randrange(len(moves))]


def _play_game(rules: Rules, seed: int, style: str) -> tuple[int, int, set[str]]:
    """Play one game in both engines to its end; returns (positions compared, positions with a
    piece of the mover in its goal, end reasons seen)."""
    rng = random.Random(seed)
    fast, ref = _core.State(rules), ReferenceState(rules)
    last: dict[int, tuple[int, int]] = {}
    compared = locked = 0
    while True:
        assert_same(fast, ref)
        compared += 1
        if fast.is_terminal():
            return compared, locked, {fast.end_reason}
        locked += any(fast.board[i] == fast.to_move for i in GEO.goal(fast.to_move))
        move = _pick(rng, fast, last, style)
        last[fast.to_move] = move
        fast.play(move)
        ref.play(move)


@pytest.mark.parametrize("rules", VARIANTS, ids=[r.name for r in VARIANTS])
def test_played_games_agree_move_by_move(rules: Rules) -> None:
    compared = locked = 0
    reasons: set[str] = set()
    for seed, style in enumerate(["forward", "forward", "shuffle", "forward"]):
        n, k, why = _play_game(rules, 100 * seed + len(rules.name), style)
        compared, locked, reasons = compared + n, locked + k, reasons | why
    # The games reach the goals and end in more than one way (else this test would prove little).
    assert compared >= 250 and locked >= 50 and len(reasons) >= 2, (compared, locked, reasons)


def test_a_thousand_mid_game_positions_agree():
    """Positions of played games rebuilt from their text (no history): moves, result, reason,
    then one move of each in both engines."""
    rng = random.Random(7)
    positions = []
    for seed in range(12):
        game = random.Random(seed)
        state, last = _core.State(STAR2), {}
        while not state.is_terminal():
            positions.append((state.board, state.to_move, state.ply))
            move = _pick(game, state, last, "forward" if seed % 3 else "shuffle")
            last[state.to_move] = move
            state.play(move)
    assert len(positions) >= 1000
    in_goal = 0
    for board, to_move, ply in positions:
        fast, ref = _core.State(STAR2, board, to_move, ply), ReferenceState(STAR2, board, to_move, ply)
        assert_same(fast, ref)
        in_goal += any(board[i] == to_move for i in GEO.goal(to_move))
        if not fast.is_terminal():
            move = rng.choice(fast.legal_moves())
            fast.play(move)
            ref.play(move)
            assert_same(fast, ref)
    assert in_goal >= 200


# ---------------------------------------------------------------------------------------------
# Hand-built endings
# ---------------------------------------------------------------------------------------------

SOUTH, NORTH = sorted(GEO.goal(0)), sorted(GEO.goal(1))


def _board(p0: list[int], p1: list[int]) -> tuple[int, ...]:
    board = [-1] * GEO.cells
    for p, owned in ((0, p0), (1, p1)):
        for i in owned:
            board[i] = p
    return tuple(board)


def _near_home_positions(rng: random.Random, count: int) -> list[tuple[tuple[int, ...], int]]:
    """Positions with nine pieces of each player home and the tenth elsewhere (sometimes on the
    other's goal): every move of player 0 that completes its goal is an equal-turn question."""
    out = []
    free = [i for i in range(GEO.cells) if GEO.point[i] not in (0, 3)]
    while len(out) < count:
        hole0, hole1 = rng.choice(SOUTH[:4]), rng.choice(NORTH[6:])  # goal cells with doors
        if rng.random() < 0.3:
            hole0, hole1 = rng.choice(SOUTH), rng.choice(NORTH)
        p0_out, p1_out = rng.sample(free, 2)
        doors0 = [n for n in GEO.step[hole0] if n >= 0 and n in free and n != p1_out]
        if doors0 and rng.random() < 0.6:
            p0_out = rng.choice(doors0)  # player 0 one step from home
        doors = [n for n in GEO.step[hole1] if n >= 0 and n in free and n != p0_out]
        if doors and rng.random() < 0.5:
            p1_out = rng.choice(doors)  # player 1 one step from home: equal turns if 0 finishes
        elif rng.random() < 0.3:
            p1_out = hole0  # player 1 sits in player 0's goal: anti-block or no completion
        p0 = [c for c in SOUTH if c != hole0] + [p0_out]
        p1 = [c for c in NORTH if c != hole1] + [p1_out]
        out.append((_board(p0, p1), rng.randrange(2)))
    return out


@pytest.mark.parametrize("rules", [STAR2, STAR2.replace(equal_turn=False, name="no-equal-turn")], ids=lambda r: r.name)
def test_endings_near_home_agree(rules: Rules) -> None:
    rng = random.Random(3)
    reasons: set[str | None] = set()
    for board, to_move in _near_home_positions(rng, 150):
        fast, ref = _core.State(rules, board, to_move, 50), ReferenceState(rules, board, to_move, 50)
        assert_same(fast, ref)
        for move in fast.legal_moves():
            fast.play(move)
            ref.play(move)
            assert_same(fast, ref)
            reasons.add(fast.end_reason)
            fast.undo()
            ref.undo()
    expected = {"all_home", "anti_block", None} | ({"equal_turn"} if rules.equal_turn else set())
    assert expected <= reasons


def test_both_home_and_no_move_agree():
    for rules in (STAR2, STAR2.replace(win_rule="all_own")):
        board = _board(SOUTH, NORTH)
        assert _core.State(rules, board, 1).end_reason == ReferenceState(rules, board, 1).end_reason == "both_home"
    tip = max(GEO.points[1], key=lambda i: GEO.coords[i][0])
    wall = [GEO.index[qr] for qr in ((7, -4), (7, -3), (6, -4), (6, -2))]
    middle = sorted(i for i in range(GEO.cells) if GEO.coords[i][1] == 0)[:5]
    board = _board([NORTH[0], *wall, *middle], [tip, *NORTH[1:]])
    for rules in (STAR2, STAR2.replace(win_rule="all_own")):
        fast, ref = _core.State(rules, board, 1), ReferenceState(rules, board, 1)
        assert_same(fast, ref)
    assert _core.State(STAR2.replace(win_rule="all_own"), board, 1).end_reason == "no_move"


# ---------------------------------------------------------------------------------------------
# Repetition history, undo, copies, pickles and the batch API
# ---------------------------------------------------------------------------------------------


def _shuffle() -> list[tuple[int, int]]:
    """Four plies that bring the start back (the reference's test_star_rules shuffle)."""
    back = (112, next(e for e in GEO.step[112] if e >= 0 and e not in GEO.points[3]))
    return [(3, 14), back, (14, 3), back[::-1]]


def test_third_repetition_draws_and_undo_takes_it_back():
    state = _core.State(STAR2)
    for move in _shuffle() * 2:
        assert not state.is_terminal()
        state.play(move)
    assert (state.result(), state.end_reason, state.ply, state.occurrences) == (0, "repetition", 8, 3)
    assert state.legal_moves() == []
    state.undo()
    assert not state.is_terminal() and state.occurrences == 2
    copy = pickle.loads(pickle.dumps(state))  # the history travels with a pickle ...
    copy.play(_shuffle()[-1])
    assert copy.end_reason == "repetition"
    other = state.copy()  # ... and with a copy
    other.play(_shuffle()[-1])
    assert other.end_reason == "repetition" and not state.is_terminal()
    rebuilt = _core.State(STAR2, state.board, state.to_move, state.ply)  # a text position: seen once
    assert rebuilt.occurrences == 1


def test_batch_api_plays_the_star_with_repetition():
    states = [_core.State(STAR2) for _ in range(3)]
    moves_out = np.zeros((3, states[0].max_moves, 2), np.int16)
    counts = np.zeros(3, np.int32)
    results = np.zeros(3, np.int8)
    for move in _shuffle() * 2:
        _core.batch_legal_moves(states, moves_out, counts)
        assert [tuple(moves_out[0, i]) for i in range(counts[0])] == states[0].legal_moves()
        _core.batch_play(states, np.array([move] * 3, np.int16))
    _core.batch_results(states, results)
    assert results.tolist() == [0, 0, 0] and {s.end_reason for s in states} == {"repetition"}
    _core.batch_legal_moves(states, moves_out, counts)
    assert counts.tolist() == [0, 0, 0]
    boards = np.zeros((3, GEO.cells), np.int8)
    _core.batch_boards(states, boards)
    rebuilt = _core.batch_new_states(STAR2, boards, to_move=[0, 0, 0], ply=[8, 8, 8])
    assert [s.board for s in rebuilt] == [s.board for s in states] and not rebuilt[0].is_terminal()
    assert rebuilt[0].hash == states[0].hash and rebuilt[0].legal_moves() == ReferenceState(STAR2).legal_moves()


def test_no_pass_on_the_star():
    state = _core.State(STAR2)
    with pytest.raises(IllegalMoveError, match="the star has no pass"):
        state.play((-1, -1))
    assert state.ply == 0 and state.max_moves == 10 * (121 - 20)



def test_perft_command_runs_on_the_compiled_engine():
    proc = subprocess.run(
        [*hopzero_command(), "perft", "--preset", "star2", "--depth", "4", "--engine", "cython", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"preset": "star2", "perft": list(STAR_START_PERFT["star2"])}


@pytest.mark.parametrize(
    "rules",
    [
        preset("small-4-1"),
        preset("cc49").replace(adjudicate="distance", max_plies=40, name="cc49-distance-40"),
        preset("cc49").replace(progress_limit=12, adjudicate="distance", distance_margin=0, name="cc49-progress"),
    ],
    ids=lambda r: r.name,
)
def test_end_reason_on_the_rhombus_agrees(rules: Rules) -> None:
    reasons = set()
    for seed in range(6):
        rng = random.Random(seed)
        fast, ref = _core.State(rules), ReferenceState(rules)
        while not ref.is_terminal():
            assert fast.end_reason is None
            move = rng.choice(ref.legal_moves())
            fast.play(move)
            ref.play(move)
        assert (fast.result(), fast.end_reason) == (ref.result(), ref.end_reason)
        reasons.add(ref.end_reason)
    # Each variant ends its games by the reason it is here for.
    assert {"small-4-1": "goal", "cc49-distance-40": "max_plies", "cc49-progress": "progress_limit"}[rules.name] in reasons
