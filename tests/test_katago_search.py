"""KataGo's search-side techniques (Wu 2019): forced playouts with policy target pruning
(ccengine.search, ccengine._search), playout cap randomization and policy surprise weighting in
self-play (actors.selfplay), and their config options."""

from __future__ import annotations

import math

import numpy as np
import pytest

from actors.selfplay import SelfPlayWorker, policy_surprise, surprise_weights
from ccengine.engines import new_state
from plumbing.fields import FieldError
from ccengine.rules import preset
from ccengine.search import BatchedSearch, SearchConfig, SearchForest, pruned_visits
from hopzero.config import ConfigError, load_config
from learner.model import NetworkConfig

CC49, STAR2, STAR3 = preset("cc49"), preset("star2"), preset("star3")


class KeyedEvaluator:
    """Priors and values drawn from each leaf's piece lists: the same leaf always gets the same
    answer, and siblings differ (some moves look bad, so plain PUCT starves them)."""

    needs_states = False

    def __init__(self, players: int = 2) -> None:
        self.players = players

    def evaluate(self, pieces, to_move, legal, counts):
        b, m = legal.shape
        priors = np.zeros((b, m), np.float32)
        values = np.zeros((b, self.players) if self.players > 2 else b, np.float32)
        for i in range(b):
            rng = np.random.default_rng(int.from_bytes(pieces[i, 0].tobytes(), "little") % (2**63))
            priors[i, : counts[i]] = rng.random(counts[i]) + 0.05
            values[i] = rng.dirichlet(np.ones(self.players)) if self.players > 2 else rng.uniform(-0.9, 0.9)
        return priors, values


def searched_root(rules, forced: float, sims: int = 400, seed: int = 0):
    config = SearchConfig(num_simulations=sims, c_puct=1.0, random_opening_plies=0, explore_plies=0,
                          root_noise=False, forced_playouts=forced)
    search = BatchedSearch(rules, 1, config, rng=np.random.default_rng(seed))
    search.set_root(0, new_state(rules))
    result = search.search(KeyedEvaluator(rules.players))[0]
    search.forest.check_invariants(0)
    return result


def forced_shortfall(result, k: float = 2.0) -> float:
    """The most a visited root child falls short of ``sqrt(k P N_children)``."""
    visited = result.visits > 0
    need = np.sqrt(k * result.prior[visited] * result.visits.sum())
    return float((need - result.visits[visited]).max())


@pytest.mark.parametrize("rules", [CC49, STAR2, STAR3], ids=lambda r: r.name)
def test_forced_playouts_give_every_visited_root_child_its_minimum(rules):
    plain, forced = searched_root(rules, 0.0), searched_root(rules, 2.0)
    assert plain.simulations == forced.simulations
    # Without forcing, PUCT leaves some tried move far below sqrt(2 P N); with it, none is more
    # than one visit short (the bound grows while the others are served).
    assert forced_shortfall(plain) > 2.0
    assert forced_shortfall(forced) <= 1.0
    assert (forced.visits > 0).sum() >= (plain.visits > 0).sum()


def test_pruning_takes_forced_playouts_back_on_a_hand_built_root():
    visits = np.array([40, 12, 6, 1, 3, 0], np.int32)
    q = np.array([0.2, 0.1, -0.6, -0.9, -0.8, np.nan], np.float32)
    prior = np.array([0.3, 0.3, 0.2, 0.05, 0.1, 0.05], np.float32)
    parent, c, k = 63, 1.0, 2.0
    total = visits.sum()
    got = pruned_visits(visits, q, prior, parent_visits=parent, c_puct=c, forced_playouts=k)
    scale = c * math.sqrt(parent)
    best = q[0] + scale * prior[0] / (1 + 40)
    assert got[0] == 40  # the most visited keeps all
    assert got[1] == 12  # above c*'s bound on its own merit: nothing was forced
    # Move 2 loses its n_forced = sqrt(k P N) = sqrt(25.6); its selection bound is lower still.
    assert got[2] == pytest.approx(6 - math.sqrt(k * 0.2 * total), rel=1e-5)
    assert q[2] + scale * prior[2] / (1 + got[2]) < best
    assert got[3] == 0 and got[4] == 0  # reduced to a visit or less: pruned
    assert got[5] == 0
    assert np.array_equal(pruned_visits(visits, q, prior, parent_visits=parent, c_puct=c, forced_playouts=0.0),
                          visits.astype(np.float32))


def test_the_training_target_is_the_pruned_visits():
    result = searched_root(STAR2, 2.0)
    assert result.target is not None and result.target.shape == result.visits.shape
    best = int(np.argmax(result.visits))
    assert result.target[best] == result.visits[best]
    assert (result.target <= result.visits).all() and result.target.sum() < result.visits.sum()
    assert ((result.target == 0) | (result.target > 1)).all()  # a child left with one visit or less is pruned
    ok = result.actions >= 0
    np.testing.assert_allclose(result.policy[result.actions[ok]], result.target[ok] / result.target.sum(), rtol=1e-6)
    assert result.move == tuple(int(x) for x in result.moves[best])  # temperature 0: still the most visited
    plain = searched_root(STAR2, 0.0)
    assert np.array_equal(plain.target, plain.visits.astype(np.float32))


def test_forced_playouts_are_a_self_play_option_only():
    config = SearchConfig(forced_playouts=2.0)
    assert config.for_evaluation().forced_playouts == 0.0
    with pytest.raises(FieldError, match="forced_playouts"):
        SearchConfig(forced_playouts=-1.0)
    with pytest.raises(ValueError, match="forced_playouts=-1.0 must be >= 0"):
        SearchForest(new_state(CC49).tables, 1, forced_playouts=-1.0)


def test_a_fast_search_has_fewer_simulations_and_no_noise():
    config = SearchConfig(num_simulations=48, random_opening_plies=0, explore_plies=0, dirichlet_weight=0.5)
    search = BatchedSearch(CC49, 2, config, rng=np.random.default_rng(1))
    for g in range(2):
        search.set_root(g, new_state(CC49))
    full, fast = search.search(KeyedEvaluator(), fast={1}, fast_simulations=8)
    assert full.simulations == 48 and fast.simulations == 8
    raw, _ = KeyedEvaluator().evaluate(*_root_leaf(search, 1))
    raw = raw[0, : len(fast.prior)] / raw[0, : len(fast.prior)].sum()
    np.testing.assert_allclose(fast.prior, raw, rtol=1e-5)  # the network's priors as they are
    assert np.abs(full.prior - raw).max() > 0.05  # the full search's carry the root noise
    with pytest.raises(ValueError, match="fast_simulations=0"):
        search.search(KeyedEvaluator(), fast={0})


def _root_leaf(search, g):
    """The root of game ``g`` as a one-row evaluator batch."""
    forest = search.forest
    to_move, _, pieces = forest.root_state(g)
    legal = np.zeros((1, forest.max_moves), np.int32)
    moves = np.zeros((forest.max_moves, 2), np.int16)
    n = forest.root_moves(g, moves)
    for i in range(n):
        legal[0, i] = int(np.flatnonzero(pieces[to_move] == moves[i, 0])[0]) * CC49.cells + moves[i, 1]
    return pieces[None, None], np.array([to_move], np.int8), legal, np.array([n], np.int32)


def worker(rules, **options):
    net = NetworkConfig(size="tiny").net_config(rules)
    search = SearchConfig(num_simulations=12, forced_playouts=options.pop("forced", 0.0))
    return SelfPlayWorker(rules, games=4, search=search, net_config=net, encoding="general", history=3,
                          run_id="r", config_hash="h", actor="a", seed=5, evaluator=KeyedEvaluator(rules.players),
                          **options)


def finished(w, count):
    records = []
    while len(records) < count:
        records += w.step()
    return records


@pytest.mark.parametrize("rules", [CC49.replace(max_plies=60), STAR3.replace(max_plies=90)], ids=lambda r: r.name)
def test_playout_cap_randomization_records_full_searches_only(rules):
    w = worker(rules, full_search_prob=0.25, fast_simulations=3)
    records = finished(w, 4)
    stats = w.stats()
    assert 0.6 < stats["fast_searches"] / stats["searches"] < 0.9  # about 3 in 4
    assert stats["simulations"] == 12 * (stats["searches"] - stats["fast_searches"]) + 3 * stats["fast_searches"]
    for rec in records:
        counts = np.diff(rec.policy_offsets)
        assert rec.keep is not None and 0 < rec.keep.sum() < rec.num_positions
        assert (counts[~rec.keep] == 0).all()      # a fast search gives no policy target
        assert (counts[rec.keep] > 0).mean() > 0.9  # a full search does (unless the pass is alone)
    plain = finished(worker(rules), 1)[0]
    assert plain.keep is None and plain.weight is None  # off: records as before


def test_playout_cap_options_are_checked():
    with pytest.raises(ValueError, match="fast_simulations=12 must be at least 1 and below"):
        worker(CC49, full_search_prob=0.5, fast_simulations=12)
    with pytest.raises(ValueError, match="full_search_prob=0"):
        worker(CC49, full_search_prob=0.0)
    config = load_config("demo", overrides=["selfplay.full_search_prob=0.25", "selfplay.fast_simulations=8",
                                            "search.forced_playouts=2", "selfplay.surprise_weighting=true"])
    assert (config.selfplay.full_search_prob, config.selfplay.fast_simulations) == (0.25, 8)
    assert config.search.forced_playouts == 2.0 and config.selfplay.surprise_weighting
    with pytest.raises(ConfigError, match="selfplay.fast_simulations: must be at least 1 when full_search_prob"):
        load_config("demo", overrides=["selfplay.full_search_prob=0.25"])
    with pytest.raises(ConfigError, match="selfplay.fast_simulations: must be below search.num_simulations"):
        load_config("demo", overrides=["selfplay.full_search_prob=0.25", "search.num_simulations=10",
                                       "selfplay.fast_simulations=10"])


def test_surprise_weights_split_a_games_weight_half_even_half_by_surprise():
    kl = np.array([0.0, 1.0, 3.0, 9.0])
    trained = np.array([True, True, True, False])
    w = surprise_weights(kl, trained)
    np.testing.assert_allclose(w, [0.5, 0.5 + 0.5 * 3 * 1 / 4, 0.5 + 0.5 * 3 * 3 / 4, 1.0], rtol=1e-6)
    assert w[trained].sum() == pytest.approx(trained.sum())
    assert (surprise_weights(np.zeros(3), np.ones(3, bool)) == 1).all()
    target, prior = np.array([3.0, 1.0, 0.0]), np.array([0.25, 0.25, 0.5])
    assert policy_surprise(target, prior) == pytest.approx(0.75 * math.log(3.0) + 0.25 * math.log(1.0))
    assert policy_surprise(np.zeros(3), prior) == 0.0


def test_self_play_writes_surprise_weights_with_forced_playouts():
    records = finished(worker(CC49.replace(max_plies=60), surprise_weighting=True, forced=2.0), 2)
    for rec in records:
        trained = np.diff(rec.policy_offsets) > 0
        assert rec.weight is not None and rec.weight[trained].mean() == pytest.approx(1.0, rel=1e-5)
        assert rec.weight[trained].min() >= 0.5 - 1e-6 and rec.weight[trained].std() > 0.05
