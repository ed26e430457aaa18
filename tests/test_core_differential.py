"""Differential tests: the compiled engine (``ccengine._core``) against the Python reference.

Random positions and random games on every preset and rule variant; the two engines must agree
on legal moves, terminal flags, results, progress tracking and perft, and the compiled engine's
incremental Zobrist hash must equal a from-scratch recomputation after any play/undo sequence.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccengine import _core
from ccengine.reference import IllegalMoveError, ReferenceState
from ccengine.reference import perft as reference_perft
from ccengine.rules import PASS, Rules, preset
from engine_helpers import scratch_hash

PRESETS = ["cc49", "paper", "cc81", "small-4-1", "small-4-3", "small-5-6", "small-6-6"]


def _variants() -> list[Rules]:
    """Every preset, plus option variants that exercise each end-of-game and move rule."""
    rules = [preset(name) for name in PRESETS]
    cc49, small = preset("cc49"), preset("small-5-6")
    rules += [
        cc49.replace(goal_lock=True, name="cc49-goal_lock"),
        cc49.replace(win_rule="all_own", name="cc49-all_own"),
        cc49.replace(win_rule="all_own", goal_lock=True, name="cc49-all_own-lock"),
        cc49.replace(adjudicate="distance", max_plies=40, name="cc49-distance-40"),
        cc49.replace(progress_limit=12, adjudicate="distance", distance_margin=0, name="cc49-progress"),
        preset("paper").replace(win_rule="filled", goal_lock=True, name="paper-filled-lock"),
        preset("paper").replace(adjudicate="distance", progress_limit=10, name="paper-progress"),
        preset("cc81").replace(goal_lock=True, win_rule="all_own", name="cc81-lock-all_own"),
        preset("cc81").replace(hops="mirror", max_plies=30, adjudicate="distance", name="cc81-mirror"),
        small.replace(goal_lock=True, progress_limit=8, name="small-5-6-lock-progress"),
        preset("small-4-3").replace(win_rule="all_own", max_plies=25, adjudicate="distance", name="small-4-3-var"),
        preset("small-4-3").replace(hops="mirror", goal_lock=True, name="small-4-3-mirror-lock"),
        preset("small-6-6").replace(hops="mirror", progress_limit=6, name="small-6-6-mirror"),
    ]
    return rules


VARIANTS = _variants()
VARIANT_IDS = [r.name for r in VARIANTS]


def assert_same(fast: _core.State, ref: ReferenceState) -> None:
    """Both engines hold the same state, and the compiled hash matches a recomputation."""
    assert fast.board == ref.board
    assert (fast.to_move, fast.ply) == (ref.to_move, ref.ply)
    assert fast.goal_best == ref.goal_best
    assert fast.progress_ply == ref.progress_ply
    assert fast.is_terminal() == ref.is_terminal()
    assert fast.result() == ref.result()
    assert fast.legal_moves() == ref.legal_moves()
    assert fast.hash == scratch_hash(fast)


@st.composite
def positions(draw, rules: Rules):
    """A random position of ``rules``: k pieces each on distinct cells, a side, a ply count."""
    cells = draw(st.permutations(range(rules.cells)))
    board = [-1] * rules.cells
    for i, cell in enumerate(cells[: 2 * rules.k]):
        board[cell] = i % 2
    to_move = draw(st.integers(0, 1))
    ply = draw(st.one_of(st.integers(0, rules.max_plies - 1), st.integers(rules.max_plies - 1, rules.max_plies + 1)))
    return tuple(board), to_move, ply


def _perft_depth(rules: Rules) -> int:
    """Depth of the differential perft on a random position: the reference must stay fast."""
    if rules.cells <= 36 or (rules.cells <= 49 and rules.hops == "adjacent"):
        return 2
    return 1


@pytest.mark.parametrize("rules", VARIANTS, ids=VARIANT_IDS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_positions(rules: Rules, data) -> None:
    board, to_move, ply = data.draw(positions(rules))
    fast = _core.State(rules, board, to_move, ply)
    ref = ReferenceState(rules, board, to_move, ply)
    assert_same(fast, ref)
    depth = _perft_depth(rules)
    assert fast.perft(depth) == reference_perft(ref, depth)
    # The constructor's hash is the one the position reaches by play: check one move.
    moves = fast.legal_moves()
    if moves:
        move = moves[data.draw(st.integers(0, len(moves) - 1))]
        fast.play(move)
        ref.play(move)
        assert_same(fast, ref)
        if not fast.is_terminal():
            rebuilt = _core.State(rules, fast.board, fast.to_move, fast.ply)
            assert rebuilt.hash == fast.hash


def _pick_move(rng: random.Random, rules: Rules, player: int, moves: list[tuple[int, int]]) -> tuple[int, int]:
    """Mostly the most advancing move (so games reach the goals), sometimes a random one."""
    if rng.random() < 0.3 or moves == [PASS]:
        return rng.choice(moves)
    geo = rules.geometry
    best = max(geo.forward_distance(player, m) for m in moves)
    return rng.choice([m for m in moves if geo.forward_distance(player, m) == best])


@pytest.mark.parametrize("rules", VARIANTS, ids=VARIANT_IDS)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_games_with_undo(rules: Rules, seed: int) -> None:
    rng = random.Random(seed)
    fast, ref = _core.State(rules), ReferenceState(rules)
    plies = 60 if rules.cells <= 49 else 25
    for _ in range(plies):
        if fast.is_terminal():
            break
        if fast.ply > 0 and rng.random() < 0.15:
            fast.undo()
            ref.undo()
            assert_same(fast, ref)
            continue
        move = _pick_move(rng, rules, fast.to_move, fast.legal_moves())
        fast.play(move)
        ref.play(move)
        assert_same(fast, ref)
    # Undo everything back to the start: every intermediate state matches again.
    while fast.ply > 0:
        fast.undo()
        ref.undo()
        assert_same(fast, ref)
    with pytest.raises(IllegalMoveError):
        fast.undo()


@pytest.mark.parametrize("rules", VARIANTS, ids=VARIANT_IDS)
def test_games_to_the_end(rules: Rules) -> None:
    """Greedy-ish games played to the end: results and terminal flags agree."""
    rng = random.Random(sum(map(ord, rules.name)))
    for _ in range(2):
        fast, ref = _core.State(rules), ReferenceState(rules)
        while not ref.is_terminal():
            move = _pick_move(rng, rules, ref.to_move, ref.legal_moves())
            fast.play(move)
            ref.play(move)
        assert_same(fast, ref)
