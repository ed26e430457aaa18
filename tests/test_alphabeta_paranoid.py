"""Paranoid alpha-beta for three or more players (ccengine._alphabeta): the searcher maximises,
every other player minimises; checked against a plain minimax written out here."""

import numpy as np
import pytest
from test_star_multi import _almost_home, _board

from ccengine import _core, preset
from ccengine._alphabeta import MATE, AlphaBetaSearch
from ccengine.alphabeta import AlphaBetaPlayer
from ccengine.players import GreedyPlayer

STAR3 = preset("star3")
STAR4 = preset("star4")


def _advance(rules, state, player):
    table = rules.geometry.advances[player]
    return sum(table[c] for c, owner in enumerate(state.board) if owner == player)


def _minimax(rules, state, depth, me, distance=0):
    """The paranoid value of ``state`` for ``me`` under the ``advance`` evaluation, by brute force."""
    if state.is_terminal():
        scores = state.scores()
        if len(set(scores)) == 1:
            return 0
        if scores[me] == 1.0:
            return MATE - distance
        if scores[me] > 0:
            return MATE // 2 - distance
        return distance - MATE
    if depth == 0:
        mine = _advance(rules, state, me)
        return mine - max(_advance(rules, state, q) for q in range(rules.players) if q != me)
    values = []
    for move in state.legal_moves():
        child = state.copy()
        child.play(move)
        values.append(_minimax(rules, child, depth - 1, me, distance + 1))
    return max(values) if state.to_move == me else min(values)


def _midgame(rules, seed, plies):
    rng = np.random.default_rng(seed)
    players = [GreedyPlayer(rules, seed + p) for p in range(rules.players)]
    state = _core.State(rules)
    while state.ply < plies and not state.is_terminal():
        moves = state.legal_moves()
        if state.ply < 3 * rules.players:
            state.play(moves[int(rng.integers(len(moves)))])
        else:
            state.play(players[state.to_move].select(state))
    return _core.State(rules, list(state.board), state.to_move, state.ply)  # no history: no repetition to count


@pytest.mark.parametrize(("rules", "seed", "plies", "depth"),
                         [(STAR3, 1, 30, 2), (STAR3, 2, 45, 3), (STAR4, 3, 40, 2)])
def test_the_search_value_is_the_paranoid_minimax_value(rules, seed, plies, depth):
    state = _midgame(rules, seed, plies)
    search = AlphaBetaSearch(_core.tables_for(rules), evaluation="advance")
    move, score, nodes = search.search(state, depth)
    want = _minimax(rules, state, depth, state.to_move)
    assert score == want
    child = state.copy()
    child.play(move)  # the move chosen reaches that value: the others answer it at their worst for us
    assert _minimax(rules, child, depth - 1, state.to_move, 1) == want
    # pruning: fewer nodes than the whole tree
    assert nodes < sum(1 for _ in state.legal_moves()) ** depth


def test_the_searcher_fills_its_goal_and_sees_the_win_at_the_end_of_the_round():
    cells, fill = _almost_home(STAR3, 0)
    state = _core.State(STAR3, list(_board(STAR3, {0: cells}, near=tuple(cells))), 0, 90)
    move, score, _ = AlphaBetaSearch(_core.tables_for(STAR3)).search(state, 3)
    assert move == fill and score == MATE - 3  # the round ends after seats 1 and 2 have moved


def test_the_searcher_sees_a_loss_it_cannot_stop():
    # seat 2 fills its goal at ply 2 of the round; seat 0 (to move) is far from home.
    cells, _ = _almost_home(STAR3, 2)
    state = _core.State(STAR3, list(_board(STAR3, {2: cells}, near=tuple(cells))), 0, 90)
    _, score, _ = AlphaBetaSearch(_core.tables_for(STAR3)).search(state, 3)
    assert score == 3 - MATE


def test_the_player_plays_star_presets_and_refuses_the_linear_evaluation():
    player = AlphaBetaPlayer(STAR4, depth=2)
    state = _core.State(STAR4)
    for _ in range(8):
        move = player.select(state)
        assert move in state.legal_moves()
        state.play(move)
    with pytest.raises(ValueError, match="linear evaluation weighs two players"):
        AlphaBetaPlayer(STAR3, eval="linear", weights=[0.0] * 7)
