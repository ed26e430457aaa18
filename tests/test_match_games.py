"""What a match keeps of its games and results: the moves of every game (``evaluator.arena``),
the run directory's newest evaluation games (``evaluator.game_log``, written by the evaluator),
and match results as JSON lines (``evaluator.results``, ``hopzero match --out``)."""

import json

import pytest
from test_cli import run, run_json

from ccengine import new_state, preset
from evaluator.arena import play_match
from evaluator.game_log import FILE, add_match_games, game_scores, read_games
from evaluator.results import ResultsError, append_result, read_results, result_lines, results_table

TINY = preset("small-4-3")


def _replayed(rules, moves):
    state = new_state(rules)
    for move in moves:
        state.play(tuple(move))
    return state


@pytest.mark.parametrize("kw", [{}, {"parallel": 3}, {"workers": 2}])
def test_every_game_keeps_its_moves_and_they_replay_to_its_result(kw):
    match = play_match(TINY, "greedy", "greedy-stochastic", games=5, seed=11, keep_moves=True, **kw)
    assert [g.index for g in match.played] == list(range(5))
    for game in match.played:
        state = _replayed(TINY, game.moves)
        assert state.is_terminal() and tuple(state.scores()) == game.scores and state.ply == game.plies
    assert match == play_match(TINY, "greedy", "greedy-stochastic", games=5, seed=11, keep_moves=True)  # same games
    assert all(g.moves == () for g in play_match(TINY, "greedy", "random", games=2, seed=1, **kw).played)
    assert "played" not in match.to_dict()


def test_the_game_log_keeps_the_newest_games_by_seat(tmp_path):
    match = play_match(TINY, "greedy", "random", games=3, seed=2, keep_moves=True)
    added = add_match_games(tmp_path, TINY, match, kind="greedy", model_versions=(4, None), config_hash="h",
                            software={"hopzero": "0"}, keep=5)
    assert [g["id"] for g in added] == [0, 1, 2]
    for entry, game in zip(added, match.played, strict=True):
        assert entry["players"] == (["greedy", "random"] if game.seats[0] == 0 else ["random", "greedy"])
        assert entry["model_versions"][entry["players"].index("greedy")] == 4
        assert entry["moves"] == [list(m) for m in game.moves] and entry["scores"] == list(game.scores)
        assert entry["rules"] == TINY.to_dict() and entry["config_hash"] == "h" and entry["match_seed"] == 2
    add_match_games(tmp_path, TINY, match, kind="gate", model_versions=(5, 4), config_hash="h", software={}, keep=5)
    kept = read_games(tmp_path)
    assert [g["id"] for g in kept] == [1, 2, 3, 4, 5] and kept[-1]["kind"] == "gate"
    # a line written before (schema 1: seat 0's +1 / 0 / -1) reads as its result vector
    assert game_scores({"result": -1}) == [0.0, 1.0] and game_scores({"scores": [0.5, 0.5]}) == [0.5, 0.5]
    assert not list(tmp_path.glob(".*.tmp"))  # written through a temporary file, renamed


def test_the_evaluator_keeps_the_games_of_its_match_against_greedy(tmp_path):
    torch = pytest.importorskip("torch")
    from ccengine.search import SearchConfig
    from evaluator.config import EvaluationConfig
    from evaluator.service import EvaluatorService
    from learner.model import NetworkConfig, PolicyValueNet

    torch.manual_seed(0)
    service = EvaluatorService(
        rules=TINY, network=NetworkConfig(size="tiny", encoding="general", history=3), search=SearchConfig(),
        evaluation=EvaluationConfig(simulations=4, parallel_games=4, greedy_games=4),
        seed=0, config_hash="cafe", run_dir=str(tmp_path), registry="none: this match needs no registry",
    )
    weights = {k: v.numpy().copy() for k, v in PolicyValueNet(service.net_config).state_dict().items()}
    service._against_greedy(3, weights)
    kept = read_games(tmp_path)
    evaluation = json.loads((tmp_path / "evaluations.jsonl").read_text().splitlines()[-1])
    assert len(kept) == evaluation["games"] == 4
    assert sum(1 for g in kept if len(set(g["scores"])) > 1) == evaluation["wins"] + evaluation["losses"]
    for g in kept:
        assert sorted(g["players"]) == ["greedy", "v3"] and g["kind"] == "greedy" and g["config_hash"] == "cafe"
        assert g["model_versions"][g["players"].index("v3")] == 3 and "numpy" in g["software"]
        assert list(_replayed(TINY, g["moves"]).scores()) == g["scores"]
    assert (tmp_path / FILE).read_text().count("\n") == 4


# ---------------------------------------------------------------------------------------------
# Match results
# ---------------------------------------------------------------------------------------------


def test_match_out_appends_one_line_per_match(tmp_path):
    out = tmp_path / "results.jsonl"
    printed = run_json("match", "--preset", "small-4-3", "--a", "greedy", "--b", "random", "--games", "4",
                       "--seed", "3", "--out", str(out))
    run("match", "--preset", "small-4-3", "--a", "random", "--b", "greedy-stochastic", "--games", "2", "--out", str(out))
    lines = read_results(out)
    assert len(lines) == 2
    first = lines[0]
    assert (first["a"], first["b"], first["preset"], first["seed"]) == ("greedy", "random", "small-4-3", 3)
    assert (first["a_wins"], first["draws"], first["b_wins"]) == (printed["a_wins"], printed["draws"], printed["b_wins"])
    assert "hopzero" in first["software"] and first["date"].endswith("Z")


def test_match_out_into_a_missing_directory_fails_before_playing(tmp_path):
    proc = run("match", "--preset", "small-4-3", "--a", "greedy", "--b", "random", "--out",
               str(tmp_path / "no" / "r.jsonl"), check=False)
    assert proc.returncode == 2 and "--out" in proc.stderr and "does not exist" in proc.stderr
    assert not (tmp_path / "no").exists()


def test_bad_results_lines_are_named(tmp_path):
    path = tmp_path / "r.jsonl"
    [good] = result_lines(play_match(TINY, "greedy", "random", games=2, seed=0), {})
    for bad, needle in [
        ("not json\n", "not JSON"),
        (json.dumps({**good, "format": "other"}) + "\n", "not a hopzero.match-result line"),
        (json.dumps({**good, "schema": 9}) + "\n", "schema 9"),
        (json.dumps({**good, "draws": -1}) + "\n", "draws"),
        (json.dumps({**good, "games": 7}) + "\n", "is not games"),
        (json.dumps({**good, "b": good["a"]}) + "\n", "against itself"),
    ]:
        path.write_text(json.dumps(good) + "\n" + bad)
        with pytest.raises(ResultsError, match="line 2") as err:
            read_results(path)
        assert needle in str(err.value)
    path.write_text(json.dumps(good) + "\n" + '{"format": "hopzero.ma')  # a line being written
    assert len(read_results(path)) == 1
    with pytest.raises(ResultsError, match="No such file"):
        read_results(tmp_path / "missing.jsonl")


def test_the_table_anchors_at_greedy_else_names_its_anchor(tmp_path):
    path = tmp_path / "r.jsonl"
    for a, b, seed in (("random", "greedy", 1), ("greedy-stochastic", "random", 2)):
        append_result(path, *result_lines(play_match(TINY, a, b, games=4, seed=seed), {}))
    table = results_table(read_results(path), "small-4-3")
    assert table["anchor"] == "greedy"
    ratings = {p["name"]: p["elo"] for p in table["players"]}
    assert ratings["greedy"] == 0 and ratings["random"] < 0
    order = [p["name"] for p in table["players"]]
    i, j = order.index("greedy"), order.index("greedy-stochastic")
    assert table["cells"][i][j] is None  # they never met
    lines = [r for r in read_results(path) if "greedy" not in (r["a"], r["b"])]
    assert results_table(lines, "small-4-3")["anchor"] == "greedy-stochastic"
