"""Gating: the exact 55% rule, complete sets only, min_games, the GSPRT, for two players and for N;
and the two-player gate's decisions on recorded games are those it took before it served N."""

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccengine import preset
from evaluator.arena import play_match
from evaluator.gating import Gate, GateConfig, gate_results, gsprt_llr
from plumbing.fields import FieldError

STAR3 = preset("star3")
STAR4 = preset("star4")


def vector(result: int) -> tuple[float, float]:
    """A two-player game's result vector from the candidate's +1 / 0 / -1."""
    return ((1.0, 0.0), (0.5, 0.5), (0.0, 1.0))[1 - result]


def results(wins: int, draws: int, losses: int) -> list[tuple[float, float]]:
    return [vector(r) for r in [1] * wins + [0] * draws + [-1] * losses]


def record_pair(gate: Gate, pair: int, first: int, second: int):
    gate.record(pair, 0, vector(first))
    return gate.record(pair, 1, vector(second))


# ---------------------------------------------------------------------------------------------
# The fixed rule: exactly 55% promotes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wins", "draws", "losses", "decision"),
    [
        (11, 0, 9, "promote"),  # 11/20 = 55% exactly
        (10, 2, 8, "promote"),  # (10 + 2/2) / 20 = 55% exactly, draws as halves
        (10, 1, 9, "reject"),  # 52.5%
        (9, 4, 7, "promote"),  # 55%
        (9, 3, 8, "reject"),  # 52.5%
    ],
)
def test_exactly_55_percent_promotes(wins, draws, losses, decision):
    r = gate_results(results(wins, draws, losses), GateConfig(games=20))
    assert r.games == 20
    assert r.decision == decision
    assert (r.wins, r.draws, r.losses) == (wins, draws, losses)


def test_just_below_55_percent_rejects():
    cfg = GateConfig(games=2000)
    assert gate_results(results(1100, 0, 900), cfg).decision == "promote"  # 55%
    below = gate_results(results(1099, 1, 900), cfg)  # 54.975%
    assert below.decision == "reject"
    assert below.score == pytest.approx(0.54975)


def test_threshold_is_the_decimal_not_the_binary_double():
    # Fraction(0.55) is slightly above 11/20; the gate must use 11/20.
    assert Fraction(0.55) > Fraction(11, 20)
    assert GateConfig(threshold=0.55).threshold_exact == Fraction(11, 20)
    assert GateConfig(threshold="0.55").threshold_exact == Fraction(11, 20)
    assert GateConfig(threshold=Fraction(11, 20)).threshold_exact == Fraction(11, 20)
    gate = Gate(GateConfig(games=20))
    gate.feed(results(10, 2, 8))
    assert gate.score == Fraction(11, 20)


def test_paper_gate_counts_wins_only():
    # Liu et al. 2019: 24 games, promote when the new model wins at least 14.
    paper = GateConfig(games=24, threshold=Fraction(14, 24), draws="loss")
    assert gate_results(results(14, 0, 10), paper).decision == "promote"
    assert gate_results(results(13, 2, 9), paper).decision == "reject"
    # The 55% gate with draws as halves on the same 24 games: 14/24 and 13.5/24 pass, 13/24 not.
    assert gate_results(results(13, 2, 9), GateConfig(games=24)).decision == "promote"
    assert gate_results(results(13, 1, 10), GateConfig(games=24)).decision == "promote"
    assert gate_results(results(13, 0, 11), GateConfig(games=24)).decision == "reject"


def test_draw_rules():
    res = results(6, 8, 6)  # 50% with halves, 30% counting wins, 50% over decisive games
    assert gate_results(res, GateConfig(games=20)).score == pytest.approx(0.5)
    assert gate_results(res, GateConfig(games=20, draws="loss")).score == pytest.approx(0.3)
    assert gate_results(results(6, 9, 5), GateConfig(games=20, draws="ignore")).score == pytest.approx(6 / 11)
    assert gate_results(results(0, 20, 0), GateConfig(games=20, draws="ignore")).decision == "reject"


def test_no_sprt_means_all_games():
    gate = Gate(GateConfig(games=20))
    for pair in range(9):
        assert record_pair(gate, pair, 1, 1).decision == "continue"
    assert record_pair(gate, 9, 1, 1).decision == "promote"
    assert gate.llr is None


# ---------------------------------------------------------------------------------------------
# Complete pairs only
# ---------------------------------------------------------------------------------------------


def test_half_pairs_never_count():
    gate = Gate(GateConfig(games=20, sprt=True, min_games=2))
    for pair in range(10):  # the first game of every pair finishes: all wins
        r = gate.record(pair, 0, vector(1))
        assert r.games == 0 and r.decision == "continue"
    assert gate.pending_games == 10
    assert gate.score == 0


def test_short_games_finishing_first_cannot_decide():
    """The candidate wins every short game and loses every long one (leela-zero #764/#78).

    Short games arrive first; a per-game counter with SPRT would promote on them. The gate
    counts nothing until pairs complete, and ends at 50%: rejected.
    """
    cfg = GateConfig(games=40, min_games=4, sprt=True, elo0=-100, elo1=100)
    gate = Gate(cfg)
    # In each pair the game with the candidate in one seat is short (a quick win), the other long.
    short = [(p, p % 2) for p in range(20)]
    long = [(p, 1 - p % 2) for p in range(20)]
    for pair, game in short:
        assert gate.record(pair, game, vector(+1)).decision == "continue"
    assert gate.counted_games == 0
    final = None
    for pair, game in long:
        final = gate.record(pair, game, vector(-1))
    assert final is not None
    assert final.score == pytest.approx(0.5)
    assert final.decision == "reject"


def test_in_order_waits_for_the_earliest_pair():
    gate = Gate(GateConfig(games=20))
    record_pair(gate, 1, 1, 1)
    record_pair(gate, 2, 1, 1)
    assert gate.counted_games == 0 and gate.pending_games == 4  # pair 0 is still running
    gate.record(0, 1, vector(-1))
    assert gate.counted_games == 0
    gate.record(0, 0, vector(-1))
    assert gate.counted_games == 6


def test_out_of_order_counts_complete_pairs_as_they_come():
    gate = Gate(GateConfig(games=20, in_order=False))
    record_pair(gate, 3, 1, 0)
    gate.record(5, 0, vector(1))
    assert gate.counted_games == 2 and gate.pending_games == 1
    assert gate.score == Fraction(3, 4)


@settings(max_examples=60, deadline=None)
@given(
    outcomes=st.lists(st.sampled_from([-1, 0, 1]), min_size=24, max_size=24),
    order=st.permutations(range(24)),
    sprt=st.booleans(),
)
def test_arrival_order_never_changes_the_result(outcomes, order, sprt):
    cfg = GateConfig(games=24, min_games=8, sprt=sprt, elo0=-150, elo1=150, alpha=0.1, beta=0.1)
    expected = gate_results([vector(r) for r in outcomes], cfg)
    gate = Gate(cfg)
    for index in order:
        gate.record(index // 2, index % 2, vector(outcomes[index]))
    got = gate.result()
    assert (got.decision, got.wins, got.draws, got.losses, got.games) == (
        expected.decision,
        expected.wins,
        expected.draws,
        expected.losses,
        expected.games,
    )


def test_decision_is_final():
    gate = Gate(GateConfig(games=20, sprt=True, min_games=10, elo0=-200, elo1=200))
    for pair in range(5):
        record_pair(gate, pair, 1, 1)
    assert gate.decision == "promote"
    frozen = gate.result()
    for pair in range(5, 10):
        record_pair(gate, pair, -1, -1)
    assert gate.decision == "promote"
    assert gate.result().games == frozen.games


def test_bad_input_is_refused():
    gate = Gate(GateConfig(games=4, min_games=0))
    with pytest.raises(ValueError, match="outside"):
        gate.record(2, 0, vector(1))
    with pytest.raises(ValueError, match=r"rotation=2 must be in 0..1"):
        gate.record(0, 2, vector(1))
    with pytest.raises(ValueError, match="scores has 3 entries; the game has 2 players"):
        gate.record(0, 0, (1.0, 0.0, 0.0))
    gate.record(0, 0, vector(1))
    with pytest.raises(ValueError, match="already recorded"):
        gate.record(0, 0, vector(1))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"games": 21},
        {"games": 0},
        {"games": 20, "min_games": 22},
        {"games": 20, "min_games": 3},
        {"threshold": 1.0},
        {"threshold": 0},
        {"alpha": 0.0},
        {"alpha": 0.6, "beta": 0.5},
        {"elo0": 10, "elo1": 10},
        {"draws": "win"},
        {"sprt_model": "binomial"},
    ],
)
def test_bad_config_is_refused(kwargs):
    with pytest.raises(ValueError):
        GateConfig(**kwargs)


# ---------------------------------------------------------------------------------------------
# SPRT
# ---------------------------------------------------------------------------------------------


def test_default_hypotheses_bracket_the_threshold():
    cfg = GateConfig()
    assert cfg.threshold_elo == pytest.approx(34.86, abs=0.01)
    assert cfg.p0 == pytest.approx(0.50, abs=0.001)
    assert cfg.p1 == pytest.approx(0.60, abs=0.001)
    assert cfg.upper_bound == pytest.approx(math.log(19))
    assert cfg.lower_bound == pytest.approx(-math.log(19))


def test_llr_matches_the_normal_approximation_on_many_games():
    # fishtest's LLR_alt2: N (s1 - s0) (2 mean - s0 - s1) / (2 var) agrees for large N.
    counts = [3000, 2000, 5000]
    mean, var = 0.6, 0.3 * 0.36 + 0.2 * 0.01 + 0.5 * 0.16
    s0, s1 = 0.58, 0.59  # the approximation holds for s0, s1 near the observed mean
    approx = sum(counts) * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var)
    assert gsprt_llr(counts, s0, s1) == pytest.approx(approx, rel=0.02)


def test_llr_of_a_clean_sweep_is_finite_and_binomial():
    # All wins: the constrained MLE puts mass s on a win, so each game adds log(s1 / s0).
    assert gsprt_llr([0, 0, 20], 0.5, 0.6) == pytest.approx(20 * math.log(1.2), rel=1e-3)
    assert gsprt_llr([0, 0, 0], 0.5, 0.6) == 0.0
    assert gsprt_llr([10, 0, 0], 0.5, 0.6) < 0


def test_llr_over_named_outcomes():
    # Evenly spaced values named explicitly give the default's LLR; other values are checked.
    assert gsprt_llr([3, 2, 5], 0.5, 0.6, values=[0, 0.5, 1]) == gsprt_llr([3, 2, 5], 0.5, 0.6)
    assert gsprt_llr([5, 1, 2, 1], 0.15, 0.25, values=[0, 1 / 3, 1 / 2, 1]) != 0
    for bad in ([0, 0.5], [0, 0.6, 0.5, 1], [0.1, 0.2, 0.5, 1]):
        with pytest.raises(ValueError, match="ascend from 0 to 1"):
            gsprt_llr([1, 1, 1, 1], 0.5, 0.6, values=bad)


def test_min_games_is_respected():
    cfg = GateConfig(games=200, min_games=40, sprt=True, elo0=-100, elo1=100)
    gate = Gate(cfg)
    for pair in range(19):
        r = record_pair(gate, pair, 1, 1)
        assert r.decision == "continue"
    assert gate.llr is not None and gate.llr > cfg.upper_bound  # clear long before min_games
    r = record_pair(gate, 19, 1, 1)
    assert r.games == 40 and r.decision == "promote"


def simulate(cfg: GateConfig, p_win: float, p_draw: float, rng: np.random.Generator) -> Gate:
    """Play a match of independent games with the given outcome chances until the gate stops."""
    gate = Gate(cfg)
    p = [p_win, p_draw, 1.0 - p_win - p_draw]
    for pair in range(cfg.games // 2):
        first, second = (int(x) for x in rng.choice([1, 0, -1], size=2, p=p))
        if record_pair(gate, pair, first, second).decision != "continue":
            break
    return gate


@pytest.mark.parametrize("model", ["pentanomial", "trinomial"])
def test_sprt_stops_early_on_a_clear_candidate(model):
    rng = np.random.default_rng(7)
    cfg = GateConfig(games=400, min_games=20, sprt=True, sprt_model=model)
    strong = simulate(cfg, 0.75, 0.1, rng)  # score 0.80
    weak = simulate(cfg, 0.25, 0.1, rng)  # score 0.30
    assert strong.decision == "promote" and strong.counted_games < 120
    assert weak.decision == "reject" and weak.counted_games < 120
    assert "SPRT" in strong.result().reason and "SPRT" in weak.result().reason


def test_sprt_error_rates_are_roughly_right():
    """At H0 (score p0) few promote, at H1 (score p1) few are rejected: about alpha and beta."""
    rng = np.random.default_rng(2024)
    cfg = GateConfig(games=2000, min_games=0, sprt=True, alpha=0.1, beta=0.1, elo0=-70, elo1=70)
    draw = 0.2
    trials = 150
    wrong_at_h0 = sum(simulate(cfg, cfg.p0 - draw / 2, draw, rng).decision == "promote" for _ in range(trials))
    wrong_at_h1 = sum(simulate(cfg, cfg.p1 - draw / 2, draw, rng).decision == "reject" for _ in range(trials))
    # Wald's bounds keep each error at or below its target (overshoot makes it smaller); the
    # slack covers the binomial noise of 150 trials (sd about 0.025).
    assert wrong_at_h0 / trials <= 0.1 + 0.07
    assert wrong_at_h1 / trials <= 0.1 + 0.07


def test_the_plots_and_the_dashboard_read_the_threshold_from_the_gate_config(tmp_path):
    from hopzero import dashboard
    from hopzero.config import load_config
    from hopzero.plots import _gate_threshold
    from hopzero.rundir import RunDir

    default = float(GateConfig().threshold_exact)
    assert dashboard.GATE_THRESHOLD == default
    gate_panel = next(p for row in dashboard.ROWS for p in row.panels if p.threshold is not None)
    assert gate_panel.threshold == default
    rundir = RunDir(tmp_path / "run")
    assert _gate_threshold(rundir) == default  # no run here yet
    rundir.start(load_config("demo", overrides=["evaluation.gate.threshold=0.6"]), versions={})
    assert _gate_threshold(rundir) == 0.6


# ---------------------------------------------------------------------------------------------
# Two players are N = 2: the decisions on recorded games
# ---------------------------------------------------------------------------------------------


def test_the_two_player_gate_decides_recorded_games_as_it_always_has():
    """Real match games (cc49 and star2, shipped networks at different simulations, greedy, alpha-beta),
    recorded in the order they finished with the decisions, counts, scores and LLRs the two-player
    gate took on them under eight configurations before the gate served N players: the one gate
    takes the same decisions, at the same game, with the same LLR."""
    data = json.loads((Path(__file__).parent / "data" / "gate_games.json").read_text())
    checked = 0
    for match in data["matches"]:
        for name, fields in data["configs"].items():
            gate = Gate(GateConfig(**{**fields, "threshold": Fraction(fields["threshold"])}))
            decisions = []
            for pair, game, result in match["games"]:
                if pair < gate.sets:
                    decisions.append(gate.record(pair, game, vector(result)).decision)
            got = gate.result()
            want = match["decisions"][name]
            assert (got.decision, got.games, got.wins, got.draws, got.losses) == (
                want["decision"], want["games"], want["wins"], want["draws"], want["losses"]), (match["a"], name)
            assert got.score == want["score"] and got.llr == want["llr"]
            first = decisions.index(got.decision) + 1 if got.decision != "continue" else None
            assert first == want["decided_after_received"]
            checked += 1
    assert checked == 48


# ---------------------------------------------------------------------------------------------
# N players: the candidate against N-1 copies of the best
# ---------------------------------------------------------------------------------------------


def test_n_player_sets_count_complete_in_order_and_exactly():
    gate = Gate(GateConfig(games=6, min_games=0, threshold="1/2", both_lost="draw"), players=3)
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
    assert "over 6 games (12 comparisons)" in result.reason
    bad = Gate(GateConfig(games=6, min_games=0), players=3)
    bad.record(0, 0, (1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="already recorded"):
        bad.record(0, 0, (1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="3 players"):
        bad.record(0, 1, (1.0, 0.0))
    with pytest.raises(ValueError, match="less than one set"):
        Gate(GateConfig(games=2, min_games=0), players=3)


def test_n_player_draw_rules_and_the_set_sample():
    """A set of star3 gives 2 * 3 * 2 = 12 half points at most; ``ignore`` leaves level comparisons out."""
    games = [(1.0, 0.0, 0.0), (0.5, 0.5, 0.0), (1 / 3, 1 / 3, 1 / 3)]  # 2 wins; 1 win 1 draw; 2 draws
    half = gate_results(games, GateConfig(games=6, min_games=0), players=3)
    assert (half.wins, half.draws, half.losses, half.games) == (3, 3, 0, 3)
    assert half.score == pytest.approx(9 / 12)
    assert gate_results(games, GateConfig(games=6, min_games=0, draws="loss"), players=3).score == 0.5
    assert gate_results(games, GateConfig(games=6, min_games=0, draws="ignore"), players=3).score == 1.0
    sprt = Gate(GateConfig(games=30, min_games=0, sprt=True), players=3)
    sprt.feed(games)
    assert sprt._by_set_points[9] == 1 and sum(sprt._by_set_points) == 1


def test_both_lost_comparisons_left_out():
    """By default (``both_lost="ignore"``) a copy and the candidate both beaten by a third player
    make no comparison; shared wins and drawn games still do, and the SPRT samples games."""
    games = [(0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 0.5, 0.5),  # a set of three rotations
             (1 / 3, 1 / 3, 1 / 3), (0.0, 0.0, 1.0), (0.5, 0.5, 0.0)]  # and another
    result = gate_results(games, GateConfig(games=12, min_games=0), players=3)  # the default
    # Left out: the copy beside the candidate in each (0, 0, 1). Set 0: 1 lost; 2 won; 2 lost.
    # Set 1: 2 drawn; 1 lost; 1 drawn (a shared win), 1 won.
    assert (result.wins, result.draws, result.losses) == (3, 3, 4)
    assert result.score == pytest.approx((2 * 3 + 3) / (2 * 10))
    assert "(10 comparisons)" in result.reason
    counted_as_draws = gate_results(games, GateConfig(games=12, min_games=0, both_lost="draw"), players=3)
    assert (counted_as_draws.wins, counted_as_draws.draws, counted_as_draws.losses) == (3, 5, 4)
    sprt = Gate(GateConfig(games=30, min_games=0, sprt=True), players=3)
    sprt.feed(games[:3])
    # One sample per game, the candidate's share of the win (classes 0, 1/3, 1/2, 1): lost, won, lost.
    assert sum(sprt._by_set_points) == 0 and sprt._by_share == [2, 0, 0, 1]
    two = [(1.0, 0.0), (0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    assert gate_results(two, GateConfig(games=4, min_games=0, sprt=True)) == gate_results(
        two, GateConfig(games=4, min_games=0, sprt=True, both_lost="draw"))  # two players: one rule
    with pytest.raises(FieldError, match="both_lost"):
        GateConfig(both_lost="half")
    with pytest.raises(ValueError, match="not 0 or a share 1/k"):
        Gate(GateConfig(games=12, min_games=0), players=3).record(0, 0, (0.3, 0.7, 0.0))


@pytest.mark.parametrize("strength, wrong", [(1.0, "promote"), (1.5, "reject")])
def test_n_player_sprt_keeps_its_error_rates(strength, wrong):
    """Six players, each comparison left out when both lost: a candidate of equal strength (score
    50%, near H0) is seldom promoted early, one 1.5 times as strong (60%, H1) seldom rejected
    early: within the SPRT's 5% each (4 and 3 of 200 gates). Counting comparisons as independent
    samples (a game the candidate won is five of them) made these errors 37 and 48 of 200."""
    rng = np.random.default_rng(7)
    wins = strength / (strength + 5)  # Luce's model: the candidate's chance to win a game
    early_wrong = 0
    for _ in range(200):
        gate = Gate(GateConfig(games=240, min_games=0, sprt=True), players=6)
        for i in range(gate.games):
            scores = [0.0] * 6
            scores[0 if rng.random() < wins else int(rng.integers(1, 6))] = 1.0
            gate.record(i // 6, i % 6, scores)
            if gate.finished:
                early_wrong += gate.decision == wrong and gate.counted_games < gate.games
                break
    assert early_wrong <= 0.08 * 200


@settings(max_examples=40, deadline=None)
@given(
    games=st.lists(st.sampled_from([(1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.5, 0.5, 0.0, 0.0),
                                    (0.25, 0.25, 0.25, 0.25), (0.0, 0.0, 0.5, 0.5)]), min_size=12, max_size=12),
    order=st.permutations(range(12)),
)
def test_n_player_arrival_order_never_changes_the_result(games, order):
    cfg = GateConfig(games=12, min_games=4, sprt=True, elo0=-150, elo1=150, alpha=0.1, beta=0.1)
    expected = gate_results(games, cfg, players=4)
    gate = Gate(cfg, players=4)
    for index in order:
        gate.record(index // 4, index % 4, games[index])
    got = gate.result()
    assert (got.decision, got.wins, got.draws, got.losses, got.games, got.llr) == (
        expected.decision, expected.wins, expected.draws, expected.losses, expected.games, expected.llr)


def _gate(candidate, best, config, rules=STAR3, seed=5):
    n = rules.players
    gate = Gate(config, n)
    play_match(rules, candidate, *[best] * (n - 1), games=gate.games, seed=seed,
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


