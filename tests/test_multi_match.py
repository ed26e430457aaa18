"""N-player matches (evaluator.arena.play_multi_match), the N-player gate and its use by the
evaluator, with real players on star3 and star4."""

import json

import pytest
from test_cli import run, run_json

from ccengine import preset
from ccengine.engines import new_state
from evaluator.arena import play_match, play_multi_match, seat_of
from evaluator.gating import GateConfig, MultiGate

STAR3 = preset("star3")
STAR4 = preset("star4")


def _games(result):
    return [(g.index, g.seats, g.scores, g.plies, g.moves) for g in result.played]


def _replayed(rules, moves):
    state = new_state(rules)
    for move in moves:
        state.play(tuple(move))
    return state


def test_every_seat_rotation_in_each_set_and_one_opening_a_set():
    m = play_multi_match(STAR3, ["greedy", "random", "greedy-stochastic"], games=6, seed=11, keep_moves=True)
    assert m.games == 6 and len(m.played) == 6
    for g in m.played:
        assert g.seats == tuple(seat_of(g.index, k, 3) for k in range(3)) == tuple((k + g.index) % 3 for k in range(3))
        assert sorted(g.seats) == [0, 1, 2]
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


def test_reproducible_from_the_seed_and_the_same_for_any_parallel_or_workers():
    args = dict(games=8, seed=4, keep_moves=True)
    players = ["greedy-stochastic", "random", "greedy-stochastic", "greedy"]
    one = play_multi_match(STAR4, players, **args)
    assert _games(play_multi_match(STAR4, players, **args)) == _games(one)
    assert _games(play_multi_match(STAR4, players, parallel=3, **args)) == _games(one)
    assert _games(play_multi_match(STAR4, players, workers=2, **args)) == _games(one)
    assert _games(play_multi_match(STAR4, players, games=8, seed=5, keep_moves=True)) != _games(one)
    # skip: the other games are the games they would have been
    rest = play_multi_match(STAR4, players, skip={0, 1, 2, 5}, **args)
    assert _games(rest) == [x for x in _games(one) if x[0] in (3, 4, 6, 7)]


def test_scores_wins_and_pairwise_comparisons_follow_the_result_vectors():
    seen = []
    m = play_multi_match(STAR3, ["greedy", "random", "random"], games=6, seed=2,
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


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="star3 rules seat 3 players; 2 were given"):
        play_multi_match(STAR3, ["greedy", "random"], games=3, seed=0)
    with pytest.raises(ValueError, match="games=0"):
        play_multi_match(STAR3, ["greedy", "random", "random"], games=0, seed=0)
    with pytest.raises(ValueError, match="play_multi_match"):
        play_match(STAR3, "greedy", "random", games=2, seed=0)
    from ccengine.players import make_player

    one = make_player("greedy", STAR3)
    with pytest.raises(ValueError, match="cannot hold two seats"):
        play_multi_match(STAR3, [one, "random", one], games=3, seed=0)


def test_match_command_plays_n_players_and_prints_per_player_and_per_seat(tmp_path):
    from evaluator.results import read_results

    out = tmp_path / "results.jsonl"
    data = run_json("match", "--preset", "star3", "--players", "greedy", "random", "random", "--games", "3",
                    "--seed", "1", "--out", str(out))
    lines = read_results(out)  # greedy against each random, none between the two randoms
    assert [(x["a"], x["b"], x["games"]) for x in lines] == [("greedy", "random", 3)] * 2
    assert sum(x["a_wins"] for x in lines) == sum(p["wins"] for p in data["pairwise"][:2])
    assert data["players"] == ["greedy", "random", "random"] and data["games"] == 3
    assert [len(r["by_seat"]) for r in data["results"]] == [3, 3, 3]
    assert data["results"][0]["wins"] == 3
    text = run("match", "--preset", "star3", "--players", "greedy", "random", "random", "--games", "3").stdout
    assert "every seat rotation" in text and "seat 2:" in text
    bad = run("match", "--preset", "star3", "--players", "greedy", "random", check=False)
    assert bad.returncode == 2 and "star3 seats 3 players, 2 SPECs were given" in bad.stderr


# --- the N-player gate --------------------------------------------------------------------------


def _gate(candidate, best, config, rules=STAR3, seed=5):
    n = rules.players
    gate = MultiGate(config, n)
    play_multi_match(rules, [candidate] + [best] * (n - 1), games=gate.games, seed=seed,
                     on_game=gate.record, should_stop=lambda: gate.finished)
    return gate.result()


def test_gate_promotes_the_stronger_candidate_and_rejects_the_weaker():
    config = GateConfig(games=12, min_games=0)
    up = _gate("greedy", "random", config)
    assert up.decision == "promote" and up.games == 12 and up.wins + up.draws + up.losses == 24
    assert up.score >= 0.55
    down = _gate("random", "greedy", config)
    assert down.decision == "reject" and down.score < 0.55
    # with the SPRT a clear case stops early, never before min_games
    sprt = _gate("greedy", "random", GateConfig(games=40, min_games=8, sprt=True, elo0=-100, elo1=300),
                 rules=STAR4)
    assert sprt.decision == "promote" and 8 <= sprt.games < 40 and sprt.games % 4 == 0


def test_gate_counts_complete_sets_in_order_and_exactly():
    gate = MultiGate(GateConfig(games=6, min_games=0, threshold="1/2"), 3)
    assert gate.sets == 2 and gate.games == 6
    gate.record(1, 0, (1.0, 0.0, 0.0))  # set 1 before set 0: pending
    assert gate.result().games == 0 and gate.result().pending_games == 1
    for rotation in range(3):
        gate.record(0, rotation, (0.0, 1.0, 0.0))  # behind one copy, level with the other
    assert (gate.result().wins, gate.result().draws, gate.result().losses) == (0, 3, 3)
    gate.record(1, 1, (0.5, 0.5, 0.0))
    result = gate.record(1, 2, (1 / 3, 1 / 3, 1 / 3))
    # comparisons: set 0: 3 draws 3 losses; set 1: 2 + 1 + 0 wins, 0 + 1 + 2 draws
    assert (result.wins, result.draws, result.losses) == (3, 6, 3)
    assert result.decision == "promote" and result.score == 0.5  # 12/24 reaches 1/2 exactly
    bad = MultiGate(GateConfig(games=6, min_games=0), 3)
    bad.record(0, 0, (1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="already recorded"):
        bad.record(0, 0, (1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="3 players"):
        bad.record(0, 1, (1.0, 0.0))
    with pytest.raises(ValueError, match="less than one set"):
        MultiGate(GateConfig(games=2, min_games=0), 3)
    with pytest.raises(ValueError, match="not 'ignore'"):
        MultiGate(GateConfig(draws="ignore"), 3)


class _SpecService:
    """The evaluator's N-player paths with SPEC players in place of networks (the maxn branch
    brings networks that play N players); everything else is the service's own code."""

    @staticmethod
    def build(tmp_path):
        from ccengine.search import SearchConfig
        from evaluator.config import EvaluationConfig
        from evaluator.service import EvaluatorService
        from learner.model import NetworkConfig

        class Service(EvaluatorService):
            def player(self, weights, name):
                return weights  # a SPEC here

        return Service(rules=STAR3, network=NetworkConfig(size="tiny", encoding="general", history=3),
                       search=SearchConfig(), evaluation=EvaluationConfig(greedy_games=5, parallel_games=2,
                                                                          gate=GateConfig(games=12, min_games=0)),
                       seed=0, config_hash="cafe", run_dir=str(tmp_path), registry="none: no promotion here")


def test_the_evaluator_gates_and_measures_n_players(tmp_path):
    service = _SpecService.build(tmp_path)
    best = (1, "greedy")
    assert service._gate((2, "random"), best) == best  # rejected: the best stays
    entry = json.loads((tmp_path / "evaluations.jsonl").read_text().splitlines()[-1])
    assert entry["kind"] == "gate" and entry["decision"] == "reject" and entry["players"] == 3
    assert entry["games"] == 12 and entry["wins"] + entry["draws"] + entry["losses"] == 24
    service._against_greedy(7, "random")
    entry = json.loads((tmp_path / "evaluations.jsonl").read_text().splitlines()[-1])
    assert entry["kind"] == "greedy" and entry["games"] == 6 and entry["fair_share"] == pytest.approx(1 / 3)
    assert entry["score"] < 0.1 and entry["win_rate"] == 0.0 and entry["elo"] < 0
    assert service.ladder.ratings()["v7"] < 0


# --- the tournament and the rating of N players ------------------------------------------------


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
    alone = play_multi_match(STAR3, players[:3], games=6, seed=seed)
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
