"""The arena with many games in flight (``parallel``): the same protocol and seeds, batched searches."""

import pytest

from ccengine import preset
from ccengine.players import PlayerKind, PlayerRegistry, PlayerSpecError, RandomPlayer
from learner.players import make_player
from ccengine.search import UniformEvaluator
from ccengine.search_player import SearchPlayer
from evaluator.arena import game_seeds, play_match
from evaluator.gating import Gate, GateConfig
from learner.network_player import network_player_from_weights

SMALL = preset("small-5-3")
TINY = preset("small-4-3")


class SeatRecorder(RandomPlayer):
    """A random player that writes down, per game (keyed by its seed), the positions it was asked."""

    log: dict = {}

    def reset(self, seed=None):
        super().reset(seed)
        self.key = tuple(seed.spawn_key)
        SeatRecorder.log[self.key] = []

    def select(self, state):
        SeatRecorder.log[self.key].append((state.ply, state.to_move))
        return super().select(state)


RECORDER = PlayerRegistry([PlayerKind("test-seat-recorder", SeatRecorder)]).parse("test-seat-recorder")


class CountingEvaluator(UniformEvaluator):
    """Uniform, counting calls and rows (to see the batching)."""

    def __init__(self):
        self.calls = 0
        self.rows = 0
        self.max_rows = 0

    def evaluate(self, pieces, to_move, legal, counts):
        self.calls += 1
        self.rows += len(counts)
        self.max_rows = max(self.max_rows, len(counts))
        return super().evaluate(pieces, to_move, legal, counts)


def uniform(sims, rules=SMALL, **kw):
    return SearchPlayer(rules, None, UniformEvaluator(), simulations=sims, history=1, **kw)


# ---------------------------------------------------------------------------------------------
# Same games as the one-at-a-time arena
# ---------------------------------------------------------------------------------------------


BASELINE_PAIRS = [("greedy", "greedy-stochastic"), ("random", "greedy"), ("greedy-stochastic", "random")]


@pytest.mark.parametrize("parallel", [1, 3, 32])
@pytest.mark.parametrize("pair", BASELINE_PAIRS)
def test_baseline_matches_equal_the_arena(pair, parallel):
    a, b = pair
    args = dict(games=10, seed=7, random_opening=3)
    assert play_match(SMALL, a, b, parallel=parallel, **args) == play_match(SMALL, a, b, **args)


def test_uniform_search_spec_equals_the_arena():
    args = dict(games=8, seed=4, random_opening=3)
    one = play_match(SMALL, "mcts:sims=16", "random", **args)
    batched = play_match(SMALL, "mcts:sims=16", "random", parallel=8, **args)
    assert batched == one
    # The same search side built by hand plays the same moves (only the names differ).
    side = uniform(16, name="mcts:sims=16")
    assert play_match(SMALL, side, "random", parallel=5, **args) == one
    assert set(one.a_results) != {one.a_results[0]}  # not a one-sided test


def test_per_position_search_spec_equals_the_arena():
    # mcts-rollout is not batched: each slot has its own SearchPlayer, reset per game as in the arena.
    args = dict(games=6, seed=2, random_opening=2)
    spec = "mcts-rollout:sims=12"
    assert play_match(TINY, spec, "greedy", parallel=4, **args) == play_match(TINY, spec, "greedy", **args)


def test_network_side_equals_the_arena_network_player(tmp_path):
    torch = pytest.importorskip("torch")
    from ccengine.encoding import encoding_for
    from learner.model import NetConfig, PolicyValueNet, save_net

    torch.manual_seed(0)
    enc = encoding_for(TINY, "general")
    net = PolicyValueNet(NetConfig.for_rules(TINY, enc.in_planes, "tiny"))
    path = tmp_path / "net.pt"
    save_net(net, path, input={"encoding": "general", "history": enc.history})
    args = dict(games=4, seed=3, random_opening=2)
    spec = f"mcts:model={path},sims=8"
    one = play_match(TINY, spec, "greedy-stochastic", **args)
    assert play_match(TINY, spec, "greedy-stochastic", parallel=4, **args) == one
    # From the weights in memory: same moves.
    side = network_player_from_weights(TINY, net.state_dict(), net_config=net.config, sims=8, c_puct=3.5, name=spec)
    assert side.history == enc.history
    assert play_match(TINY, side, "greedy-stochastic", parallel=3, **args) == one
    assert side.batches < side.positions  # leaves of several games went in one call


def _games(result):
    """What a match played, its players' names aside."""
    return result.a_results, result.mean_plies, result.mean_legal_moves, result.to_dict()["seat_wins"]


def test_a_model_file_is_the_same_player_one_at_a_time_in_parallel_and_in_the_evaluator(tmp_path):
    # The bug this guards against: with --parallel, mcts:model=FILE searched with c = 3.5 instead of
    # the c_puct its file records. The evaluator's file records the run's c_puct (here 1.0), and its
    # gate plays the network from memory as that file's SPEC plays it.
    torch = pytest.importorskip("torch")
    from ccengine.search import SearchConfig
    from evaluator.config import EvaluationConfig
    from evaluator.service import EvaluatorService
    from learner.model import NetworkConfig, PolicyValueNet

    torch.manual_seed(0)
    service = EvaluatorService(
        rules=TINY, network=NetworkConfig(size="tiny", encoding="general", history=3),
        search=SearchConfig(c_puct=1.0), evaluation=EvaluationConfig(simulations=16, parallel_games=4),
        seed=0, config_hash="test", run_dir=str(tmp_path), registry="no registry: this test builds players only",
    )
    weights = {k: v.numpy().copy() for k, v in PolicyValueNet(service.net_config).state_dict().items()}
    spec = f"mcts:model={service._write_model(3, weights)},sims=16"
    assert make_player(spec, TINY).config.c_puct == 1.0
    gate_player = service.player(weights, "v3")
    assert gate_player.config == make_player(spec, TINY).config and gate_player.name == "v3"

    args = dict(games=8, seed=3, random_opening=2)
    one = play_match(TINY, spec, "greedy-stochastic", **args)
    assert play_match(TINY, spec, "greedy-stochastic", parallel=4, **args) == one
    assert _games(play_match(TINY, gate_player, "greedy-stochastic", parallel=4, **args)) == _games(one)
    # c matters in these games: the paper's 3.5 (the old --parallel default) plays others.
    assert _games(play_match(TINY, f"{spec},c=3.5", "greedy-stochastic", parallel=4, **args)) != _games(one)


# ---------------------------------------------------------------------------------------------
# Batching, counts, seats, callbacks
# ---------------------------------------------------------------------------------------------


def test_search_side_against_greedy_counts_add_up_and_batches():
    ev = CountingEvaluator()
    side = SearchPlayer(SMALL, None, ev, simulations=10, history=2, name="search:sims=10")
    result = play_match(SMALL, side, "greedy", games=12, seed=1, parallel=6)
    assert result.games == 12 and len(result.a_results) == 12
    assert result.a_wins + result.b_wins + result.draws == 12
    for rec in (result.a_record(0), result.a_record(1)):
        assert rec.wins + rec.losses + rec.draws == 6
    assert sum(result.to_dict()["seat_wins"]) == result.a_wins + result.b_wins
    assert result.a == "search:sims=10" and result.b == "greedy"
    assert side.positions == ev.rows and side.batches == ev.calls
    assert side.searches > 0 and side.positions <= 10 * side.searches
    assert 1 < ev.max_rows <= 6


def test_both_search_sides_fill_the_batch():
    a, b = CountingEvaluator(), CountingEvaluator()
    sides = [SearchPlayer(SMALL, None, ev, simulations=8) for ev in (a, b)]
    play_match(SMALL, sides[0], sides[1], games=8, seed=0, parallel=8)
    # After the first turn every game waits on the same side: full batches.
    assert a.max_rows == 8 and b.max_rows == 8


def test_seats_alternate_and_openings_are_random():
    SeatRecorder.log = {}
    games = 6
    result = play_match(SMALL, uniform(8), RECORDER, games=games, seed=5, parallel=4)
    seeds = game_seeds(5, games)
    for i in range(games):
        calls = SeatRecorder.log[tuple(seeds[i][2].spawn_key)]  # B's seed of game i
        assert calls, f"B never moved in game {i}"
        b_seat = 1 - i % 2  # A holds seat 0 in even games
        assert {to_move for _, to_move in calls} == {b_seat}
        assert min(ply for ply, _ in calls) == 6 + b_seat
    assert sum(vars(result.a_record(0)).values()) == sum(vars(result.a_record(1)).values()) == 3


def test_on_game_fires_once_per_game_with_its_pair():
    seen = []
    result = play_match(
        SMALL, uniform(8), "random", games=9, seed=3, parallel=4,
        on_game=lambda p, g, scores: seen.append((p, g, (scores[0] > scores[1]) - (scores[0] < scores[1])))
    )
    assert sorted(seen) == [(i // 2, i % 2, r) for i, r in enumerate(result.a_results)]
    assert len(seen) == 9  # an odd count: the last pair is half played


def test_parallel_does_not_change_the_games():
    args = dict(games=10, seed=11, random_opening=3)
    results = [
        play_match(SMALL, uniform(8), uniform(16), parallel=p, **args) for p in (1, 8)
    ]
    assert results[0] == results[1]
    assert len(set(results[0].a_results)) > 1
    # One side object on both seats: one batch covers both, the same games.
    side = uniform(12)
    same = [play_match(SMALL, side, side, parallel=p, **args) for p in (1, 4)]
    assert same[0] == same[1]
    assert same[0] == play_match(SMALL, uniform(12), uniform(12), parallel=3, **args)


class OneAtATime(SearchPlayer):
    """A search player the arena asks position by position (``select``), never in a batch."""

    batchable = False


def test_a_search_side_that_keeps_its_tree_plays_as_its_select_and_whatever_the_parallel():
    args = dict(games=8, seed=4, random_opening=3)
    batched = play_match(SMALL, uniform(16, reuse=True), "random", parallel=8, **args)
    assert play_match(SMALL, uniform(16, reuse=True), "random", **args) == batched
    # select() follows the game through the moves played since its last search, as the batch does
    alone = play_match(SMALL, OneAtATime(SMALL, None, UniformEvaluator(), simulations=16, reuse=True), "random", **args)
    assert alone.a_results == batched.a_results
    spec = "mcts:sims=16,reuse=1"
    assert play_match(SMALL, spec, "random", workers=2, **args).a_results == batched.a_results
    # and the kept subtrees change the games: reuse is not a no-op
    assert play_match(SMALL, uniform(16), "random", **args).a_results != batched.a_results


def test_rollout_side_is_reproducible():
    from ccengine._core import tables_for
    from ccengine.search import RolloutEvaluator

    def side():
        return SearchPlayer(TINY, None, RolloutEvaluator(tables_for(TINY), seed=9), simulations=8)

    args = dict(games=6, seed=1, parallel=3)
    assert play_match(TINY, side(), "greedy", **args) == play_match(TINY, side(), "greedy", **args)


# ---------------------------------------------------------------------------------------------
# Stopping early
# ---------------------------------------------------------------------------------------------


def test_should_stop_abandons_the_games_in_flight():
    full = play_match(SMALL, uniform(8), "random", games=16, seed=6, parallel=4)
    seen = []
    stopped = play_match(
        SMALL, uniform(8), "random", games=16, seed=6, parallel=4,
        on_game=lambda p, g, r: seen.append(2 * p + g), should_stop=lambda: len(seen) >= 5,
    )
    assert len(seen) == 5 and stopped.games == 5
    assert stopped.a_results == tuple(full.a_results[i] for i in sorted(seen))


def test_gate_stops_the_match():
    gate = Gate(GateConfig(games=40, min_games=4, sprt=True))
    result = play_match(
        SMALL, uniform(8), "greedy", games=40, seed=2, parallel=8,
        on_game=gate.record, should_stop=lambda: gate.finished,
    )
    assert gate.decision == "reject"
    assert gate.counted_games <= result.games < 40


def test_player_sides_stop_too():
    seen = []
    result = play_match(
        SMALL, "greedy", "random", games=20, seed=1, parallel=4,
        on_game=lambda *args: seen.append(args), should_stop=lambda: len(seen) == 3,
    )
    assert result.games == 3 == len(seen)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def test_bad_arguments():
    with pytest.raises(ValueError):
        play_match(SMALL, "greedy", "random", games=0, seed=0)
    with pytest.raises(ValueError):
        play_match(SMALL, "greedy", "random", games=2, seed=0, parallel=0)
    with pytest.raises(ValueError):
        play_match(SMALL, "greedy", "random", games=2, seed=0, random_opening=-1)
    with pytest.raises(PlayerSpecError):
        play_match(SMALL, "greedy", "nonsense", games=2, seed=0)
    with pytest.raises(TypeError):
        play_match(SMALL, 3, "random", games=2, seed=0)
    # mcts is searched in batches; mcts-rollout (an evaluator per game) chooses per position.
    assert make_player("mcts:sims=4", SMALL).batchable
    assert not make_player("mcts-rollout:sims=4", SMALL).batchable
    with pytest.raises(ValueError, match="one game at a time"):
        play_match(SMALL, make_player("greedy", SMALL), "random", games=4, seed=0, parallel=2)
    with pytest.raises(ValueError, match="cython"):
        play_match(SMALL, "mcts:sims=4", "random", games=2, seed=0, engine="reference")
