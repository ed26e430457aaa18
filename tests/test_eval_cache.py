"""The evaluation cache in front of the search's evaluator (ccengine.eval_cache): answers equal to
the evaluator's, hits counted, keyed by history and mover, bounded, and a search that plays the
same with it as without it."""

from __future__ import annotations

import numpy as np
import pytest

from ccengine import preset
from ccengine.engines import new_state
from ccengine.eval_cache import EvaluationCache
from ccengine.search import BatchedSearch, RolloutEvaluator, SearchConfig


class PositionHash:
    """A deterministic evaluator whose answers depend on every input the cache keys on: priors and
    value from a hash of the pieces (all history planes) and the mover. Counts the rows it sees."""

    needs_states = False

    def __init__(self) -> None:
        self.rows = 0
        self.calls = 0

    def evaluate(self, pieces, to_move, legal, counts):
        self.rows += len(to_move)
        self.calls += 1
        b, m = legal.shape
        weights = np.arange(1, pieces[0].size + 1, dtype=np.int64)
        h = (pieces.reshape(b, -1).astype(np.int64) * weights).sum(1) * 7 + to_move.astype(np.int64) + 3
        priors = ((h[:, None] * (np.arange(m) + 1)) % 97 + 1).astype(np.float32)
        priors *= np.arange(m)[None, :] < counts[:, None]
        values = ((h % 201) / 100.0 - 1.0).astype(np.float32)
        return priors, values


def batch(rows: list[tuple[list[int], int]], k: int = 3, m: int = 5):
    """Leaves ``(cells of h = 0 .. H-1 flattened, mover)``: pieces ``[B, H, 2, k]``."""
    pieces = np.array([cells for cells, _ in rows], dtype=np.int8).reshape(len(rows), -1, 2, k)
    to_move = np.array([mover for _, mover in rows], dtype=np.int8)
    legal = np.tile(np.arange(m, dtype=np.int32), (len(rows), 1))
    counts = np.full(len(rows), m, dtype=np.int32)
    return pieces, to_move, legal, counts


A = list(range(12))           # two history states, 2 x 3 cells each
B = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13]   # A with another older state
C = [20, 21, 22, 23, 24, 25, -1, -1, -1, -1, -1, -1]


def test_answers_are_the_evaluators_and_repeats_are_hits():
    inner = PositionHash()
    cache = EvaluationCache(inner, capacity=100)
    first = cache.evaluate(*batch([(A, 0), (C, 1)]))
    assert (inner.rows, cache.hits, cache.lookups) == (2, 0, 2)
    second = cache.evaluate(*batch([(C, 1), (B, 0), (A, 0)]))
    assert (inner.rows, cache.hits, cache.lookups) == (3, 2, 5)  # only B was new
    assert cache.hit_rate == pytest.approx(0.4)
    want = PositionHash().evaluate(*batch([(C, 1), (B, 0), (A, 0)]))
    np.testing.assert_array_equal(second[0], want[0])
    np.testing.assert_array_equal(second[1], want[1])
    np.testing.assert_array_equal(second[0][2], first[0][0])


def test_the_key_holds_the_history_and_the_mover():
    inner = PositionHash()
    cache = EvaluationCache(inner, capacity=100)
    cache.evaluate(*batch([(A, 0)]))
    cache.evaluate(*batch([(A, 1)]))   # the same pieces, the other player to move
    cache.evaluate(*batch([(B, 0)]))   # the same position, another history
    assert cache.hits == 0 and inner.rows == 3
    cache.evaluate(*batch([(A, 1), (B, 0), (A, 0)]))
    assert cache.hits == 3 and inner.rows == 3


def test_a_batch_of_only_hits_does_not_call_the_evaluator():
    inner = PositionHash()
    cache = EvaluationCache(inner)
    cache.evaluate(*batch([(A, 0), (B, 1)]))
    cache.evaluate(*batch([(B, 1), (A, 0)]))
    assert inner.calls == 1


class ShareHash(PositionHash):
    """PositionHash for three players: a share per seat, from the same hash."""

    def evaluate(self, pieces, to_move, legal, counts):
        priors, values = super().evaluate(pieces, to_move, legal, counts)
        shares = np.stack([values + 2.0, values + 3.0, 2.0 * values + 4.0], axis=1)
        return priors, (shares / shares.sum(1, keepdims=True)).astype(np.float32)


def test_a_vector_of_shares_is_kept_and_answered_like_a_value():
    inner = ShareHash()
    cache = EvaluationCache(inner, capacity=100)
    cache.evaluate(*batch([(A, 0)]))
    mixed = cache.evaluate(*batch([(B, 2), (A, 0)]))  # one hit, one miss
    hits = cache.evaluate(*batch([(A, 0), (B, 2)]))   # hits only
    assert inner.rows == 2 and cache.hits == 3
    for got, rows in ((mixed, [(B, 2), (A, 0)]), (hits, [(A, 0), (B, 2)])):
        want = ShareHash().evaluate(*batch(rows))
        assert got[1].shape == (2, 3)
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[0], want[0])


def test_the_cache_is_bounded_and_drops_the_least_recently_used():
    inner = PositionHash()
    cache = EvaluationCache(inner, capacity=2)
    cache.evaluate(*batch([(A, 0)]))
    cache.evaluate(*batch([(B, 0)]))
    cache.evaluate(*batch([(A, 0)]))   # A is now the most recent
    cache.evaluate(*batch([(C, 0)]))   # drops B
    assert len(cache) == 2
    rows = inner.rows
    cache.evaluate(*batch([(A, 0), (C, 0)]))
    assert inner.rows == rows
    cache.evaluate(*batch([(B, 0)]))
    assert inner.rows == rows + 1
    cache.clear()
    assert len(cache) == 0


def test_bad_construction_is_refused():
    with pytest.raises(ValueError, match="capacity=0 must be at least 1"):
        EvaluationCache(PositionHash(), capacity=0)
    rules = preset("small-4-3")
    from ccengine.search import tables_for

    with pytest.raises(ValueError, match="random: it cannot be cached"):
        EvaluationCache(RolloutEvaluator(tables_for(rules)))


def play_searches(rules, evaluator, *, games=6, moves=10, seed=3):
    search = BatchedSearch(rules, games, SearchConfig(num_simulations=24, random_opening_plies=0),
                           history=2, rng=np.random.default_rng(seed))
    states = [new_state(rules) for _ in range(games)]
    for g, state in enumerate(states):
        search.set_root(g, state)
    played = []
    for _ in range(moves):
        for g, result in enumerate(search.search(evaluator)):
            if result is None or states[g].is_terminal():
                continue
            played.append((g, result.move, tuple(result.visits)))
            states[g].play(result.move)
            if not states[g].is_terminal():
                search.play(g, result.move)
    return played


def test_a_search_plays_the_same_with_the_cache_and_it_hits_across_games():
    rules = preset("small-4-3")
    plain, inner = PositionHash(), PositionHash()
    cache = EvaluationCache(inner)
    assert play_searches(rules, cache) == play_searches(rules, plain)
    # Every game starts from the same position: its leaves are shared by the six games.
    assert cache.hits > 0 and inner.rows == plain.rows - cache.hits


def test_the_network_player_answers_later_moves_from_its_cache():
    from learner.players import make_player
    from learner.network_player import network_player

    assert network_player is not None  # registers mcts
    rules = preset("cc49")
    player, greedy = make_player("mcts:model=shipped,sims=200", rules, 1), make_player("greedy", rules, 1)
    state = new_state(rules)
    player.select(state)
    assert player.evaluator.hits == 0  # a first search: nothing to reuse
    for _ in range(3):
        state.play(player.select(state))
        state.play(greedy.select(state))
    # The search two plies on meets the positions of the one before.
    assert player.evaluator.hit_rate > 0.05
