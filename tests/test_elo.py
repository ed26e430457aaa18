"""The Elo ladder: conversions, maximum-likelihood fit anchored at greedy, JSON storage."""

import json
import math

import numpy as np
import pytest

from ccengine import preset
from evaluator.arena import play_match
from evaluator.elo import EloLadder, elo_from_score, score_from_elo


def test_conversions():
    assert elo_from_score(0.55) == pytest.approx(34.86, abs=0.01)
    assert elo_from_score(0.5) == 0.0
    assert score_from_elo(0.0) == 0.5
    assert score_from_elo(400.0) == pytest.approx(10 / 11)
    assert elo_from_score(0.0) == -math.inf and elo_from_score(1.0) == math.inf
    for score in (0.01, 0.2, 0.5, 0.55, 0.9, 0.999):
        assert score_from_elo(elo_from_score(score)) == pytest.approx(score, abs=1e-12)
    for diff in (-800.0, -35.0, 0.0, 12.5, 600.0):
        assert elo_from_score(score_from_elo(diff)) == pytest.approx(diff, abs=1e-9)
    with pytest.raises(ValueError):
        elo_from_score(1.5)


TRUE = {"greedy": 0.0, "random": -400.0, "v1": 100.0, "v2": 250.0, "v3": -100.0, "v4": 400.0}


def round_robin(games: int, seed: int) -> EloLadder:
    """Every pair plays ``games`` games; outcomes drawn with the true ratings' expected scores."""
    rng = np.random.default_rng(seed)
    ladder = EloLadder()
    names = sorted(TRUE)
    for k, a in enumerate(names):
        for b in names[k + 1 :]:
            p = score_from_elo(TRUE[a] - TRUE[b])
            draw = min(0.1, p, 1 - p)  # keep win and loss chances non-negative
            w, d, l = rng.multinomial(games, [p - draw / 2, draw, 1 - p - draw / 2])
            ladder.record(a, b, int(w), int(d), int(l))
    return ladder


def test_round_robin_recovers_known_strengths():
    fit = round_robin(400, seed=1).fit()
    assert set(fit) == set(TRUE)
    assert fit["greedy"].elo == 0.0 and fit["greedy"].stderr == 0.0
    for name, truth in TRUE.items():
        if name == "greedy":
            continue
        r = fit[name]
        assert 5 < r.stderr < 40
        assert abs(r.elo - truth) < max(3 * r.stderr, 30), (name, r, truth)
        assert r.games == 2000


def test_errors_shrink_with_more_games():
    small = round_robin(100, seed=3).fit()
    large = round_robin(1600, seed=3).fit()
    for name in TRUE:
        if name != "greedy":
            assert large[name].stderr < small[name].stderr / 3


def test_symmetric_results_give_equal_ratings():
    ladder = EloLadder()
    ladder.record("greedy", "a", 30, 10, 20)
    ladder.record("greedy", "b", 30, 10, 20)
    ladder.record("a", "b", 7, 6, 7)
    fit = ladder.fit()
    assert fit["a"].elo == pytest.approx(fit["b"].elo, abs=1e-9)
    assert fit["a"].stderr == pytest.approx(fit["b"].stderr, abs=1e-9)
    assert fit["a"].elo < 0  # greedy scored 35/60 against each
    # Even results against the anchor: rating 0.
    even = EloLadder()
    even.record("x", "greedy", 10, 4, 10)
    assert even.fit()["x"].elo == pytest.approx(0.0, abs=1e-9)


def test_two_players_match_the_closed_form():
    ladder = EloLadder(prior_draws=0)
    ladder.record("v1", "greedy", 60, 10, 30)
    assert ladder.fit()["v1"].elo == pytest.approx(elo_from_score(0.65), abs=1e-6)


def test_anchor_is_exactly_zero_whatever_the_order():
    ladder = EloLadder(anchor="greedy")
    ladder.record("v2", "v1", 12, 3, 5)
    ladder.record("v1", "greedy", 9, 2, 9)
    ladder.record("random", "greedy", 0, 0, 40)
    fit = ladder.fit()
    assert fit["greedy"].elo == 0.0
    # A clean sweep stays finite thanks to the virtual draws, and far below the anchor.
    assert -1200 < fit["random"].elo < -400


def test_players_not_connected_to_the_anchor_are_left_out():
    ladder = EloLadder()
    ladder.record("v1", "greedy", 5, 0, 5)
    ladder.record("x", "y", 3, 0, 1)
    assert set(ladder.fit()) == {"greedy", "v1"}
    assert EloLadder().fit()["greedy"].elo == 0.0


def test_fit_is_deterministic_and_order_free():
    a = round_robin(200, seed=5)
    b = EloLadder()
    for m in reversed(a.matches):  # same games, recorded the other way round
        b.record(m.b, m.a, m.losses, m.draws, m.wins)
    fa, fb = a.fit(), b.fit()
    assert fa == a.fit()
    for name in TRUE:
        assert fa[name].elo == pytest.approx(fb[name].elo, abs=1e-6)


def test_json_round_trip(tmp_path):
    ladder = round_robin(50, seed=9)
    path = tmp_path / "elo.json"
    ladder.save(path)
    data = json.loads(path.read_text())
    assert data["anchor"] == "greedy" and data["format"] == "hopzero.elo-ladder"
    again = EloLadder.load(path)
    assert again.matches == ladder.matches
    assert again.fit() == ladder.fit()
    with pytest.raises(ValueError):
        EloLadder.from_dict({"format": "something else", "version": 1})


def test_record_a_match_and_refuse_nonsense():
    result = play_match(preset("small-4-3"), "greedy", "random", games=10, seed=0)
    ladder = EloLadder()
    rec = ladder.record("greedy", "random", *result.pairwise(0, 1))
    assert (rec.a, rec.b, rec.wins + rec.draws + rec.losses) == ("greedy", "random", 10)
    with pytest.raises(ValueError):
        ladder.record("v3", "v3", 1, 0, 0)
    with pytest.raises(ValueError):
        ladder.record("v3", "greedy", -1, 0, 0)
