"""Unit tests of the compiled engine's Python API (``ccengine._core``): State, batches, buffers."""

from __future__ import annotations

import copy
import pickle
import random

import numpy as np
import pytest

from ccengine import _core
from ccengine.notation import parse_position
from ccengine.reference import IllegalMoveError, ReferenceState, perft
from ccengine.rules import PASS, Rules, preset


def random_board(rng: random.Random, rules: Rules) -> tuple[int, ...]:
    """k pieces of each player on distinct random cells."""
    cells = rng.sample(range(rules.cells), 2 * rules.k)
    board = [-1] * rules.cells
    for i, cell in enumerate(cells):
        board[cell] = i % 2
    return tuple(board)


def random_states(rules: Rules, count: int, seed: int = 0) -> list[_core.State]:
    """States reached by random games of 10..40 plies (fewer if a game ends)."""
    rng = random.Random(seed)
    states = []
    for _ in range(count):
        state = _core.State(rules)
        for _ in range(rng.randint(10, 40)):
            moves = state.legal_moves()
            if not moves:
                break
            state.play(rng.choice(moves))
        states.append(state)
    return states


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


def test_tables_are_shared_and_sized_from_the_board() -> None:
    rules = preset("cc49")
    tables = _core.tables_for(rules)
    assert _core.tables_for(rules) is tables
    assert _core.tables_for(tables) is tables
    assert _core.tables_for(preset("cc49")).max_moves == 6 * (49 - 12)
    assert (tables.n, tables.cells, tables.k, tables.nwords) == (7, 49, 6, 1)
    assert _core.tables_for(preset("cc81")).nwords == 2
    assert _core.tables_for(preset("small-4-1")).max_moves == 14
    assert _core.tables_for(Rules(n=11, k=15)).max_moves == _core.MAX_MOVES == 1365
    with pytest.raises(TypeError):
        _core.tables_for("cc49")


def test_zobrist_keys_are_fixed_across_tables() -> None:
    """Keys come from a fixed seed: two builds (and two processes) agree."""
    a, b = _core.RulesTables(preset("cc49")), _core.RulesTables(preset("cc81"))
    assert a.zobrist(1, 17) == b.zobrist(1, 17)
    assert a.zobrist_side == b.zobrist_side
    assert len({a.zobrist(p, c) for p in (0, 1) for c in range(49)}) == 98


# ---------------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------------


def test_constructor_validates_positions() -> None:
    rules = preset("small-4-3")
    board = list(rules.geometry.start_board())
    with pytest.raises(ValueError, match="cells"):
        _core.State(rules, board[:-1])
    with pytest.raises(ValueError, match="pieces of player 0"):
        _core.State(rules, [-1] + board[1:] if board[0] == 0 else [0] + board[1:])
    with pytest.raises(ValueError, match="holds 2"):
        _core.State(rules, [2] + board[1:])
    with pytest.raises(ValueError, match="to_move"):
        _core.State(rules, board, to_move=2)
    with pytest.raises(ValueError, match="ply"):
        _core.State(rules, board, ply=-1)
    arr = np.array(board, dtype=np.int8)
    assert _core.State(rules, arr).board == _core.State(rules, board).board


def test_given_position_is_judged_like_the_reference() -> None:
    """A won position and a position at max_plies are over on construction.

    Both players fill their goals here, so the winner is the player who "just moved".
    """
    rules = preset("small-4-3")
    geo = rules.geometry
    board = [-1] * rules.cells
    for cell in geo.goal(0):
        board[cell] = 0
    for cell in list(geo.goal(1))[:3]:
        board[cell] = 1
    for to_move in (0, 1):
        fast, ref = _core.State(rules, board, to_move), ReferenceState(rules, board, to_move)
        assert fast.result() == ref.result() == (1 if to_move == 1 else -1)
        assert fast.legal_moves() == [] and fast.is_terminal()
    start = rules.geometry.start_board()
    assert _core.State(rules, start, 0, rules.max_plies).result() == 0


def test_illegal_moves_raise_and_change_nothing() -> None:
    state = _core.State(preset("cc49"))
    before = (state.board, state.hash, state.ply, state.to_move)
    for move, words in [
        ((0, 1), "holds empty"),
        ((4, 3), "player 1"),
        ((42, 21), "not reachable"),
        ((42, 99), "0..48"),
        (PASS, "pass"),
        ((1, 2, 3), "pair"),
        ("ab", "pair"),
    ]:
        with pytest.raises(IllegalMoveError, match=words):
            state.play(move)
        assert (state.board, state.hash, state.ply, state.to_move) == before
    with pytest.raises(IllegalMoveError, match="no move to undo"):
        state.undo()


def test_play_undo_copy_and_pickle() -> None:
    rules = preset("cc81")
    state = random_states(rules, 1, seed=3)[0]
    snapshot = (state.board, state.hash, state.ply, state.to_move, state.goal_best, state.progress_ply)
    other = state.copy()
    moves = other.legal_moves()
    other.play(moves[-1])
    assert (state.board, state.hash, state.ply) == snapshot[:3]
    assert other.board != state.board and other.ply == state.ply + 1
    other.undo()
    assert (other.board, other.hash, other.ply, other.to_move, other.goal_best, other.progress_ply) == snapshot
    clone = pickle.loads(pickle.dumps(state))
    assert (clone.board, clone.hash, clone.ply, clone.rules) == snapshot[:3] + (rules,)
    clone.undo()
    state.undo()
    assert (clone.board, clone.hash) == (state.board, state.hash)
    assert copy.copy(state).hash == state.hash


def test_hash_depends_on_position_not_path() -> None:
    rules = preset("cc49")
    a, b = _core.State(rules), _core.State(rules)
    for move in [(28, 21), (4, 11), (36, 29), (12, 19)]:
        a.play(move)
    for move in [(36, 29), (12, 19), (28, 21), (4, 11)]:
        b.play(move)
    assert a.board == b.board and a.hash == b.hash
    assert _core.State(rules, a.board, a.to_move, a.ply).hash == a.hash
    assert _core.State(rules, a.board, 1 - a.to_move).hash == a.hash ^ a.tables.zobrist_side


# Positions where the side to move is blocked and the game goes on (found by a hill-climb
# minimising the mover's moves). They need `all_own` (a full goal is not yet a win) and
# `goal_lock` (the pieces in the full goal cannot leave it).
BLOCKED = [
    ("small-5-6", "..xxo/...xx/..o.x/...oo/..oox x 0"),
    ("cc49", "....xxo/.....xx/.o....x/......./o....../o....../xoo.... x 0"),
]


@pytest.mark.parametrize("name, text", BLOCKED, ids=[name for name, _ in BLOCKED])
def test_pass_is_the_only_move_of_a_blocked_player(name: str, text: str) -> None:
    rules = preset(name).replace(win_rule="all_own", goal_lock=True)
    position = parse_position(rules, text)
    state = _core.State(rules, position.board, position.to_move)
    ref = ReferenceState(rules, position.board, position.to_move)
    assert state.legal_moves() == ref.legal_moves() == [PASS]
    assert state.divide(1) == [(PASS, 1)]
    assert state.perft(3) == perft(ref, 3)
    with pytest.raises(IllegalMoveError, match="not reachable"):
        state.play((position.board.index(0), position.board.index(-1)))
    state.play(PASS)
    ref.play(PASS)
    assert (state.board, state.to_move, state.ply) == (ref.board, ref.to_move, ref.ply) == (position.board, 1, 1)
    assert state.hash == _core.State(rules, position.board, 1, 1).hash
    assert state.legal_moves() == ref.legal_moves() != [PASS]
    with pytest.raises(IllegalMoveError, match="pass is legal only"):
        state.play(PASS)


def test_divide_sums_to_perft_and_rejects_bad_depths() -> None:
    state = random_states(preset("paper"), 1, seed=5)[0]
    divide = state.divide(2)
    assert [m for m, _ in divide] == state.legal_moves()
    assert sum(c for _, c in divide) == state.perft(2)
    assert state.perft(0) == 1
    with pytest.raises(ValueError):
        state.divide(0)
    with pytest.raises(ValueError):
        state.perft(-1)


def test_repr_shows_the_position() -> None:
    assert repr(_core.State(preset("small-4-3"))) == "State('small-4-3', '..oo/...o/x.../xx.. x 0')"


# ---------------------------------------------------------------------------------------------
# Move buffers
# ---------------------------------------------------------------------------------------------


def _crowded_position(rules: Rules, seed: int, steps: int) -> tuple[tuple[int, ...], int]:
    """Hill-climb to a position where player 0 has very many moves; returns (board, count)."""
    rng = random.Random(seed)
    tables = _core.tables_for(rules)
    out = np.zeros((tables.max_moves, 2), np.int16)
    board = list(random_board(rng, rules))
    best = _core.State(tables, board).legal_moves_array(out)
    for _ in range(steps):
        trial = list(board)
        src = rng.choice([i for i, v in enumerate(trial) if v >= 0])
        dst = rng.choice([i for i, v in enumerate(trial) if v < 0])
        trial[src], trial[dst] = -1, trial[src]
        count = _core.State(tables, trial).legal_moves_array(out)
        if count >= best:
            board, best = trial, count
    return tuple(board), best


@pytest.mark.parametrize(
    "rules",
    [
        preset("cc49"),
        preset("paper"),
        preset("cc81"),
        preset("small-4-6"),
        Rules(n=11, k=15),
        Rules(n=11, k=15, hops="mirror"),
        Rules(n=8, k=10, hops="mirror"),
    ],
    ids=lambda r: f"{r.n}x{r.n}-k{r.k}-{r.hops}",
)
def test_crowded_positions_fit_the_move_buffer(rules: Rules) -> None:
    board, count = _crowded_position(rules, seed=rules.cells, steps=1500)
    tables = _core.tables_for(rules)
    assert count <= tables.max_moves
    # A buffer of exactly max_moves rows is enough, and agrees with the list API.
    out = np.full((tables.max_moves, 2), 7, np.int16)
    state = _core.State(tables, board)
    assert state.legal_moves_array(out) == count
    assert [tuple(m) for m in out[:count].tolist()] == state.legal_moves()
    # The climb finds positions far busier than the start (the bound is not vacuous).
    assert count > 1.5 * len(_core.State(tables).legal_moves())
    if rules.cells <= 81:
        assert state.legal_moves() == ReferenceState(rules, board).legal_moves()


def test_small_buffers_are_refused() -> None:
    state = _core.State(preset("cc49"))
    with pytest.raises(ValueError, match="max_moves"):
        state.legal_moves_array(np.zeros((state.max_moves - 1, 2), np.int16))
    with pytest.raises(ValueError):
        state.legal_moves_array(np.zeros((state.max_moves, 3), np.int16))
    with pytest.raises(ValueError, match="max_moves"):
        _core.batch_legal_moves([state], np.zeros((1, 10, 2), np.int16), np.zeros(1, np.int32))


# ---------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cc49", "paper", "cc81"])
def test_batch_api_matches_the_state_api(name: str) -> None:
    rules = preset(name)
    states = random_states(rules, 12, seed=1)
    size, width = len(states), states[0].max_moves
    moves = np.zeros((size, width, 2), np.int16)
    counts = np.zeros(size, np.int32)
    _core.batch_legal_moves(states, moves, counts)
    for g, state in enumerate(states):
        assert [tuple(m) for m in moves[g, : counts[g]].tolist()] == state.legal_moves()

    results = np.zeros(size, np.int8)
    _core.batch_results(states, results)
    assert [None if r == _core.RESULT_NONE else r for r in results.tolist()] == [s.result() for s in states]

    boards = np.zeros((size, rules.cells), np.int8)
    _core.batch_boards(states, boards)
    assert [tuple(b) for b in boards.tolist()] == [s.board for s in states]
    rebuilt = _core.batch_new_states(rules, boards, [s.to_move for s in states], [s.ply for s in states])
    assert [s.hash for s in rebuilt] == [s.hash for s in states]
    assert [s.legal_moves() for s in rebuilt] == [s.legal_moves() for s in states]

    live = [g for g in range(size) if counts[g] > 0]
    chosen = np.array([moves[g, (g * 7) % counts[g]] for g in live], np.int16)
    expected = [states[g].copy() for g in live]
    for state, move in zip(expected, chosen.tolist()):
        state.play(tuple(move))
    batch = [states[g] for g in live]
    _core.batch_play(batch, chosen)
    assert [(s.board, s.hash, s.ply) for s in batch] == [(s.board, s.hash, s.ply) for s in expected]
    for state in batch:
        state.undo()


def test_batch_play_is_all_or_nothing() -> None:
    rules = preset("cc49")
    states = [_core.State(rules), _core.State(rules)]
    moves = np.array([[28, 21], [42, 41]], np.int16)
    with pytest.raises(IllegalMoveError, match="row 1"):
        _core.batch_play(states, moves)
    assert all(s.ply == 0 for s in states)
    with pytest.raises(ValueError, match="rows"):
        _core.batch_play(states, moves[:1])


def test_batch_new_states_validates() -> None:
    rules = preset("small-4-3")
    boards = np.array([rules.geometry.start_board()] * 2, np.int8)
    assert [s.hash for s in _core.batch_new_states(rules, boards)] == [_core.State(rules).hash] * 2
    boards[1, 0] = 0
    with pytest.raises(ValueError, match=r"boards\[1\]"):
        _core.batch_new_states(rules, boards)
    with pytest.raises(ValueError, match="columns"):
        _core.batch_new_states(rules, np.zeros((1, 5), np.int8))
