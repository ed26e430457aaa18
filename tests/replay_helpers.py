"""Game records of random games for the replay tests: the Cython engine plays, PieceTracker names pieces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ccengine import PASS, PieceTracker, new_state
from ccengine.rules import Rules
from learner.records import GameRecord, make_record

VERSIONS = {"hopzero": "0.1.0", "numpy": "x", "torch": "y"}


def random_game_record(
    rules: Rules,
    seed: int,
    *,
    run_id: str = "run-a",
    max_plies: int | None = None,
    skip: int = 0,
    history: int = 3,
    simulations: int = 0,
    forward_bias: float = 0.5,
    keep_fraction: float | None = None,
    weighted: bool = False,
    prob_dtype: str = "float16",
    lists: list[np.ndarray] | None = None,
) -> GameRecord:
    """A record of a random game: ``skip`` opening plies unrecorded (kept as start history).

    The policy target is a random distribution over the legal moves (absolute indices); with
    ``simulations > 0`` it is the visit fractions of that many draws from a peaked prior, zeros
    dropped, like a search's. A pass-only position gets an empty policy. When ``lists`` is
    given, the tracker's own piece lists (8 states) of each recorded position are appended to it:
    an oracle for history planes that does not go through the record.
    """
    rng = np.random.default_rng(seed)
    state = new_state(rules)
    tracker = PieceTracker(rules)
    limit = rules.max_plies if max_plies is None else max_plies
    pieces, to_move, policies, values = [], [], [], []
    start = None
    ply = 0
    while not state.is_terminal() and ply < limit:
        legal = state.legal_moves()
        if ply == skip:
            start = tracker.piece_lists(history + 1)[1:]
        if ply >= skip:
            pieces.append(tracker.current)
            if lists is not None:
                lists.append(tracker.piece_lists(8))
            to_move.append(tracker.to_move)
            if legal == [PASS]:
                policies.append((np.zeros(0, np.int64), np.zeros(0)))
            else:
                idx = tracker.move_indices(legal)  # absolute coordinates (rotate=False)
                if simulations:
                    prior = np.exp(2.0 * rng.standard_normal(len(legal)))
                    visits = rng.multinomial(simulations, prior / prior.sum())
                    nz = visits > 0
                    policies.append((idx[nz], visits[nz] / simulations))
                else:
                    p = rng.random(len(legal)) + 1e-3
                    policies.append((idx, p / p.sum()))
            shares = rng.random(rules.players) + 1e-3
            values.append(shares / shares.sum())
        if legal != [PASS] and rng.random() < forward_bias:
            best = max(rules.geometry.forward_distance(state.to_move, m) for m in legal)
            legal = [m for m in legal if rules.geometry.forward_distance(state.to_move, m) == best]
        move = legal[int(rng.integers(len(legal)))]
        state.play(move)
        tracker.play(move)
        ply += 1
    scores = state.scores() if state.is_terminal() else (1.0 / rules.players,) * rules.players
    t = len(pieces)
    keep = None if keep_fraction is None else rng.random(t) < keep_fraction
    weight = rng.uniform(0.5, 2.0, t) if weighted else None
    return make_record(
        run_id=run_id, rules=rules, config_hash="cfg0", model_version=3, actor="actor-1", seed=seed,
        pieces=np.array(pieces), to_move=to_move, policies=policies, scores=scores, root_shares=values,
        plies=ply, start_pieces=start,
        keep=keep, weight=weight, versions=VERSIONS, prob_dtype=prob_dtype,
    )


def games_key(run_dir: Path | str) -> str:
    """The Redis stream of the run in ``run_dir`` under the default key prefix ``hopzero:<run id>``."""
    run_id = json.loads((Path(run_dir) / "run.json").read_text())["run_id"]
    return f"hopzero:{run_id}:games"
