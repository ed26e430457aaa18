"""Won endgames (evaluator.endgames), the steps left to finish (ccengine.finish) and the search's
finish rule (SearchConfig.finish) that plays them out."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ccengine.engines import new_state
from ccengine.finish import assignment_cost, step_distances, steps_to_finish
from ccengine.rules import preset
from ccengine.search import FINISH_STEPS, PLAY_FINISH, SearchConfig, UniformEvaluator
from ccengine.search_player import SearchPlayer
from evaluator.endgames import build_endgames, convert_endgames, parker
from learner.players import make_player

STARS = ("star2", "star3", "star4", "star6")


class SureOfPlayerZero(UniformEvaluator):
    """Uniform priors, and every position a win for seat 0: the saturated value of a network
    that knows it has won."""

    def evaluate(self, pieces, to_move, legal, counts):
        priors, values = super().evaluate(pieces, to_move, legal, counts)
        values[:] = 0.0
        values[:, 0] = 1.0
        return priors, values


def pieces_of(state, player):
    return [c for c, who in enumerate(state.board) if who == player]


def others_of(state, player):
    return [c for c, who in enumerate(state.board) if who >= 0 and who != player]


def steps_of(rules, state, player=0):
    return steps_to_finish(rules, pieces_of(state, player), others_of(state, player), player)


def test_the_assignment_is_the_least_total_cost():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(0, 6))
        m = int(rng.integers(max(n, 1), 7))
        cost = rng.integers(0, 20, size=(n, m))
        best = min(sum(cost[i, p[i]] for i in range(n)) for p in itertools.permutations(range(m), n))
        assert assignment_cost(cost) == best
    with pytest.raises(ValueError, match="3 rows cannot each get their own of 2 columns"):
        assignment_cost(np.zeros((3, 2), dtype=np.int32))


def test_steps_to_finish_on_the_star():
    rules = preset("star2")
    g = rules.geometry
    distances = step_distances(rules)
    assert distances.shape == (121, 121) and (distances >= 0).all() and (distances == distances.T).all()
    assert steps_to_finish(rules, sorted(g.goal(0)), [], 0) == 0
    assert steps_to_finish(rules, sorted(g.home[0]), [], 0) == 120  # every piece across the board
    # a goal cell held by another player needs no piece of ours: nine pieces home finish
    goal = sorted(g.goal(0))
    assert steps_to_finish(rules, [*goal[:9], sorted(g.home[0])[0]], [goal[9]], 0) == 0


@pytest.mark.parametrize("name", STARS)
@pytest.mark.parametrize("family", ["parked", "race"])
def test_built_endgames_are_won_races_for_player_zero(name, family):
    rules = preset(name)
    g = rules.geometry
    positions = build_endgames(rules, family, 12, seed=5)
    assert positions == build_endgames(rules, family, 12, seed=5)
    assert positions != build_endgames(rules, family, 12, seed=6)
    for position in positions:
        state = new_state(rules, position)
        assert position.to_move == 0 and position.ply == 0 and not state.is_terminal() and state.legal_moves()
        counts = [sum(1 for who in position.board if who == p) for p in range(rules.players)]
        assert counts == [10] * rules.players
        in_goal = [position.board[c] for c in g.goal(0) if position.board[c] >= 0]
        foreign = [who for who in in_goal if who != 0]
        if family == "parked":
            assert 1 <= len(foreign) <= 3 and set(foreign) == {parker(rules)}
            assert 1 <= len(g.goal(0)) - len(in_goal) <= 3  # one to three holes to fill
        else:
            assert not foreign
        mine = steps_of(rules, state, 0)  # the parked pieces stay: the holes are what is left
        rest = [steps_to_finish(rules, pieces_of(state, p), [], p) for p in range(1, rules.players)]
        assert mine < min(rest), (mine, rest)  # the others' whole goals, far behind


def test_bad_endgame_requests_are_refused():
    with pytest.raises(ValueError, match="on the star; cc49 is a rhombus"):
        build_endgames(preset("cc49"), "parked", 1, 0)
    with pytest.raises(ValueError, match="unknown endgame family 'castle'"):
        build_endgames(preset("star2"), "castle", 1, 0)
    with pytest.raises(ValueError, match="count=0"):
        build_endgames(preset("star2"), "race", 0, 0)


@pytest.mark.parametrize("name", ["star2", "star3"])
def test_the_finish_rule_plays_a_move_that_lowers_the_steps_when_the_game_is_won(name):
    rules = preset(name)
    for position in build_endgames(rules, "parked", 6, seed=2):
        state = new_state(rules, position)
        before = steps_of(rules, state)
        sure = SearchPlayer(rules, 1, SureOfPlayerZero(rules.players), simulations=24)  # PLAY_FINISH
        assert sure.config.finish == PLAY_FINISH > 0
        after = new_state(rules, position)
        after.play(sure.select(state))
        assert steps_of(rules, after) < before


def test_the_finish_rule_leaves_an_undecided_game_and_a_long_race_alone():
    rules = preset("star2")
    for position in build_endgames(rules, "race", 4, seed=3):
        state = new_state(rules, position)
        plain = SearchPlayer(rules, 7, UniformEvaluator(2), simulations=24, finish=0)
        finishing = SearchPlayer(rules, 7, UniformEvaluator(2), simulations=24, finish=0.9)
        assert plain.select(state) == finishing.select(state)  # a share of 1/2 is no won game
    start = new_state(rules)  # sure of the win, but 120 steps from the end: hops decide, not steps
    assert steps_to_finish(rules, pieces_of(start, 0), [], 0) > FINISH_STEPS
    plain = SearchPlayer(rules, 7, SureOfPlayerZero(2), simulations=24, finish=0)
    finishing = SearchPlayer(rules, 7, SureOfPlayerZero(2), simulations=24, finish=0.9)
    assert plain.select(start) == finishing.select(start)


def test_finish_is_a_share():
    assert SearchConfig(finish=0.95).finish == 0.95
    with pytest.raises(ValueError, match="finish"):
        SearchConfig(finish=1.5)


def test_convert_endgames_counts_each_players_games_from_the_seat_ahead():
    rules = preset("star2")
    result, records = convert_endgames(rules, "mcts-rollout:sims=16,finish=0.9", "greedy", family="parked",
                                       positions=3, seed=1, parallel=3)
    assert result.games == 6 and [r.positions for r in records] == [3, 3]
    for k, record in enumerate(records):
        assert record.won + sum(record.drawn.values()) + record.lost == 3
        ahead = [g for g in result.played if g.seats[k] == 0]
        assert record.won == sum(1 for g in ahead if g.scores[0] == 1.0)
        assert set(record.drawn) <= {"repetition", "max_plies", "no_move"}
    assert {g.reason for g in result.played} <= {"all_home", "anti_block", "repetition", "max_plies", "no_move"}



def test_search_players_finish_by_default_and_finish_0_turns_the_rule_off():
    rules = preset("star2")
    assert make_player("mcts-rollout:sims=8", rules, 1).config.finish == PLAY_FINISH
    assert make_player("mcts:sims=8", rules, 1).config.finish == PLAY_FINISH
    assert make_player("mcts-rollout:sims=8,finish=0", rules, 1).config.finish == 0
    assert make_player("mcts:sims=8,finish=0.95", rules, 1).config.finish == 0.95
    assert SearchConfig().finish == 0  # self-play's moves stay the visit counts' own
