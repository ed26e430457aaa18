"""The one match runner for two to six players: the seed paper's protocol (random openings, every
seat rotation, one opening a set), reproducible seeding for any ``parallel`` or ``workers``, the
result vectors and what is read from them, and the game loop the other callers share."""

import numpy as np
import pytest
from test_cli import run, run_json

from ccengine import preset
from ccengine.engines import new_state
from ccengine.game_loop import play_game
from ccengine.players import RandomPlayer
from evaluator.arena import game_seeds, play_match, seat_of
from learner.players import make_player

CC49 = preset("cc49")
STAR3 = preset("star3")
STAR4 = preset("star4")
ENGINES = ["reference", "cython"]


class Recorder(RandomPlayer):
    """A random player that writes down every call the arena makes on it."""

    def __init__(self, rules, seed=None):
        super().__init__(rules, seed)
        self.log = []
        self.name = "recorder"

    def reset(self, seed=None):
        super().reset(seed)
        self.log.append(("reset", None, None, None))

    def select(self, state):
        self.log.append(("select", state.ply, state.to_move, tuple(state.board)))
        return super().select(state)


def games_of(log):
    """The select calls of a Recorder log, split into games at each reset."""
    games = []
    for kind, ply, to_move, board in log:
        if kind == "reset":
            games.append([])
        else:
            games[-1].append((ply, to_move, board))
    return games


def _games(result):
    return [(g.index, g.seats, g.scores, g.plies, g.moves) for g in result.played]


def _replayed(rules, moves):
    state = new_state(rules)
    for move in moves:
        state.play(tuple(move))
    return state


# ---------------------------------------------------------------------------------------------
# The protocol
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_two_players_alternate_seats_and_openings_are_random(engine):
    recorder = Recorder(CC49)
    result = play_match(CC49, recorder, "random", games=6, seed=3, random_opening=3, engine=engine)
    games = games_of(recorder.log)
    assert len(games) == 6
    for i, calls in enumerate(games):
        assert calls, "the recorder was never asked for a move"
        # A holds seat 0 in even games, seat 1 in odd games; it is never asked in the opening.
        assert {to_move for _, to_move, _ in calls} == {i % 2} == {seat_of(i, 0, 2)}
        assert min(ply for ply, _, _ in calls) == 6 + i % 2
    first_boards = [calls[0][2] for calls in games]
    assert first_boards[0] != first_boards[2]
    assert sum(vars(result.a_record(0)).values()) == sum(vars(result.a_record(1)).values()) == 3


def test_the_games_of_a_set_share_their_opening():
    a, b = Recorder(CC49), Recorder(CC49)
    play_match(CC49, a, b, games=4, seed=11, engine="reference")
    # with random_opening=3 both games of a pair reach the same position at ply 6
    per_game = [sorted(x + y) for x, y in zip(games_of(a.log), games_of(b.log))]
    boards_at_6 = [calls[0][2] for calls in per_game]
    assert all(calls[0][0] == 6 for calls in per_game)
    assert boards_at_6[0] == boards_at_6[1] and boards_at_6[2] == boards_at_6[3]
    assert boards_at_6[0] != boards_at_6[2]


def test_every_seat_rotation_in_each_set_and_one_opening_a_set():
    m = play_match(STAR3, "greedy", "random", "greedy-stochastic", games=6, seed=11, keep_moves=True)
    assert m.games == 6 and len(m.played) == 6
    for g in m.played:
        assert g.seats == tuple(seat_of(g.index, k, 3) for k in range(3)) == tuple((k + g.index) % 3 for k in range(3))
        assert abs(sum(g.scores) - 1.0) < 1e-12
        state = _replayed(STAR3, g.moves)  # the moves recorded are a whole game with that result
        assert state.is_terminal() and tuple(state.scores()) == g.scores and state.ply == g.plies
    for first in (0, 3):  # a set: each player once in each seat, the first 3 * 3 plies shared
        in_set = m.played[first:first + 3]
        assert {g.seats[0] for g in in_set} == {0, 1, 2}
        assert len({g.moves[:9] for g in in_set}) == 1
    assert m.played[0].moves[:9] != m.played[3].moves[:9]
    for k in range(3):  # two games from each seat per player
        assert [r.games for r in m.by_seat[k]] == [2, 2, 2]
        assert m.records[k].score == pytest.approx(sum(g.player_scores[k] for g in m.played))


def test_without_random_opening_players_choose_from_the_first_ply():
    recorder = Recorder(CC49)
    play_match(CC49, recorder, "random", games=2, seed=0, random_opening=0, engine="reference")
    games = games_of(recorder.log)
    assert min(ply for ply, _, _ in games[0]) == 0
    assert min(ply for ply, _, _ in games[1]) == 1


def test_two_player_seeds_are_the_pairs_of_the_n_player_schedule():
    """Set ``s`` spawns the opening's sequence and one per game, each game one per player: for two
    players these are the colour-swapped pairs' seeds."""
    seeds = game_seeds(9, 4, 2)
    assert seeds[0][0].entropy == seeds[1][0].entropy and seeds[0][0].spawn_key == seeds[1][0].spawn_key
    assert seeds[0][0].spawn_key != seeds[2][0].spawn_key
    assert len(game_seeds(9, 7, 3)) == 7


# ---------------------------------------------------------------------------------------------
# Reproducible for any parallel or workers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_same_seed_same_result(engine):
    args = dict(games=6, random_opening=3, engine=engine)
    one = play_match(CC49, "greedy", "greedy-stochastic", seed=5, **args)
    assert play_match(CC49, "greedy", "greedy-stochastic", seed=5, **args) == one
    other = play_match(CC49, "greedy", "greedy-stochastic", seed=6, **args)
    assert (other.a_results, other.mean_legal_moves) != (one.a_results, one.mean_legal_moves)


def test_engines_play_the_same_match():
    args = dict(games=4, seed=2)
    assert play_match(CC49, "random", "greedy", engine="reference", **args) == play_match(
        CC49, "random", "greedy", engine="cython", **args
    )


def test_the_same_for_any_parallel_or_workers_and_skip_keeps_the_other_games():
    args = dict(games=8, seed=4, keep_moves=True)
    players = ["greedy-stochastic", "random", "greedy-stochastic", "greedy"]
    one = play_match(STAR4, *players, **args)
    assert _games(play_match(STAR4, *players, **args)) == _games(one)
    assert _games(play_match(STAR4, *players, parallel=3, **args)) == _games(one)
    assert _games(play_match(STAR4, *players, workers=2, **args)) == _games(one)
    assert _games(play_match(STAR4, *players, games=8, seed=5, keep_moves=True)) != _games(one)
    rest = play_match(STAR4, *players, skip={0, 1, 2, 5}, **args)
    assert _games(rest) == [x for x in _games(one) if x[0] in (3, 4, 6, 7)]
    two = dict(games=5, seed=8)
    assert play_match(preset("paper"), "greedy-stochastic", "random", workers=2, **two) == play_match(
        preset("paper"), "greedy-stochastic", "random", **two)


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


def test_scores_wins_and_pairwise_comparisons_follow_the_result_vectors():
    seen = []
    m = play_match(STAR3, "greedy", "random", "random", games=6, seed=2,
                   on_game=lambda s, r, scores: seen.append((s, r, scores)))
    assert sorted((s, r) for s, r, _ in seen) == [(s, r) for s in range(2) for r in range(3)]
    assert m.records[0].mean_score > 0.9 and m.records[0].wins >= 5  # greedy beats two random players
    w, d, lost = m.pairwise(0, 1)
    assert w + d + lost == 6 and w >= 5
    for s, r, scores in seen:
        assert m.played[3 * s + r].player_scores == scores
    data = m.to_dict()
    assert data["players"] == ["greedy", "random", "random"] and len(data["pairwise"]) == 3
    assert data["results"][0]["by_seat"][0]["games"] == 2
    randoms = data["pairwise"][2]  # the two random players, both beaten whenever greedy won alone
    assert randoms["both_lost"] == sum(g.player_scores[1] == g.player_scores[2] == 0 for g in m.played) >= 5
    assert randoms["draws"] >= randoms["both_lost"]
    assert "a_wins" not in data  # A against B is the view of a match of two
    for k, entry in enumerate(data["results"]):  # how each player's games ended, by outcome
        ends = entry["endings"]
        assert sum(ends["won"].values()) == entry["wins"] and sum(ends["drawn"].values()) == data["draws"]
        assert sum(ends["won"].values()) + sum(ends["drawn"].values()) + sum(ends["lost"].values()) == 6
        assert {r for outcome in ends.values() for r in outcome} <= {"all_home", "anti_block", "repetition", "max_plies"}
    assert sum(data["results"][1]["endings"]["lost"].values()) >= 5  # a random player loses to greedy


def test_a_match_of_two_is_also_a_against_b():
    r = play_match(preset("paper"), "greedy", "greedy-stochastic", games=8, seed=1)
    assert r.a_wins + r.b_wins + r.draws == r.games == len(r.a_results) == 8
    assert (r.a_wins, r.draws, r.b_wins) == r.pairwise(0, 1)
    first, second = r.a_record(0), r.a_record(1)
    assert first.wins + second.wins == r.a_wins and first.losses + second.losses == r.b_wins
    assert r.records[0].mean_score == pytest.approx(r.a_score)
    d = r.to_dict()
    assert {"a", "b", "a_wins", "b_wins", "draws", "a_score", "seat_wins", "a_first", "a_second",
            "players", "pairwise"} <= set(d)
    assert sum(d["seat_wins"]) == r.a_wins + r.b_wins and "a_results" not in d
    assert d["pairwise"][0]["both_lost"] == 0  # two players never both lose


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="star3 rules seat 3 players; 2 were given"):
        play_match(STAR3, "greedy", "random", games=3, seed=0)
    with pytest.raises(ValueError, match="games=0"):
        play_match(STAR3, "greedy", "random", "random", games=0, seed=0)
    with pytest.raises(ValueError, match="unknown player"):
        play_match(CC49, "greedy", "nobody", games=2, seed=0)
    one = make_player("greedy", STAR3)
    with pytest.raises(ValueError, match="cannot hold two seats"):
        play_match(STAR3, one, "random", one, games=3, seed=0)


def test_match_command_plays_two_to_n_players(tmp_path):
    from evaluator.results import read_results

    out = tmp_path / "results.jsonl"
    data = run_json("match", "--preset", "star3", "--players", "greedy", "random", "random", "--games", "3",
                    "--seed", "1", "--out", str(out))
    lines = read_results(out)  # greedy against each random, none between the two randoms
    assert [(x["a"], x["b"], x["games"]) for x in lines] == [("greedy", "random", 3)] * 2
    assert sum(x["a_wins"] for x in lines) == sum(p["wins"] for p in data["pairwise"][:2])
    assert data["players"] == ["greedy", "random", "random"] and data["games"] == 3
    assert [len(r["by_seat"]) for r in data["results"]] == [3, 3, 3]
    text = run("match", "--preset", "star3", "--players", "greedy", "random", "random", "--games", "3").stdout
    assert "every seat rotation" in text and "seat 2:" in text
    bad = run("match", "--preset", "star3", "--players", "greedy", "random", check=False)
    assert bad.returncode == 2 and "star3 seats 3 players, 2 SPECs were given" in bad.stderr
    bad = run("match", "--preset", "star3", "--a", "greedy", "--b", "random", check=False)
    assert bad.returncode == 2 and "star3 seats 3 players, 2 SPECs were given" in bad.stderr
    two = run_json("match", "--preset", "cc49", "--players", "greedy", "random", "--games", "4")
    assert two == {**run_json("match", "--preset", "cc49", "--a", "greedy", "--b", "random", "--games", "4"),
                   "elapsed_s": two["elapsed_s"]}
    assert "A moving first" in run("match", "--a", "greedy", "--b", "random", "--games", "2").stdout


# ---------------------------------------------------------------------------------------------
# The game loop the benchmarks, TD learning, the calibration and stage 1 share
# ---------------------------------------------------------------------------------------------


def test_opening_moves_are_uniform():
    # small-4-3 has 6 first moves; random_opening=1 draws the first ply uniformly.
    rules = preset("small-4-3")
    start = rules.geometry.start_board()
    counts = {}
    for i in range(600):
        recorder = Recorder(rules, i)
        play_game(rules, [recorder, RandomPlayer(rules, i)], opening_rng=np.random.default_rng(i), random_opening=1,
                  engine="reference")
        board = next(board for kind, ply, _, board in recorder.log if kind == "select")
        moved = tuple(j for j in range(rules.cells) if (start[j] == 0) != (board[j] == 0))
        counts[moved] = counts.get(moved, 0) + 1
    assert len(counts) == 6 and min(counts.values()) > 60


@pytest.mark.parametrize("engine", ENGINES)
def test_play_game_counts_plies_positions_and_moves(engine):
    rules = preset("small-5-3")
    seen = []
    game = play_game(rules, [RandomPlayer(rules, 1), RandomPlayer(rules, 2)], engine=engine,
                     on_position=lambda state, moves: seen.append(len(moves)))
    assert len(game.scores) == 2 and sum(game.scores) == 1.0
    assert game.positions == game.plies == len(game.moves) == len(seen) <= rules.max_plies
    assert game.legal_moves == sum(seen) >= game.positions
    replayed = _replayed(rules, game.moves)
    assert tuple(replayed.scores()) == game.scores
    cut = play_game(preset("star3"), [RandomPlayer(STAR3, k) for k in range(3)], max_plies=12)
    assert cut.plies == 12 and cut.scores == ()  # unfinished: no result
    with pytest.raises(ValueError, match="seat 3 players; 2 were given"):
        play_game(STAR3, [RandomPlayer(STAR3), RandomPlayer(STAR3)])
