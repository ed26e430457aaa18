"""Stage-2 self-play worker (actors.selfplay): records that replay as legal games, the random
opening kept as history, weight swaps, resignation and its false-positive check, determinism, and
games against an outside opponent."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from actor_helpers import board_of, final_move_exists, move_between, record_states, replay
from actors.selfplay import NoWeightsError, SelfPlayWorker
from ccengine import preset
from ccengine._core import State
from ccengine.encoding import encoding_for
from ccengine.search import SearchConfig, UniformEvaluator
from learner.model import NetConfig, PolicyValueNet
from learner.players import make_player
from learner.records import decode_record, encode_record

RULES = preset("small-4-3")
HISTORY = 2
ENC = encoding_for(RULES, "general", history=HISTORY)
NET = NetConfig.for_rules(RULES, ENC.in_planes, "tiny")
RANDOM_PLIES = 2
SEARCH = SearchConfig(num_simulations=12, random_opening_plies=RANDOM_PLIES, explore_plies=2)


@pytest.fixture(autouse=True, scope="module")
def _restore_torch_threads():
    """The worker sets torch's threads process-wide (one per actor); give them back to the other
    tests of the session."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def worker(seed=1, games=4, **kwargs):
    args = dict(games=games, search=SEARCH, net_config=NET, encoding="general", history=HISTORY,
                run_id="run", config_hash="cfg", actor="sp-0", seed=seed)
    args.update(kwargs)
    return SelfPlayWorker(RULES, **args)


def arrays(seed):
    torch.manual_seed(seed)
    return {k: v.numpy().copy() for k, v in PolicyValueNet(NET).state_dict().items()}


def play(w, steps):
    records = []
    for _ in range(steps):
        records += w.step()
    return records


class LosingForPlayer0:
    """Every position is lost for player 0: value -1 for player 0 to move, +1 for player 1."""

    def evaluate(self, pieces, to_move, legal, counts):
        priors, _ = UniformEvaluator().evaluate(pieces, to_move, legal, counts)
        return priors, np.where(to_move == 0, -1.0, 1.0).astype(np.float32)


@pytest.fixture(scope="module")
def played():
    w = worker(seed=3)
    w.set_weights(7, arrays(0))
    return w, play(w, 120)


def test_records_decode_and_replay_as_legal_games(played):
    w, records = played
    assert len(records) >= 8
    for rec in records:
        back = decode_record(encode_record(rec))
        assert back.same_as(rec)
        assert rec.run_id == "run" and rec.actor == "sp-0" and rec.config_hash == "cfg"
        assert rec.model_version == 7
        last = replay(RULES, rec)
        # one move from each state, history and recorded positions; the last one (not recorded)
        # ends the game with the recorded result vector
        assert rec.plies == rec.start_pieces.shape[0] + rec.num_positions
        assert final_move_exists(last, rec.scores)
        np.testing.assert_allclose(rec.root_shares.sum(axis=1), 1.0, rtol=1e-6)
        assert rec.keep is None and rec.weight is None


def test_random_opening_is_history_not_positions(played):
    _, records = played
    for rec in records:
        assert rec.start_pieces.shape[0] == RANDOM_PLIES
        assert (rec.start_pieces >= 0).all()  # every opening state exists (no missing rows)
        assert int(rec.to_move[0]) == RANDOM_PLIES % 2
        # the oldest history state is the start position
        board = [-1] * RULES.cells
        for p in (0, 1):
            for c in rec.start_pieces[-1, p]:
                board[int(c)] = p
        assert tuple(board) == RULES.geometry.start_board()
        # every recorded position has a search target (no pass-only positions on this board)
        assert (np.diff(rec.policy_offsets) > 0).all()


def test_policy_target_is_the_visit_distribution(played):
    _, records = played
    for rec in records:
        for t in range(rec.num_positions):
            idx, prob = rec.policy(t)
            assert (prob > 0).all()  # visited moves only
            assert abs(prob.astype(np.float64).sum() - 1) < 2e-3
            assert len(np.unique(idx)) == len(idx)


def test_tracker_ids_agree_with_the_search(played):
    w, _ = played
    for g, game in enumerate(w._games):
        assert np.array_equal(w.search.forest.root_history(g)[0], game.tracker.current)


def test_stats(played):
    w, records = played
    s = w.stats()
    assert s["games_finished"] == len(records) + s["games_unrecorded"]
    assert s["positions"] == sum(r.num_positions for r in records)
    assert s["wins_first"] + s["wins_second"] + s["draws"] == s["games_finished"]
    assert s["steps"] == 120 and s["moves"] == 120 * 4
    assert s["simulations"] == s["searches"] * SEARCH.num_simulations
    assert s["network_s"] > 0 and s["search_s"] > 0 and s["simulations_per_s"] > 0
    assert s["model_version"] == 7 and s["games_in_flight"] == 4
    assert s["mean_game_plies"] == pytest.approx(np.mean([r.plies for r in records]))


def test_step_needs_weights():
    w = worker()
    with pytest.raises(NoWeightsError, match="set_weights"):
        w.step()
    w.set_weights(0, arrays(0))
    w.step()


def test_uniform_until_weights_then_versions_of_game_start():
    w = worker(games=2, uniform_until_weights=True)
    before = play(w, 30)
    assert before and all(r.model_version == -1 for r in before)
    w.set_weights(5, arrays(1))
    after = play(w, 60)
    versions = {r.model_version for r in after}
    assert versions <= {-1, 5} and 5 in versions  # games started before the swap keep -1
    assert w.stats()["games_spanning_versions"] >= 1


def test_weight_swap_changes_the_evaluator_in_place():
    w = worker(games=2)
    w.set_weights(1, arrays(1))
    net = w.network
    inference = net.inference
    rng = np.random.default_rng(0)
    b = 5
    pieces = np.tile(np.array([[[0, 4, 5], [10, 11, 15]]], np.int8), (b, HISTORY, 1, 1))
    to_move = rng.integers(0, 2, b).astype(np.int8)
    legal = np.tile(np.arange(6, dtype=np.int32), (b, 1))
    counts = np.full(b, 6, np.int32)
    p1, v1 = net.evaluate(pieces, to_move, legal, counts)
    w.set_weights(2, arrays(2))
    assert w.network is net and net.inference is inference  # swapped in place
    p2, v2 = net.evaluate(pieces, to_move, legal, counts)
    assert w.model_version == 2
    assert not np.allclose(p1, p2) or not np.allclose(v1, v2)
    w.set_weights(3, arrays(1))
    p3, v3 = net.evaluate(pieces, to_move, legal, counts)
    np.testing.assert_allclose(p3, p1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v3, v1, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        w.set_weights(4, {"nope": np.zeros(3)})


def test_resignation_ends_games_as_losses():
    w = worker(games=3, evaluator=LosingForPlayer0(), resign_threshold=0.5, resign_playout_fraction=0.0)
    records = play(w, 12)
    s = w.stats()
    assert records and s["resigned"] == s["games_finished"] == len(records)
    for rec in records:
        assert list(rec.scores) == [0.0, 1.0]  # player 0 resigned
        # player 0 searches at plies 2 and 4 (random opening: plies 0, 1) and resigns at ply 4,
        # which is not recorded: positions at plies 2 and 3
        assert rec.num_positions == 2 and rec.plies == RANDOM_PLIES + 2
        assert (rec.root_shares[rec.to_move == 0, 0] == 0).all()  # player 0 saw its share as nothing
        replay(RULES, rec)
        assert decode_record(encode_record(rec)).same_as(rec)
    assert s["playout_games"] == 0 and s["would_resign"] == 0


def test_playout_games_count_false_resignations():
    w = worker(games=3, evaluator=LosingForPlayer0(), resign_threshold=0.5, resign_playout_fraction=1.0)
    records = play(w, 150)
    s = w.stats()
    assert records and s["resigned"] == 0
    assert s["playout_games"] == s["games_finished"] == len(records)

    def would_resign(rec):  # two consecutive own searched moves of player 0 below -0.5
        low = 2 * rec.root_shares[rec.to_move == 0, 0] - 1 < -0.5
        return bool((low[1:] & low[:-1]).any())

    would = [r for r in records if would_resign(r)]
    assert len(would) >= len(records) // 2  # most games last long enough for two moves of player 0
    assert s["would_resign"] == len(would)  # player 1's values are +1: it never would
    not_lost = sum(1 for r in would if r.scores[0] > 0)
    assert s["false_resignations"] == not_lost
    assert s["false_resignation_rate"] == pytest.approx(not_lost / len(would))


def test_no_resignation_when_off():
    w = worker(games=2, evaluator=LosingForPlayer0(), resign_threshold=0.0)
    play(w, 40)
    assert w.stats()["resigned"] == 0 and w.stats()["would_resign"] == 0


def test_deterministic_given_the_seed():
    def run(seed):
        w = worker(seed=seed, games=3)
        w.set_weights(1, arrays(0))
        return play(w, 40)

    a, b = run(11), run(11)
    assert len(a) == len(b) and a
    assert all(x.same_as(y) for x, y in zip(a, b))
    seeds = [[g.seed for g in worker(seed=s, games=3)._games] for s in (11, 11, 12)]
    assert seeds[0] == seeds[1] != seeds[2]


def test_drain_without_refill():
    w = worker(games=3, uniform_until_weights=True)
    play(w, 5)
    for _ in range(400):
        w.step(refill=False)
        if w.active_games() == 0:
            break
    assert w.active_games() == 0
    assert w.step(refill=False) == []
    w.step()
    assert w.active_games() == 3


def test_bad_arguments():
    with pytest.raises(ValueError):
        worker(games=0)
    with pytest.raises(ValueError):
        worker(resign_threshold=-0.1)
    with pytest.raises(ValueError, match="does not fit"):
        worker(net_config=NetConfig.for_rules(RULES, ENC.in_planes + 1, "tiny"))


def test_outside_opponent_plays_its_seat_and_its_positions_train_nothing():
    w = worker(seed=5, games=4, opponent="alphabeta:depth=1", opponent_fraction=1.0)
    w.set_weights(1, arrays(0))
    records = play(w, 150)
    assert len(records) >= 4
    teacher = make_player("alphabeta:depth=1", RULES)
    opponent_moves = 0
    for rec in records:
        replay(RULES, rec)  # still legal games
        keep = rec.keep if rec.keep is not None else np.ones(rec.num_positions, bool)
        unkept = {int(m) for m, kept in zip(rec.to_move, keep) if not kept}
        kept = {int(m) for m, kept in zip(rec.to_move, keep) if kept}
        assert len(unkept) <= 1 and not unkept & kept, "one seat is the opponent's, the other the network's"
        assert all(len(rec.policy(t)[0]) == 0 for t in np.flatnonzero(~keep))
        # the opponent's moves are alpha-beta's
        states, h = record_states(rec)
        for t in np.flatnonzero(~keep)[:-1]:
            state = State(RULES, board_of(RULES, states[h + t]), int(rec.to_move[t]), 0)
            assert move_between(states[h + t], states[h + t + 1], state.to_move) == teacher.select(state)
            opponent_moves += 1
    assert opponent_moves > 10
    stats = w.stats()
    assert stats["opponent_moves"] > 0
    assert sum(stats["opponent_results"]) == stats["games_finished"]
    # a game the opponent ended is replaced before the search: every step moves in all four slots
    assert stats["moves"] - stats["opponent_moves"] == 150 * 4


def test_outside_opponent_leaves_the_games_seeds_alone():
    """The opponent's draws have their own stream: a share of games against it changes nothing
    else (the same game seeds), and only that share of games seats it."""
    plain = worker(seed=11, games=40)
    mixed = worker(seed=11, games=40, opponent="greedy", opponent_fraction=0.5)
    assert [g.seed for g in plain._games] == [g.seed for g in mixed._games]
    seated = [g.opponent_seats for g in mixed._games if g.opponent_seats]
    assert 8 <= len(seated) <= 32 and set(seated) == {(0,), (1,)}
    assert all(not g.opponent_seats for g in plain._games)


def test_outside_opponent_at_three_of_four_seats():
    """``opponent_seats=3`` on four players: three distinct seats per game, the first drawn as
    with one seat; the opponent plays three moves to the network's one, all before the step's
    search, so that every step searches (or draws the random opening's move in) every game."""
    rules = preset("star4")
    enc = encoding_for(rules, "general", history=HISTORY)

    def four(seats):
        return SelfPlayWorker(rules, games=24, search=SEARCH, net_config=NetConfig.for_rules(rules, enc.in_planes, "tiny"),
                              encoding="general", history=HISTORY, run_id="run", config_hash="cfg", actor="sp-0",
                              seed=7, evaluator=UniformEvaluator(4), opponent="greedy", opponent_fraction=1.0,
                              opponent_seats=seats)

    one, three = four(1), four(3)
    for a, b in zip(one._games, three._games):
        assert len(b.opponent_seats) == 3 and len(set(b.opponent_seats)) == 3 and a.opponent_seats[0] in b.opponent_seats
    for _ in range(40):
        three.step()
    stats = three.stats()
    assert 2.5 * stats["searches"] <= stats["opponent_moves"] <= 3.5 * stats["searches"] + 3 * 24
    assert stats["moves"] - stats["opponent_moves"] == 40 * 24, "the network moved in every game at every step"
    with pytest.raises(ValueError, match="opponent_seats=4 must .* leave the network a seat"):
        four(4)


def test_outside_opponent_arguments():
    with pytest.raises(ValueError, match="needs an opponent"):
        worker(opponent_fraction=0.5)
    with pytest.raises(ValueError, match="opponent_fraction"):
        worker(opponent="greedy", opponent_fraction=1.5)
    with pytest.raises(ValueError, match="unknown player"):
        worker(opponent="nobody", opponent_fraction=0.5)
