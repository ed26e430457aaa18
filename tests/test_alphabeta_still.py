"""``alphabeta:opponents=still`` (ccengine._alphabeta ``_still``): the searcher plans its own
moves in a row while the other players stand still; checked against a brute force written out
here, on positions built by hand and on greedy mid-games."""

import pytest
from test_alphabeta_paranoid import _advance, _midgame
from test_star_multi import _almost_home, _board

from ccengine import _core, preset
from ccengine._alphabeta import MATE, AlphaBetaSearch
from ccengine.alphabeta import AlphaBetaPlayer
from ccengine.players import PlayerSpecError
from learner.players import make_player

STAR3 = preset("star3")
STAR6 = preset("star6")


def _plan_value(rules, board, me, ply, depth, distance=0):
    """The best score after ``depth`` moves of ``me`` in a row, the others standing still: its
    ``advance`` minus the leading opponent's (``MATE - d`` once home), by brute force over rebuilt
    states."""
    state = _core.State(rules, list(board), me, ply)
    if all(board[c] == me for c in rules.geometry.goal(me)):
        return MATE - distance
    if depth == 0:
        return _advance(rules, state, me) - max(_advance(rules, state, q) for q in range(rules.players) if q != me)
    values = []
    for s, e in state.legal_moves():
        child = list(board)
        child[s], child[e] = -1, me
        values.append(_plan_value(rules, child, me, ply, depth - 1, distance + 1))
    return max(values)


@pytest.mark.parametrize(("rules", "seed", "plies", "depth"),
                         [(STAR3, 1, 30, 1), (STAR3, 2, 45, 2), (STAR6, 3, 60, 2)])
def test_the_plan_value_is_the_best_own_sequence(rules, seed, plies, depth):
    state = _midgame(rules, seed, plies)
    before = (state.board, state.hash, state.ply, state.to_move)
    search = AlphaBetaSearch(_core.tables_for(rules), evaluation="advance", opponents="still")
    move, score, nodes = search.search(state, depth)
    me = state.to_move
    want = _plan_value(rules, state.board, me, state.ply, depth)
    assert score == want
    after = list(state.board)
    after[move[0]], after[move[1]] = -1, me
    assert _plan_value(rules, after, me, state.ply, depth - 1, 1) == want  # the move starts such a plan
    assert (state.board, state.hash, state.ply, state.to_move) == before  # the game is untouched
    assert nodes > 1


def test_the_plan_sees_a_finish_two_moves_away_that_one_move_does_not():
    cells, (outside, hole) = _almost_home(STAR3, 0)
    geo = STAR3.geometry
    farther = next(c for c in geo.step[outside]
                   if c >= 0 and geo.point[c] == -1 and c not in cells and c not in geo.step[hole])
    placed = [c for c in cells if c != outside] + [farther]
    state = _core.State(STAR3, list(_board(STAR3, {0: placed}, near=tuple(placed) + (outside, hole))), 0, 90)
    search = AlphaBetaSearch(_core.tables_for(STAR3), opponents="still")
    move, score, _ = search.search(state, 2)
    assert score == MATE - 2 and move == (farther, outside)
    _, score, _ = search.search(state, 1)
    assert score < MATE - 12  # one move cannot finish


def test_the_player_takes_the_option_and_refuses_it_where_it_means_nothing():
    player = make_player("alphabeta:depth=2,opponents=still", STAR6)
    state = _core.State(STAR6)
    for _ in range(12):
        move = player.select(state)
        assert move in state.legal_moves()
        state.play(move)
    with pytest.raises(ValueError, match="three or more players"):
        AlphaBetaPlayer(preset("star2"), opponents="still")
    with pytest.raises(PlayerSpecError, match="opponents"):
        make_player("alphabeta:opponents=nobody", STAR6)
