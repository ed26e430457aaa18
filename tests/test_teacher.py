"""The stage-1 search teacher (actors.teacher): MCTS with greedy playouts plays self-play games
whose records are ordinary, legal, fully kept and carry the search's decisions as targets."""

from __future__ import annotations

import numpy as np
import pytest

from actor_helpers import final_move_exists, replay
from actors.teacher import RolloutTeacher
from ccengine import preset
from ccengine.search import SearchConfig
from hopzero.config import ConfigError, load_config
from learner.records import decode_record, encode_record

RULES = preset("small-4-3")
SEARCH = SearchConfig(num_simulations=7, random_opening_plies=2, explore_plies=2)


def teacher(seed=1, simulations=60):
    return RolloutTeacher(RULES, games=3, search=SEARCH, simulations=simulations, encoding="general",
                          history=2, run_id="run", config_hash="cfg", actor="sp-0", seed=seed)


def test_teacher_games_are_legal_records_with_search_targets():
    teach = teacher()
    records = []
    while len(records) < 6:
        records += teach.generate()
    for rec in records:
        rec = decode_record(encode_record(rec))  # what crosses the wire
        assert rec.model_version == -1 and rec.keep is None  # no network yet; every position kept
        state = replay(RULES, rec)
        assert final_move_exists(state, rec.outcome)
        for t in range(rec.num_positions):
            _, probs = rec.policy(t)
            assert len(probs) == 0 or abs(float(probs.astype(np.float64).sum()) - 1.0) < 1e-2
    # the teacher's decision as the target: its most visited move, ties shared equally
    for rec in records:
        for t in range(rec.num_positions):
            _, probs = rec.policy(t)
            assert len(probs) == 0 or np.all(probs == probs[0])
    assert np.mean([len(r.policy(t)[0]) == 1 for r in records for t in range(r.num_positions)]) > 0.8
    assert any(np.abs(r.root_value).max() > 0 for r in records)  # root values from the playouts
    stats = teach.stats()
    assert stats["games"] == len(records) and stats["positions"] == sum(r.num_positions for r in records)
    assert stats["simulations"] >= 60 * stats["positions"]


def test_most_visited_targets_keep_the_best_moves_and_everything_else():
    from actors.teacher import most_visited_targets

    worker = teacher().worker  # its records still carry the whole visit distributions
    records: list = []
    while not records:
        records = worker.step()
    rec = records[0]
    narrowed = most_visited_targets(RULES, rec)
    for t in range(rec.num_positions):
        index, prob = rec.policy(t)
        n_index, n_prob = narrowed.policy(t)
        assert set(n_index.tolist()) == set(index[prob == prob.max()].tolist())
        assert abs(float(n_prob.astype(np.float64).sum()) - 1.0) < 1e-3
    assert np.array_equal(narrowed.pieces, rec.pieces) and narrowed.outcome == rec.outcome
    assert np.array_equal(narrowed.root_value, rec.root_value)


def test_teacher_is_reproducible_from_its_seed():
    a, b = teacher(seed=4), teacher(seed=4)
    ra, rb = a.generate(), b.generate()
    assert [r.outcome for r in ra] == [r.outcome for r in rb]
    assert all(np.array_equal(x.pieces, y.pieces) for x, y in zip(ra, rb))


def test_teacher_settings_are_checked():
    assert load_config("fast", overrides=["stage1.teacher=rollout"]).stage1.teacher == "rollout"
    with pytest.raises(ConfigError, match="teacher='expert' is unknown; valid: greedy, rollout"):
        load_config("fast", overrides=["stage1.teacher=expert"])
    with pytest.raises(ConfigError, match="teacher_simulations=0 must be at least 1"):
        load_config("fast", overrides=["stage1.teacher_simulations=0"])
