"""The stage-1 search teacher (actors.teacher): MCTS with greedy playouts plays self-play games
whose records are ordinary, legal, fully kept and carry visit-count targets."""

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
    # the search's visit distributions: spread over several moves (a greedy target is one move
    # or a tie), with root values from the playouts
    spread = [len(r.policy(t)[0]) > 1 for r in records for t in range(r.num_positions)]
    assert np.mean(spread) > 0.5
    assert any(np.abs(r.root_value).max() > 0 for r in records)
    stats = teach.stats()
    assert stats["games"] == len(records) and stats["positions"] == sum(r.num_positions for r in records)
    assert stats["simulations"] >= 60 * stats["positions"]


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
