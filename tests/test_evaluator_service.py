"""The evaluator's gate and its measurement against greedy: one path for two players and for N."""

import json

import pytest

from ccengine import preset
from evaluator.game_log import read_games
from evaluator.gating import GateConfig


class _SpecService:
    """The evaluator's one path with SPEC players in place of networks (the training tests bring
    the networks); everything else is the service's own code."""

    @staticmethod
    def build(tmp_path, rules):
        from ccengine.search import SearchConfig
        from evaluator.config import EvaluationConfig
        from evaluator.service import EvaluatorService
        from learner.model import NetworkConfig

        class Service(EvaluatorService):
            def player(self, weights, name):
                return weights  # a SPEC here

        return Service(rules=rules, network=NetworkConfig(size="tiny", encoding="general", history=3),
                       search=SearchConfig(), evaluation=EvaluationConfig(greedy_games=5, parallel_games=2,
                                                                          gate=GateConfig(games=12, min_games=0)),
                       seed=0, config_hash="cafe", run_dir=str(tmp_path), registry="none: no promotion here")


@pytest.mark.parametrize("name", ["cc49", "star3"])
def test_the_evaluator_gates_and_measures_two_or_n_players_on_one_path(tmp_path, name):
    rules = preset(name)
    n = rules.players
    service = _SpecService.build(tmp_path, rules)
    best = (1, "greedy")
    assert service._gate((2, "random"), best) == best  # rejected: the best stays
    entry = json.loads((tmp_path / "evaluations.jsonl").read_text().splitlines()[-1])
    assert entry["kind"] == "gate" and entry["decision"] == "reject" and entry["players"] == n
    kept = read_games(tmp_path)
    # N-1 comparisons a game, less those the candidate and a copy both lost (left out)
    both_lost = sum(g["scores"][g["players"].index("random")] == s == 0
                    for g in kept for k, s in enumerate(g["scores"]) if g["players"][k] == "greedy")
    assert entry["games"] == 12 and entry["wins"] + entry["draws"] + entry["losses"] == 12 * (n - 1) - both_lost
    # the players by seat (SPECs here, a network's version name in a run) with their model versions
    assert len(kept) == 12 and all(sorted(g["players"]) == sorted(["random"] + ["greedy"] * (n - 1)) for g in kept)
    assert all(g["model_versions"][g["players"].index("random")] == 2 and len(g["scores"]) == n for g in kept)
    service._against_greedy(7, "random")
    entry = json.loads((tmp_path / "evaluations.jsonl").read_text().splitlines()[-1])
    games = -(-5 // n) * n  # greedy_games rounded up to whole sets
    assert entry["kind"] == "greedy" and entry["games"] == games and entry["fair_share"] == pytest.approx(1 / n)
    assert entry["score"] < 0.1 and entry["win_rate"] == 0.0 and entry["elo"] < 0
    assert entry["wins"] + entry["draws"] + entry["losses"] == games
    assert service.ladder.ratings()["v7"] < 0
