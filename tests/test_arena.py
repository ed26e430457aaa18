"""The arena: the seed's protocol (random openings, alternating sides) and reproducible seeding."""

import numpy as np
import pytest

from ccengine import preset
from ccengine.players import RandomPlayer, register_player
from evaluator.arena import game_seeds, play_game, play_match

CC49 = preset("cc49")
ENGINES = ["reference", "cython"]


class Recorder(RandomPlayer):
    """A random player that writes down every call the arena makes on it."""

    log: list = []

    def reset(self, seed=None):
        super().reset(seed)
        Recorder.log.append(("reset", None, None, None))

    def select(self, state):
        Recorder.log.append(("select", state.ply, state.to_move, tuple(state.board)))
        return super().select(state)


register_player("test-recorder", Recorder)


def games_of(log):
    """The select calls of a Recorder log, split into games at each reset."""
    games = []
    for kind, ply, to_move, board in log:
        if kind == "reset":
            games.append([])
        else:
            games[-1].append((ply, to_move, board))
    return games


@pytest.mark.parametrize("engine", ENGINES)
def test_sides_alternate_and_openings_are_random(engine):
    Recorder.log = []
    result = play_match(CC49, "test-recorder", "random", games=6, seed=3, random_opening=3, engine=engine)
    games = games_of(Recorder.log)
    assert len(games) == 6
    for i, calls in enumerate(games):
        assert calls, "the recorder was never asked for a move"
        # A holds seat 0 in even games, seat 1 in odd games; it is never asked in the opening.
        assert {to_move for _, to_move, _ in calls} == {i % 2}
        assert min(ply for ply, _, _ in calls) == 6 + i % 2
    # The two games of a pair share their random opening (seats swapped); pairs differ.
    first_boards = [calls[0][2] for calls in games]
    assert first_boards[0] != first_boards[2]
    assert result.a_first.wins + result.a_first.losses + result.a_first.draws == 3
    assert result.a_second.wins + result.a_second.losses + result.a_second.draws == 3


def test_opening_of_a_pair_is_the_same_in_both_games():
    # With random_opening=3 both games of a pair reach the same position at ply 6.
    Recorder.log = []
    play_match(CC49, "test-recorder", "test-recorder", games=4, seed=11, engine="reference")
    per_game = [calls for calls in games_of(Recorder.log) if calls]  # A's reset, then B's: one list a game
    assert len(per_game) == 4
    boards_at_6 = [min(calls)[2] for calls in per_game]
    assert all(min(calls)[0] == 6 for calls in per_game)
    assert boards_at_6[0] == boards_at_6[1] and boards_at_6[2] == boards_at_6[3]
    assert boards_at_6[0] != boards_at_6[2]


def test_without_random_opening_players_choose_from_the_first_ply():
    Recorder.log = []
    play_match(CC49, "test-recorder", "random", games=2, seed=0, random_opening=0, engine="reference")
    games = games_of(Recorder.log)
    assert min(ply for ply, _, _ in games[0]) == 0
    assert min(ply for ply, _, _ in games[1]) == 1


def test_opening_moves_are_uniform():
    # small-4-3 has 6 first moves; random_opening=1 draws the first ply uniformly.
    rules = preset("small-4-3")
    start = rules.geometry.start_board()
    counts = {}
    for i in range(600):
        Recorder.log = []
        rng = np.random.default_rng(i)
        play_game(rules, Recorder(rules, i), RandomPlayer(rules, i), opening_rng=rng, random_opening=1, engine="reference")
        board = next(board for kind, ply, _, board in Recorder.log if kind == "select")
        moved = tuple(j for j in range(rules.cells) if (start[j] == 0) != (board[j] == 0))
        counts[moved] = counts.get(moved, 0) + 1
    assert len(counts) == 6 and min(counts.values()) > 60


@pytest.mark.parametrize("engine", ENGINES)
def test_play_game_counts_plies_and_positions(engine):
    rules = preset("small-5-3")
    a, b = RandomPlayer(rules, 1), RandomPlayer(rules, 2)
    result, plies, positions, legal = play_game(rules, a, b, opening_rng=np.random.default_rng(0), engine=engine)
    assert result in (-1, 0, 1)
    assert positions == plies <= rules.max_plies
    assert legal >= positions


@pytest.mark.parametrize("engine", ENGINES)
def test_same_seed_same_result(engine):
    args = dict(games=6, random_opening=3, engine=engine)
    one = play_match(CC49, "greedy", "greedy-stochastic", seed=5, **args)
    two = play_match(CC49, "greedy", "greedy-stochastic", seed=5, **args)
    assert one == two
    other = play_match(CC49, "greedy", "greedy-stochastic", seed=6, **args)
    assert (other.a_results, other.mean_legal_moves) != (one.a_results, one.mean_legal_moves)


def test_engines_play_the_same_match():
    args = dict(games=4, seed=2)
    assert play_match(CC49, "random", "greedy", engine="reference", **args) == play_match(
        CC49, "random", "greedy", engine="cython", **args
    )


def test_workers_give_the_same_result_as_one_process():
    args = dict(games=5, seed=8, random_opening=3)
    one = play_match(preset("paper"), "greedy-stochastic", "random", workers=1, **args)
    two = play_match(preset("paper"), "greedy-stochastic", "random", workers=2, **args)
    assert one == two


def test_result_fields_add_up():
    r = play_match(preset("paper"), "greedy", "greedy-stochastic", games=8, seed=1)
    assert r.a_wins + r.b_wins + r.draws == r.games == len(r.a_results) == 8
    assert sum(r.seat_wins) == r.a_wins + r.b_wins
    first, second = r.a_first, r.a_second
    assert first.wins + second.wins == r.a_wins and first.losses + second.losses == r.b_wins
    assert r.mean_plies > 6 and r.mean_legal_moves > 1
    d = r.to_dict()
    assert {"a_wins", "b_wins", "draws", "mean_plies", "mean_legal_moves", "seat_wins", "a_first"} <= set(d)
    assert "a_results" not in d


def test_bad_match_arguments_raise():
    with pytest.raises(ValueError, match="games"):
        play_match(CC49, "greedy", "random", games=0, seed=0)
    with pytest.raises(ValueError, match="unknown player"):
        play_match(CC49, "greedy", "nobody", games=2, seed=0)
