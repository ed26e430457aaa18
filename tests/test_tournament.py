"""Round-robin tournaments (evaluator.tournament, ``hopzero tournament``): every pair's games from
both seats, a Bradley-Terry ladder anchored at random, a results file that a second run resumes
from (and that no other tournament may continue), and the ladder as JSON, Markdown and PNG."""

from __future__ import annotations

import json

import pytest
from test_cli import run, run_json

from ccengine import preset
from ccengine.players import PlayerSpecError
from evaluator.arena import play_match
from evaluator.tournament import Tournament, TournamentError

STAR3 = preset("star3")

RULES = preset("small-4-3")
PLAYERS = ["random", "greedy", "alphabeta:depth=1", "alphabeta:depth=2"]


def tournament(path, players=PLAYERS, games=6, seed=1, **kwargs):
    return Tournament(RULES, list(players), games=games, seed=seed, path=path, **kwargs)


def test_every_pair_plays_its_games_and_random_anchors_the_ladder(tmp_path):
    result = tournament(tmp_path / "games.jsonl").run()
    assert result.complete and len(result.pairs) == 6
    assert all(p.games == 6 for p in result.pairs)
    standings = {s.player: s for s in result.standings}
    assert result.anchor == "random" and standings["random"].elo == 0 == standings["random"].low
    assert standings["greedy"].vs_greedy == 0
    assert standings["greedy"].elo > 0 and standings["greedy"].low < standings["greedy"].elo < standings["greedy"].high
    assert [s.elo for s in result.standings] == sorted((s.elo for s in result.standings), reverse=True)
    # Each pair's record is the match the arena plays with the pair's seed.
    t = tournament(tmp_path / "other.jsonl")
    alone = play_match(RULES, "greedy", "alphabeta:depth=1", games=6, seed=t.group_seed(("greedy", "alphabeta:depth=1")))
    pair = next(p for p in result.pairs if (p.a, p.b) == ("greedy", "alphabeta:depth=1"))
    assert (pair.wins, pair.draws, pair.losses) == (alone.a_wins, alone.draws, alone.b_wins)


def test_an_interrupted_tournament_resumes_where_it_stopped(tmp_path):
    path = tmp_path / "games.jsonl"
    played = []

    def stop_after_eight(group, index, scores):
        played.append((*group, index))
        if len(played) == 8:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tournament(path).run(on_game=stop_after_eight)
    assert len(path.read_text().splitlines()) == 1 + 8
    with open(path, "a") as f:
        f.write('{"group": ["random", "gre')  # a crash mid-line
    resumed = []
    result = tournament(path).run(on_game=lambda group, i, scores: resumed.append((*group, i)))
    assert len(resumed) == 6 * 6 - 8 and not set(resumed) & set(played)
    fresh = tournament(tmp_path / "fresh.jsonl").run()
    assert result.pairs == fresh.pairs and result.standings == fresh.standings
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_file_of_another_tournament_or_of_nothing_is_refused(tmp_path):
    path = tmp_path / "games.jsonl"
    tournament(path, games=2).run()
    before = path.read_text()
    for other in (dict(seed=2), dict(games=4), dict(players=PLAYERS[:3])):
        with pytest.raises(TournamentError, match="holds another tournament"):
            tournament(path, **{"games": 2, **other}).run()
    assert path.read_text() == before
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("hello\n")
    with pytest.raises(TournamentError, match="not a hopzero tournament file"):
        tournament(garbage).run()
    forged = tmp_path / "forged.jsonl"
    forged.write_text(before + '{"group": ["random", "nobody"], "index": 0, "scores": [1, 0]}\n')
    with pytest.raises(TournamentError, match="line 14 is not a game of this tournament"):
        tournament(forged, games=2).run()


def test_a_file_written_before_by_a_two_player_tournament_resumes(tmp_path):
    """Two-player tournaments wrote A's result, ``{"a", "b", "index", "a_result"}``: read as the
    result vectors the lines hold now, and the tournament goes on from there."""
    path = tmp_path / "games.jsonl"
    tournament(path, games=2).run()
    lines = path.read_text().splitlines()
    old = [lines[0]]
    for line in lines[1:]:
        row = json.loads(line)
        a, b = row["group"]
        result = {1.0: 1, 0.5: 0, 0.0: -1}[row["scores"][0]]
        old.append(json.dumps({"a": a, "b": b, "index": row["index"], "a_result": result}))
    converted = tmp_path / "old.jsonl"
    converted.write_text("\n".join(old[:-3]) + "\n")  # three games still to play
    resumed = []
    result = tournament(converted, games=2).run(on_game=lambda group, i, scores: resumed.append(i))
    assert len(resumed) == 3
    assert result == tournament(path, games=2).result()


def test_bad_tournaments_are_refused_before_any_game(tmp_path):
    path = tmp_path / "games.jsonl"
    with pytest.raises(TournamentError, match="at least two players"):
        tournament(path, players=["greedy"])
    with pytest.raises(TournamentError, match="named twice: 'greedy'"):
        tournament(path, players=["greedy", "random", "greedy"])
    with pytest.raises(TournamentError, match="games=3: give a multiple of 2"):
        tournament(path, games=3)
    with pytest.raises(PlayerSpecError):
        tournament(path, players=["greedy", "alphabeta:depth=99"])
    with pytest.raises(TournamentError, match="parallel=8 and workers=2"):
        tournament(path, parallel=8, workers=2)
    assert not path.exists()


def test_the_command_refuses_parallel_with_workers_in_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "ladder"
    proc = run("tournament", "--preset", "small-4-3", "--players", "random", "greedy", "--games", "4",
               "--parallel", "8", "--workers", "2", "--out", str(out), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "parallel=8 and workers=2" in proc.stderr.strip().splitlines()[-1]
    assert not out.exists()


def test_the_command_writes_the_ladder_and_resumes(tmp_path):
    out = tmp_path / "ladder"
    args = ("tournament", "--preset", "small-4-3", "--players", "random", "greedy", "alphabeta:depth=1",
            "--games", "4", "--seed", "3", "--out", str(out), "--parallel", "2")
    data = run_json(*args)
    assert data["complete"] and [s["player"] for s in data["standings"]][-1] == "random"
    assert {p.name for p in out.iterdir()} == {"games.jsonl", "ladder.json", "ladder.md", "ladder.png", "results.jsonl"}
    from evaluator.results import read_results

    assert len(read_results(out / "results.jsonl")) == 3  # what hopzero serve --results tabulates
    assert (out / "ladder.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| `random` | `greedy` |" in (out / "ladder.md").read_text()
    again = run(*args)
    assert "resuming" in again.stderr and "12 of 12 games already played" in again.stderr
    assert json.loads((out / "ladder.json").read_text())["standings"] == data["standings"]
    bad = run("tournament", "--players", "greedy", "--out", str(tmp_path / "x"), check=False)
    assert bad.returncode == 2 and "at least two players" in bad.stderr and "Traceback" not in bad.stderr


def test_a_published_record_against_greedy_sits_beside_the_ladder_without_moving_it(tmp_path):
    plain = tournament(tmp_path / "plain.jsonl", games=2).run()
    result = tournament(tmp_path / "ref.jsonl", games=2, references=["seed paper=271-1-28"]).run()
    played = {s.player: s for s in result.standings if not s.published}
    assert played == {s.player: s for s in plain.standings}  # it plays no game and does not move the fit
    (paper,) = [s for s in result.standings if s.published]
    assert (paper.player, paper.published, paper.games, paper.score) == ("seed paper", "271-1-28", 300, 0.905)
    assert paper.vs_greedy == pytest.approx(392, abs=0.5)  # the Elo change the paper's Table 2 gives
    assert paper.elo == pytest.approx(played["greedy"].elo + 391.6, abs=0.2)
    assert paper.low < paper.elo < paper.high and paper.high - paper.low > played["greedy"].high - played["greedy"].low
    assert "seed paper (published: 271-1-28 against greedy)" in result.markdown()
    assert "seed paper (published)" in result.text()
    for bad, message in (("seed paper", "LABEL=W-D-L"), ("x=1-2", "LABEL=W-D-L"), ("=1-2-3", "LABEL=W-D-L"),
                         ("x=0-0-0", "no games"), ("greedy=1-0-0", "names a player")):
        with pytest.raises(TournamentError, match=message):
            tournament(tmp_path / "bad.jsonl", references=[bad])
    with pytest.raises(TournamentError, match="in which greedy plays"):
        tournament(tmp_path / "bad.jsonl", players=["random", "alphabeta:depth=1"], references=["x=1-0-0"])
    assert not (tmp_path / "bad.jsonl").exists()


def test_a_star3_round_robin_rates_pairwise_comparisons_anchored_and_ordered(tmp_path):
    from evaluator.tournament import Tournament, TournamentError, write_outputs

    players = ["greedy", "random", "alphabeta:depth=2"]
    with pytest.raises(TournamentError, match="multiple of 3"):
        Tournament(STAR3, players[:3], games=4, seed=0, path=tmp_path / "x.jsonl")
    with pytest.raises(TournamentError, match="at least 3"):
        Tournament(STAR3, players[:2], games=3, seed=0, path=tmp_path / "x.jsonl")
    t = Tournament(STAR3, players[:3], games=6, seed=3, path=tmp_path / "games.jsonl")
    result = t.run()
    assert result.complete and t.groups() == [tuple(players[:3])]
    assert all(p.games == 6 for p in result.pairs)  # one group of 6 games: 6 comparisons per pair
    # the pairs are the match's pairwise comparisons, replayed here with the group's seed
    seed = int(__import__("numpy").random.SeedSequence([3, 0, 1, 2]).generate_state(1)[0])
    alone = play_match(STAR3, *players[:3], games=6, seed=seed)
    pair = next(p for p in result.pairs if (p.a, p.b) == ("greedy", "alphabeta:depth=2"))
    assert (pair.wins, pair.draws, pair.losses) == alone.pairwise(0, 2)
    standings = {s.player: s for s in result.standings}
    assert result.anchor == "random" and standings["random"].elo == 0
    assert standings["greedy"].vs_greedy == 0 and standings["random"].vs_greedy < 0
    assert standings["random"].elo < min(standings["greedy"].elo, standings["alphabeta:depth=2"].elo)
    assert [s.elo for s in result.standings] == sorted((s.elo for s in result.standings), reverse=True)
    assert Tournament(STAR3, players[:3], games=6, seed=3, path=tmp_path / "games.jsonl").run() == result  # resumed
    files = write_outputs(result, tmp_path / "out", random_opening=3)
    assert all(f.is_file() for f in files)
    assert "pairwise comparisons" in result.text()
    # four players: every three of them play
    four = Tournament(STAR3, players[:3] + ["greedy-stochastic"], games=3, seed=1, path=tmp_path / "four.jsonl")
    assert len(four.groups()) == 4
    assert all(p.games == 2 * 3 for p in four.run().pairs)  # each pair meets in two groups


def test_seatings_rotate_or_play_every_order():
    from evaluator.arena import game_seeds, seat_of, set_seatings

    assert set_seatings(3) == ((0, 1, 2), (1, 2, 0), (2, 0, 1))
    assert all(seat_of(i, k, 3) == (k + i) % 3 for i in range(9) for k in range(3))  # rotation i % 3
    every = set_seatings(3, "permutations")
    assert len(every) == 6 == len(set(every)) and set(set_seatings(3)) < set(every)
    assert all(sorted(g[k] for g in every) == [0, 0, 1, 1, 2, 2] for k in range(3))  # each seat twice each
    assert set_seatings(2, "permutations") == set_seatings(2) == ((0, 1), (1, 0))
    assert len(set_seatings(6, "permutations")) == 720
    with pytest.raises(ValueError, match="unknown seating 'random'"):
        set_seatings(3, "random")
    # a set of six shares one opening; rotations keep their seeds
    seeds = game_seeds(5, 12, 3, 6)
    assert len({s[0].entropy for s in seeds}) == 1 and seeds[0][0].spawn_key != seeds[6][0].spawn_key
    assert [s[0].spawn_key for s in seeds[:6]] == [seeds[0][0].spawn_key] * 6
    assert [s[1].spawn_key for s in game_seeds(5, 6, 3)] == [s[1].spawn_key for s in game_seeds(5, 6, 3, 3)]


def test_a_match_with_every_seat_order_plays_each_order_once_a_set():
    result = play_match(STAR3, "greedy", "greedy-stochastic", "random", games=12, seed=2, seating="permutations")
    assert result.seating == "permutations" and result.to_dict()["seating"] == "permutations"
    assert [g.seats for g in result.played[:6]] == list(__import__("itertools").permutations(range(3)))
    assert [g.seats for g in result.played[6:]] == [g.seats for g in result.played[:6]]
    assert result == play_match(STAR3, "greedy", "greedy-stochastic", "random", games=12, seed=2,
                                seating="permutations", workers=2)


def test_a_star3_tournament_of_every_seat_order_with_bootstrap_intervals(tmp_path):
    players = ["greedy", "random", "alphabeta:depth=1", "greedy-stochastic"]
    with pytest.raises(TournamentError, match="multiple of 6"):
        Tournament(STAR3, players, games=3, seed=0, path=tmp_path / "x.jsonl", seating="permutations")
    path = tmp_path / "games.jsonl"
    result = Tournament(STAR3, players, games=6, seed=4, path=path, seating="permutations").run()
    assert result.complete and all(p.games == 2 * 6 for p in result.pairs)
    assert json.loads(path.read_text().splitlines()[0])["seating"] == "permutations"
    with pytest.raises(TournamentError, match="holds another tournament"):
        Tournament(STAR3, players, games=6, seed=4, path=path).load()  # the same, by rotations
    again = Tournament(STAR3, players, games=6, seed=4, path=path, seating="permutations").run()
    assert again == result  # resumed: nothing left to play, the same intervals from the same seed
    for s in result.standings:
        assert s.low <= s.elo <= s.high
    # the fit's own errors treat the comparisons of a game as independent; the bootstrap keeps a
    # game's together, and the interval is the wider of the two
    t = Tournament(STAR3, players, games=6, seed=4, path=path, seating="permutations")
    analytic = {s.player: (s.low, s.high) for s in t._standings(list(result.pairs))}
    games = {g: list(v.values()) for g, v in t.load().items()}
    boot = t._bootstrap(games)
    assert boot == t._bootstrap(games) and set(boot) == set(players)
    for s in result.standings:
        assert (s.low, s.high) == (round(min(analytic[s.player][0], boot[s.player][0]), 1),
                                   round(max(analytic[s.player][1], boot[s.player][1]), 1))


def test_a_tournament_file_from_before_seatings_resumes_as_rotations(tmp_path):
    path = tmp_path / "games.jsonl"
    t = Tournament(STAR3, ["greedy", "random", "greedy-stochastic"], games=3, seed=1, path=path)
    t.run()
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    del header["seating"]
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert Tournament(STAR3, ["greedy", "random", "greedy-stochastic"], games=3, seed=1, path=path).run().complete
