"""The batched tree search (ccengine._search, ccengine.search): bookkeeping, values, batching,
noise, reuse, and finding short wins on small boards."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ccengine import parse_position, preset
from ccengine._core import State, tables_for
from ccengine.encoding import canonical_ids
from ccengine.reference import ReferenceState
from ccengine.search import (
    PASS_ACTION,
    BatchedSearch,
    RolloutEvaluator,
    SearchConfig,
    SearchForest,
    UniformEvaluator,
    canonical_pieces,
    choose_move,
    run_search,
)

SMALL = preset("small-4-3")
CC49 = preset("cc49")
PAPER = preset("paper")

# Deterministic evaluation play: no noise, no random or exploratory plies, most visited move.
EVAL = SearchConfig(num_simulations=200).for_evaluation()

# x to move wins at once with (1,2) -> (0,2): its goal (0,2),(0,3),(1,3) is then full.
WIN_IN_ONE = "...x/..xx/o.o./o... x 10"
# x to move: no win in one, but (2,2) -> (1,2) wins next move whatever o does.
WIN_IN_TWO = "oo.x/o..x/..x./.... x 10"


def state_of(rules, text):
    pos = parse_position(rules, text)
    return State(rules, pos.board, pos.to_move, pos.ply)


def ref_of(rules, text):
    pos = parse_position(rules, text)
    return ReferenceState(rules, pos.board, pos.to_move, pos.ply)


def mirrored(rules, text):
    """The same position with colours swapped and the board turned 180 degrees: o to move."""
    pos = parse_position(rules, text)
    cells = rules.cells
    board = [-1] * cells
    for i, v in enumerate(pos.board):
        if v >= 0:
            board[cells - 1 - i] = 1 - v
    return State(rules, board, 1 - pos.to_move, pos.ply), (lambda i: cells - 1 - i)


def cell(rules, r, c):
    return r * rules.n + c


class HashEvaluator:
    """Deterministic per row: priors and value are a function of the leaf's piece lists only."""

    def __init__(self, with_value=True):
        self.with_value = with_value

    def evaluate(self, pieces, to_move, legal, counts):
        b, m = legal.shape
        priors = np.zeros((b, m), np.float32)
        values = np.zeros(b, np.float32)
        for i in range(b):
            key = int.from_bytes(pieces[i, 0].tobytes(), "little") ^ int(to_move[i])
            rng = np.random.default_rng(key % (2**63))
            priors[i, : counts[i]] = rng.random(counts[i]) + 0.05
            if self.with_value:
                values[i] = rng.uniform(-0.5, 0.5)
        return priors, values


class RecordingEvaluator(UniformEvaluator):
    """Uniform, and keeps a copy of every batch."""

    def __init__(self):
        self.batches = []

    def evaluate(self, pieces, to_move, legal, counts):
        self.batches.append((pieces.copy(), to_move.copy(), legal.copy(), counts.copy()))
        return super().evaluate(pieces, to_move, legal, counts)


def forced_win_in_two(ref, move):
    """Whether after ``move`` every reply of the opponent allows a winning move."""
    mover = ref.to_move
    ref.play(move)
    try:
        if ref.is_terminal():
            return ref.result() == (1 if mover == 0 else -1)
        for reply in ref.legal_moves():
            ref.play(reply)
            try:
                if ref.is_terminal():
                    if ref.result() != (1 if mover == 0 else -1):
                        return False
                    continue
                wins = False
                for m2 in ref.legal_moves():
                    ref.play(m2)
                    wins = ref.is_terminal() and ref.result() == (1 if mover == 0 else -1)
                    ref.undo()
                    if wins:
                        break
                if not wins:
                    return False
            finally:
                ref.undo()
        return True
    finally:
        ref.undo()


# ---------------------------------------------------------------------------------------------
# Piece IDs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rules", [SMALL, CC49, preset("cc81")])
def test_canonical_pieces_match_encoding(rules):
    rng = np.random.default_rng(0)
    state = State(rules)
    for _ in range(30):
        assert np.array_equal(canonical_pieces(state), canonical_ids(rules, state.board))
        if state.is_terminal():
            break
        moves = state.legal_moves()
        state.play(moves[rng.integers(len(moves))])


# ---------------------------------------------------------------------------------------------
# Bookkeeping
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("leaves", [1, 4])
@pytest.mark.parametrize("parent_visits", ["node", "children_sum"])
def test_visit_counts_add_up(leaves, parent_visits):
    cfg = EVAL.replace(num_simulations=150, leaves_per_game=leaves, parent_visits=parent_visits)
    search = BatchedSearch(CC49, 3, cfg, rng=np.random.default_rng(0))
    for g in range(3):
        search.set_root(g, State(CC49))
    results = search.search(HashEvaluator())
    for g, res in enumerate(results):
        assert res.simulations == 150
        # one simulation expanded the root, every other one went through a child
        assert res.visits.sum() == 149
        assert math.isclose(res.policy.sum(), 1.0, rel_tol=1e-5)
        assert search.forest.check_invariants(g)
        moves, visits, _, priors, n_node = search.forest.node_edges(g)
        assert n_node == 150 and visits.sum() == 149
        assert math.isclose(float(priors.sum()), 1.0, rel_tol=1e-5)


class SharesEvaluator(HashEvaluator):
    """:class:`HashEvaluator`'s values as result vectors by seat: what every evaluator may return."""

    def evaluate(self, pieces, to_move, legal, counts):
        priors, values = super().evaluate(pieces, to_move, legal, counts)
        mover = (1 + values) / 2
        shares = np.empty((len(values), 2), np.float32)
        shares[np.arange(len(values)), to_move] = mover
        shares[np.arange(len(values)), 1 - to_move.astype(np.int64)] = 1 - mover
        return priors, shares


def test_two_players_take_result_vectors_as_the_same_values():
    """The search takes a value per seat for two players as for more; the two-player fast form (the
    mover's value alone) searches the same tree."""
    results = []
    for evaluator in (HashEvaluator(), SharesEvaluator()):
        search = BatchedSearch(CC49, 2, EVAL.replace(num_simulations=120), rng=np.random.default_rng(3))
        for g in range(2):
            search.set_root(g, State(CC49))
        results.append(search.search(evaluator))
    for one, other in zip(*results):
        np.testing.assert_array_equal(one.visits, other.visits)
        assert one.root_value == pytest.approx(other.root_value, abs=1e-6)


def test_select_writes_buffers_and_refuses_misuse():
    tables = tables_for(SMALL)
    forest = SearchForest(tables, 2, history=2)
    forest.set_root(0, State(SMALL))
    forest.set_root(1, State(SMALL))
    forest.start(0, 5)
    forest.start(1, 5)
    rows, m, k = 2, tables.max_moves, tables.k
    pieces = np.zeros((rows, 2, 2, k), np.int8)
    to_move = np.zeros(rows, np.int8)
    legal = np.full((rows, m), 99, np.int32)
    counts = np.zeros(rows, np.int32)
    games = np.zeros(rows, np.int32)
    n = forest.select(pieces, to_move, legal, counts, None, games)
    assert n == 2 and list(games) == [0, 1]
    start_moves = State(SMALL).legal_moves()
    assert counts[0] == len(start_moves)
    ids = canonical_pieces(State(SMALL))
    expected = [int(np.flatnonzero(ids[0] == s)[0]) * SMALL.cells + e for s, e in start_moves]
    assert list(legal[0, : counts[0]]) == expected
    assert not legal[0, counts[0] :].any()
    assert (pieces[:, 1] == -1).all()  # no history before a fresh root
    with pytest.raises(RuntimeError):
        forest.select(pieces, to_move, legal, counts)
    with pytest.raises(ValueError):
        forest.expand_and_backup(np.zeros((1, m), np.float32), np.zeros(1, np.float32))
    forest.expand_and_backup(np.ones((rows, m), np.float32), np.zeros(rows, np.float32))
    with pytest.raises(ValueError):
        forest.select(np.zeros((rows, 3, 2, k), np.int8), to_move, legal, counts)


def test_virtual_loss_spreads_the_leaves_of_one_round():
    tables = tables_for(CC49)
    forest = SearchForest(tables, 1, leaves_per_game=4)
    forest.set_root(0, State(CC49))
    forest.start(0, 9)
    rows, m, k = 4, tables.max_moves, tables.k
    bufs = (np.zeros((rows, 1, 2, k), np.int8), np.zeros(rows, np.int8), np.zeros((rows, m), np.int32),
            np.zeros(rows, np.int32))
    uniform = UniformEvaluator()
    sizes = []
    while forest.pending_simulations():
        n = forest.select(*bufs)
        sizes.append(n)
        leaves = {bufs[0][i].tobytes() for i in range(n)}
        assert len(leaves) == n  # distinct positions: the in-flight ones are avoided
        forest.expand_and_backup(*uniform.evaluate(*(b[:n] for b in bufs)))
    assert sizes == [1, 4, 4]  # the fresh root alone, then four leaves a round
    assert forest.check_invariants(0)


def test_leaf_history_follows_the_path_and_the_game():
    rules = CC49
    rng = np.random.default_rng(3)
    state = State(rules)
    ids = canonical_pieces(state)
    lists = [ids.copy()]
    for _ in range(3):  # a short game, tracking piece IDs by hand
        moves = state.legal_moves()
        s, e = moves[rng.integers(len(moves))]
        cur = lists[-1].copy()
        cur[state.to_move][cur[state.to_move] == s] = e
        state.play((s, e))
        lists.append(cur)
    history = np.stack(lists[::-1])  # [4, 2, k]: the root first
    rec = RecordingEvaluator()
    search = BatchedSearch(rules, 1, EVAL.replace(num_simulations=60), history=4, rng=np.random.default_rng(0))
    search.set_root(0, state, history)
    search.search(rec)
    first_pieces = rec.batches[0][0][0]
    assert np.array_equal(first_pieces, history)  # the root's leaf reports the game's history
    for pieces, to_move, _, _ in rec.batches[1:]:
        for row, mover_now in zip(pieces, to_move):
            for h in range(3):
                newer, older = row[h], row[h + 1]
                # one ply separates them: only the piece of the player who moved changed
                mover = (int(mover_now) + h + 1) % 2
                assert np.array_equal(newer[1 - mover], older[1 - mover])
                assert (newer[mover] != older[mover]).sum() <= 1
    with pytest.raises(ValueError):
        bad = history.copy()
        bad[0, 0, 0] = bad[0, 1, 0]  # a cell of the other player
        search.set_root(0, state, bad)


# ---------------------------------------------------------------------------------------------
# Values and wins
# ---------------------------------------------------------------------------------------------


def test_finds_a_win_in_one_with_exact_value():
    state = state_of(SMALL, WIN_IN_ONE)
    win = (cell(SMALL, 1, 2), cell(SMALL, 0, 2))
    [res] = run_search([state], UniformEvaluator(), EVAL, np.random.default_rng(0))
    assert res.move == win
    i = [tuple(m) for m in res.moves.tolist()].index(win)
    assert res.q[i] == 1.0  # terminal values are exact
    assert res.root_value > 0.8


@pytest.mark.parametrize("parent_visits", ["node", "children_sum"])
def test_value_sign_for_both_players(parent_visits):
    cfg = EVAL.replace(parent_visits=parent_visits)
    state, flip = mirrored(SMALL, WIN_IN_ONE)
    win = (flip(cell(SMALL, 1, 2)), flip(cell(SMALL, 0, 2)))
    [res] = run_search([state], UniformEvaluator(), cfg, np.random.default_rng(1))
    assert state.to_move == 1
    assert res.move == win
    assert res.root_value > 0.8
    # after the win the loser is to move in a finished game: nothing to search
    search = BatchedSearch(SMALL, 1, cfg, rng=np.random.default_rng(0))
    search.set_root(0, state)
    search.play(0, win)
    assert not search.is_active(0)


def test_lost_position_has_negative_value():
    # o to move, but x threatens (1,2) -> (0,2) and o cannot stop it (o's own win is far away)
    text = "...x/..xx/o.o./o... o 10"
    [res] = run_search([state_of(SMALL, text)], UniformEvaluator(), EVAL.replace(num_simulations=400),
                       np.random.default_rng(0))
    assert res.root_value < -0.5


@pytest.mark.parametrize("evaluator", ["uniform", "rollout"])
def test_finds_a_forced_win_in_two(evaluator):
    state = state_of(SMALL, WIN_IN_TWO)
    ref = ref_of(SMALL, WIN_IN_TWO)
    assert not any(forced_win_in_two(ref, m) and _wins_now(ref, m) for m in ref.legal_moves())
    ev = UniformEvaluator() if evaluator == "uniform" else RolloutEvaluator(tables_for(SMALL), policy="random")
    [res] = run_search([state], ev, EVAL.replace(num_simulations=1500), np.random.default_rng(0))
    assert forced_win_in_two(ref, res.move)
    assert res.root_value > 0.5


def _wins_now(ref, move):
    mover = ref.to_move
    ref.play(move)
    won = ref.is_terminal() and ref.result() == (1 if mover == 0 else -1)
    ref.undo()
    return won


def test_finished_root_is_refused():
    state = state_of(SMALL, WIN_IN_ONE)
    state.play((cell(SMALL, 1, 2), cell(SMALL, 0, 2)))
    assert state.is_terminal()
    forest = SearchForest(tables_for(SMALL), 1)
    forest.set_root(0, state)
    assert not forest.is_active(0)
    with pytest.raises(ValueError):
        forest.start(0, 10)


def test_rollout_values_are_exact_near_the_end_and_repeatable():
    tables = tables_for(SMALL)
    ev = RolloutEvaluator(tables, policy="greedy", seed=7)
    search = BatchedSearch(SMALL, 1, EVAL.replace(num_simulations=50), rng=np.random.default_rng(0))
    search.set_root(0, state_of(SMALL, WIN_IN_ONE))
    [res] = [r for r in search.search(ev) if r is not None]
    # the win now is exact; the other moves are proven by deterministic-enough playouts, and
    # (1,3) -> (0,2) also wins a move later, so both score +1
    win = [tuple(m) for m in res.moves.tolist()].index((cell(SMALL, 1, 2), cell(SMALL, 0, 2)))
    assert res.q[win] == 1.0
    assert ref_of(SMALL, WIN_IN_ONE) and forced_win_in_two(ref_of(SMALL, WIN_IN_ONE), res.move)
    # same states, same values: rollouts are seeded by the leaf state, not by the batch
    s1 = State(CC49)
    buf = np.frombuffer(_state_bytes(s1), np.uint8)[None, :].repeat(3, 0).copy()
    legal = np.zeros((3, tables_for(CC49).max_moves), np.int32)
    counts = np.full(3, 10, np.int32)
    ev49 = RolloutEvaluator(tables_for(CC49), policy="random", seed=1)
    _, v1 = ev49.evaluate(None, None, legal, counts, states=buf)
    _, v2 = ev49.evaluate(None, None, legal[:1], counts[:1], states=buf[:1])
    assert v1[0] == v1[1] == v1[2] == v2[0]
    assert np.all(np.abs(v1) <= 1)


ROLLOUT_POLICIES = ["greedy", "random", "greedy-stochastic", "greedy-eps", "softmax"]


@pytest.mark.parametrize("policy", ROLLOUT_POLICIES)
def test_rollout_policies_decisive_exact_and_deterministic(policy):
    tables = tables_for(SMALL)
    buf = np.frombuffer(_state_bytes(state_of(SMALL, WIN_IN_ONE)), np.uint8)[None, :].repeat(2, 0).copy()
    legal = np.zeros((2, tables.max_moves), np.int32)
    counts = np.full(2, 5, np.int32)
    # a decisive playout takes the win in one, whatever the policy: exactly +1 for the mover
    ev = RolloutEvaluator(tables, policy=policy, decisive=True, rollouts=3, epsilon=0.5, temperature=2.0, seed=3)
    _, v = ev.evaluate(None, None, legal, counts, states=buf)
    assert v.tolist() == [1.0, 1.0]
    assert (ev.policy, ev.rollouts, ev.decisive) == (policy, 3, True)
    # from the start position: values in [-1, 1], averaged over `rollouts` playouts, and equal
    # for equal seeds and states
    start = np.frombuffer(_state_bytes(State(SMALL)), np.uint8)[None, :].repeat(2, 0).copy()
    kw = dict(policy=policy, rollouts=4, epsilon=0.25, temperature=1.0)
    _, a = RolloutEvaluator(tables, seed=5, **kw).evaluate(None, None, legal, counts, states=start)
    _, b = RolloutEvaluator(tables, seed=5, **kw).evaluate(None, None, legal, counts, states=start)
    assert a.tolist() == b.tolist() and a[0] == a[1]
    assert abs(a[0]) <= 1 and (a[0] * 4) == round(float(a[0]) * 4)


def test_rollout_evaluator_rejects_bad_options():
    tables = tables_for(SMALL)
    for kw in (dict(policy="minimax"), dict(epsilon=1.5), dict(temperature=0.0), dict(rollouts=0)):
        with pytest.raises(ValueError):
            RolloutEvaluator(tables, **kw)


def _state_bytes(state):
    """The engine state of a root, as select() writes it."""
    forest = SearchForest(state.tables, 1)
    forest.set_root(0, state)
    forest.start(0, 1)
    t = state.tables
    buf = np.zeros((1, forest_state_bytes()), np.uint8)
    forest.select(np.zeros((1, 1, 2, t.k), np.int8), np.zeros(1, np.int8), np.zeros((1, t.max_moves), np.int32),
                  np.zeros(1, np.int32), buf)
    return buf[0].tobytes()


def forest_state_bytes():
    from ccengine.search import STATE_BYTES

    return STATE_BYTES


# ---------------------------------------------------------------------------------------------
# Batching, noise, decisions, reuse
# ---------------------------------------------------------------------------------------------


def _positions(rules, count, plies, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        state = State(rules)
        for _ in range(plies):
            moves = state.legal_moves()
            state.play(moves[rng.integers(len(moves))])
            if state.is_terminal():
                break
        if not state.is_terminal():
            out.append(state)
    return out


@pytest.mark.parametrize("leaves", [1, 3])
def test_batch_equals_one_game_at_a_time(leaves):
    rules = CC49
    states = _positions(rules, 4, 12, seed=5)
    cfg = SearchConfig(num_simulations=120, leaves_per_game=leaves, random_opening_plies=0, explore_plies=3)
    seeds = [11, 22, 33, 44]
    ev = HashEvaluator()
    batch = BatchedSearch(rules, 4, cfg, history=2, rng=np.random.default_rng(0))
    singles = [BatchedSearch(rules, 1, cfg, history=2, rng=np.random.default_rng(99)) for _ in states]
    for g, state in enumerate(states):
        batch.set_root(g, state, rng=np.random.default_rng(seeds[g]))
        singles[g].set_root(0, state, rng=np.random.default_rng(seeds[g]))
    for _ in range(3):  # three moves each, with tree reuse, noise and temperature
        together = batch.search(ev)
        for g in range(4):
            [alone] = [r for r in singles[g].search(ev) if r is not None]
            assert together[g].move == alone.move
            assert np.array_equal(together[g].visits, alone.visits)
            assert np.array_equal(together[g].prior, alone.prior)
            batch.play(g, together[g].move)
            singles[g].play(0, alone.move)


def test_noise_touches_the_root_only():
    state = State(CC49)
    cfg = SearchConfig(num_simulations=300, random_opening_plies=0, explore_plies=0)
    out = {}
    for noise in (False, True):
        search = BatchedSearch(CC49, 1, cfg.replace(root_noise=noise), rng=np.random.default_rng(0))
        search.set_root(0, state, rng=np.random.default_rng(4))
        [res] = [r for r in search.search(HashEvaluator(with_value=False)) if r is not None]
        out[noise] = (res, search.forest)
    (plain, forest_plain), (noisy, forest_noisy) = out[False], out[True]
    root_plain, root_noisy = plain.prior, noisy.prior
    both = [tuple(int(x) for x in m) for m, a, b in zip(plain.moves, plain.visits, noisy.visits) if a > 1 and b > 1]
    assert both
    child_plain = forest_plain.node_edges(0, [both[0]])[3]
    child_noisy = forest_noisy.node_edges(0, [both[0]])[3]
    assert not np.allclose(root_plain, root_noisy)
    assert math.isclose(float(root_noisy.sum()), 1.0, rel_tol=1e-5)
    assert np.all(root_noisy >= 0.75 * root_plain - 1e-6)  # (1 - w) P + w noise with w = 0.25
    assert np.array_equal(child_plain, child_noisy)


def test_noise_is_mixed_once_per_root():
    cfg = SearchConfig(num_simulations=50, random_opening_plies=0)
    search = BatchedSearch(CC49, 1, cfg, rng=np.random.default_rng(0))
    search.set_root(0, State(CC49))
    first = search.search(UniformEvaluator())[0].prior
    second = search.search(UniformEvaluator())[0].prior  # same root again: no second helping
    assert np.array_equal(first, second)


def test_choose_move_and_temperature_schedule():
    rng = np.random.default_rng(0)
    visits = np.array([5, 90, 90, 5])
    picks = {choose_move(visits, 0.0, rng) for _ in range(50)}
    assert picks == {1, 2}
    assert {choose_move(np.array([1, 0, 0]), math.inf, rng) for _ in range(100)} == {0, 1, 2}
    assert choose_move(np.array([1000, 1200, 3]), 0.01, rng) == 1  # no overflow
    counts = np.bincount([choose_move(np.array([1, 3]), 1.0, rng) for _ in range(4000)], minlength=2)
    assert 0.70 < counts[1] / 4000 < 0.80
    cfg = SearchConfig()
    assert [cfg.temperature_at(p) for p in (0, 5, 6, 15, 16)] == [math.inf, math.inf, 2.0, 2.0, 0.01]
    with pytest.raises(ValueError):
        cfg.replace(c_puct_typo=1.0)
    with pytest.raises(ValueError):
        SearchConfig.from_dict({"num_simulations": 10, "bogus": 1})
    assert SearchConfig.from_dict(cfg.to_dict()) == cfg
    ev = cfg.for_evaluation()  # match play: the most visited move, a fresh tree every move
    assert not ev.root_noise and ev.temperature_at(0) == 0.0 and not ev.reuse_tree


def test_random_opening_moves_skip_the_search():
    cfg = SearchConfig(num_simulations=50)
    search = BatchedSearch(CC49, 2, cfg, rng=np.random.default_rng(0))
    for g in range(2):
        search.set_root(g, State(CC49))
    ev = RecordingEvaluator()
    results = search.search(ev)
    assert not ev.batches
    for res in results:
        assert not res.searched and math.isinf(res.temperature)
        assert res.move in {tuple(m) for m in res.moves.tolist()}
        assert res.policy.sum() == 0


def test_tree_reuse_keeps_the_subtree():
    cfg = SearchConfig(num_simulations=400, random_opening_plies=0, explore_plies=0, root_noise=False)
    search = BatchedSearch(CC49, 1, cfg, history=2, rng=np.random.default_rng(0))
    search.set_root(0, State(CC49))
    [res] = [r for r in search.search(HashEvaluator()) if r is not None]
    move = res.move
    moves, visits, wsum, priors, n_child = search.forest.node_edges(0, [move])
    assert n_child > 1
    assert search.play(0, move)  # kept
    assert search.forest.check_invariants(0)
    moves2, visits2, wsum2, priors2, n_root = search.forest.node_edges(0)
    assert n_root == n_child
    assert np.array_equal(moves, moves2) and np.array_equal(visits, visits2)
    assert np.array_equal(wsum, wsum2) and np.array_equal(priors, priors2)
    nodes, _, _ = search.forest.tree_size(0)
    assert nodes <= n_child  # the rest of the old tree is gone
    [res2] = [r for r in search.search(HashEvaluator()) if r is not None]
    assert res2.simulations == n_child + 400
    assert search.forest.check_invariants(0)
    # the history moved on with the root
    hist = search.forest.root_history(0)
    assert np.array_equal(hist[1], canonical_pieces(State(CC49)))
    # without reuse the tree restarts
    fresh = BatchedSearch(CC49, 1, cfg.replace(reuse_tree=False), rng=np.random.default_rng(0))
    fresh.set_root(0, State(CC49))
    fresh.search(HashEvaluator())
    assert not fresh.play(0, move)
    assert fresh.forest.tree_size(0)[0] == 1


def test_illegal_move_at_root_is_refused():
    search = BatchedSearch(SMALL, 1, EVAL, rng=np.random.default_rng(0))
    search.set_root(0, State(SMALL))
    with pytest.raises(ValueError):
        search.play(0, (0, 1))


def test_paper_rules_and_pass_action_constant():
    # the paper preset (mirror hops): a search runs and all policy indices are in range
    [res] = run_search([State(PAPER)], UniformEvaluator(), EVAL.replace(num_simulations=50), np.random.default_rng(0))
    assert res.actions.min() >= 0 and res.actions.max() < PAPER.k * PAPER.cells
    assert PASS_ACTION == -1


# ---------------------------------------------------------------------------------------------
# MCTS-Solver and the greedy opponent model
# ---------------------------------------------------------------------------------------------


def _can_force_win(ref, player, plies):
    """Whether ``player`` wins within ``plies`` plies against every defence (plain minimax)."""
    if ref.is_terminal():
        return ref.result() == (1 if player == 0 else -1)
    if plies == 0:
        return False
    outcomes = []
    for move in ref.legal_moves():
        ref.play(move)
        outcomes.append(_can_force_win(ref, player, plies - 1))
        ref.undo()
        if (ref.to_move == player) == outcomes[-1]:
            break  # the mover found a win, or the defender a move that escapes
    return any(outcomes) if ref.to_move == player else all(outcomes)


def _root_proofs(search, g=0):
    out = np.zeros(search.tables.max_moves, dtype=np.int8)
    return out[: search.forest.root_proofs(g, out)]


def test_solver_proves_the_forced_win_in_two_and_plays_it():
    cfg = EVAL.replace(num_simulations=1500, solver=True)
    search = BatchedSearch(SMALL, 1, cfg, rng=np.random.default_rng(0))
    search.set_root(0, state_of(SMALL, WIN_IN_TWO))
    res = search.search(UniformEvaluator())[0]
    proofs = _root_proofs(search)
    ref = ref_of(SMALL, WIN_IN_TWO)
    assert forced_win_in_two(ref, res.move)
    assert proofs[[tuple(m) for m in res.moves.tolist()].index(res.move)] == 1
    search.forest.check_invariants(0)
    # Every proof is sound: a proven win is a forced win, a proven loss lets the opponent force one.
    mover = ref.to_move
    for move, proof in zip(res.moves.tolist(), proofs.tolist()):
        if proof:
            ref.play(tuple(move))
            assert _can_force_win(ref, mover if proof > 0 else 1 - mover, 3), (move, proof)
            ref.undo()


def test_solver_decision_never_plays_a_proven_loss():
    # o to move and lost (x threatens a win o cannot stop): every move proven lost, o still moves.
    text = "...x/..xx/o.o./o... o 10"
    cfg = EVAL.replace(num_simulations=400, solver=True)
    [res] = run_search([state_of(SMALL, text)], UniformEvaluator(), cfg, np.random.default_rng(0))
    assert res.move in [tuple(m) for m in res.moves.tolist()]
    assert res.root_value < -0.5


def test_solver_off_reports_no_proofs():
    search = BatchedSearch(SMALL, 1, EVAL.replace(num_simulations=300), rng=np.random.default_rng(0))
    search.set_root(0, state_of(SMALL, WIN_IN_TWO))
    search.search(UniformEvaluator())
    assert not _root_proofs(search).any()


def test_greedy_opponent_model_answers_only_with_greedy_moves():
    from ccengine.players import greedy_candidates

    cfg = EVAL.replace(num_simulations=600, greedy_opponent=True)
    search = BatchedSearch(SMALL, 1, cfg, rng=np.random.default_rng(0))
    state = state_of(SMALL, "...x/..xx/o.o./o... o 10")
    search.set_root(0, state)
    res = search.search(RolloutEvaluator(tables_for(SMALL), seed=1))[0]
    searched = 0
    for move, visits in zip(res.moves.tolist(), res.visits.tolist()):
        edges = search.forest.node_edges(0, [move])
        if visits < 2 or edges is None:
            continue
        after = ref_of(SMALL, "...x/..xx/o.o./o... o 10")
        after.play(tuple(move))
        if after.is_terminal():
            continue
        replies, reply_visits = [tuple(m) for m in edges[0].tolist()], edges[1]
        allowed = set(greedy_candidates(SMALL, after.to_move, after.legal_moves()))
        assert {m for m, n in zip(replies, reply_visits) if n} <= allowed, move
        searched += 1
    assert searched >= 3
    search.forest.check_invariants(0)


class _RisingPriors(UniformEvaluator):
    """Priors that rise along the engine's move order: each node's last legal move is its
    single most likely one."""

    def evaluate(self, pieces, to_move, legal, counts):
        priors, values = super().evaluate(pieces, to_move, legal, counts)
        priors = priors * np.arange(1, legal.shape[1] + 1, dtype=np.float32)[None, :]
        return priors / np.maximum(priors.sum(axis=1, keepdims=True), 1e-9), values


@pytest.mark.parametrize("rules", [SMALL, preset("star3")], ids=["two players", "three players"])
def test_policy_opponent_answers_only_with_the_most_likely_move(rules):
    from ccengine import new_state

    cfg = EVAL.replace(num_simulations=400, policy_opponent=True)
    search = BatchedSearch(rules, 1, cfg, rng=np.random.default_rng(0))
    state = new_state(rules)
    search.set_root(0, state)
    evaluator = _RisingPriors(rules.players)
    search.search(evaluator)
    # Down the most visited line, every node where an opponent moves spent its visits on one
    # reply, its last (most likely) move; the root mover's own nodes spread theirs.
    path, opponent_nodes, own_spread = [], 0, 0
    while (edges := search.forest.node_edges(0, path)) is not None and edges[4] > 1:
        moves, visits = [tuple(m) for m in edges[0].tolist()], edges[1]
        if len(path) % rules.players:
            assert [i for i, n in enumerate(visits) if n] == [len(moves) - 1], path
            opponent_nodes += 1
        else:
            own_spread += int((visits > 0).sum() > 1)
        path.append(moves[int(np.argmax(visits))])
    assert opponent_nodes >= rules.players - 1 and own_spread >= 1
    search.forest.check_invariants(0)
    with pytest.raises(ValueError, match="cannot be combined"):
        SearchConfig(policy_opponent=True, greedy_opponent=True)
    with pytest.raises(ValueError, match="not several"):
        SearchForest(tables_for(rules), 1, policy_opponent=True, greedy_opponent=True)


def _star4_game_with_two_greedy_seats(plies: int):
    """A star4 game whose seats 1 and 2 play greedy's move and seats 0 and 3 the first legal move
    that is not one greedy could choose (so their streak never grows)."""
    from ccengine import new_state
    from ccengine._playout import greedy_pick
    from ccengine.players import greedy_candidates

    rules = preset("star4")
    state, moves = new_state(rules), []
    for ply in range(plies):
        if state.to_move in (1, 2):
            move = greedy_pick(state, ply)
        else:
            legal = state.legal_moves()
            greedy = set(greedy_candidates(rules, state.to_move, legal))
            move = next(m for m in legal if m not in greedy)
        moves.append(move)
        state.play(move)
    return rules, state, moves


def test_auto_opponent_models_only_the_players_seen_playing_greedy():
    from ccengine.players import greedy_candidates

    rules, state, _ = _star4_game_with_two_greedy_seats(4 * 5)
    cfg = EVAL.replace(num_simulations=400, auto_opponent=True)
    search = BatchedSearch(rules, 1, cfg, rng=np.random.default_rng(0))
    search.set_root(0, state)
    assert search.forest.greedy_seats(0) == [1, 2]
    search.search(_RisingPriors(rules.players))
    # Down the most visited line, seats 1 and 2 answer only with greedy's moves; seat 3 (never
    # greedy) is searched as a sound opponent by PUCT, whose visits spread beyond its single most
    # likely move (where opponent=policy would spend them all on that one).
    path, ref, greedy_nodes, spread = [], state.copy(), 0, 0
    while (edges := search.forest.node_edges(0, path)) is not None and edges[4] > 1:
        moves, visits = [tuple(m) for m in edges[0].tolist()], edges[1]
        visited = {m for m, n in zip(moves, visits) if n}
        if ref.to_move in (1, 2):
            assert visited <= set(greedy_candidates(rules, ref.to_move, ref.legal_moves())), path
            greedy_nodes += 1
        elif ref.to_move == 3:
            spread += int(len(visited) > 1)
        move = moves[int(np.argmax(visits))]
        path.append(move)
        ref.play(move)
    assert greedy_nodes >= 2 and spread >= 1
    search.forest.check_invariants(0)


def test_auto_opponent_streaks_follow_the_game_by_advance_as_by_set_root():
    # Seats 1 and 2 are modelled from their fourth greedy move on, whether the tree learns the
    # game from the root state's history or move by move.
    rules, _, moves = _star4_game_with_two_greedy_seats(4 * 6)
    from ccengine import new_state

    cfg = EVAL.replace(num_simulations=8, auto_opponent=True)
    followed = BatchedSearch(rules, 1, cfg.replace(reuse_tree=True), rng=np.random.default_rng(0))
    state = new_state(rules)
    followed.set_root(0, state)
    for ply, move in enumerate(moves, 1):
        followed.search(UniformEvaluator(rules.players))
        followed.play(0, move)
        state.play(move)
        fresh = BatchedSearch(rules, 1, cfg, rng=np.random.default_rng(0))
        fresh.set_root(0, state)
        expected = [p for p in (1, 2) if p != state.to_move and len(range(p, ply, 4)) >= 4]
        assert followed.forest.greedy_seats(0) == fresh.forest.greedy_seats(0) == expected, ply
    plain = BatchedSearch(rules, 1, EVAL, rng=np.random.default_rng(0))
    plain.set_root(0, state)
    assert plain.forest.greedy_seats(0) == []


@pytest.mark.parametrize("other", ["solver", "greedy_opponent", "policy_opponent"])
def test_auto_opponent_combines_with_no_other_opponent_model(other):
    with pytest.raises(ValueError, match="cannot be combined"):
        SearchConfig(auto_opponent=True, **{other: True})
    with pytest.raises(ValueError, match="cannot be combined|not several"):
        SearchForest(tables_for(SMALL), 1, auto_opponent=True, **{other: True})


def test_solver_and_greedy_opponent_do_not_combine():
    with pytest.raises(ValueError, match="cannot be combined"):
        SearchConfig(solver=True, greedy_opponent=True)
    with pytest.raises(ValueError, match="cannot be combined"):
        SearchForest(tables_for(SMALL), 1, solver=True, greedy_opponent=True)


def test_solver_decisions_follow_sound_proofs_on_random_positions():
    cfg = EVAL.replace(num_simulations=800, solver=True)
    proven = mixed = 0
    for state in _positions(SMALL, 40, 14, 5):
        search = BatchedSearch(SMALL, 1, cfg, rng=np.random.default_rng(0))
        search.set_root(0, state)
        res = search.search(RolloutEvaluator(tables_for(SMALL), seed=1))[0]
        proofs = _root_proofs(search)
        chosen = proofs[[tuple(m) for m in res.moves.tolist()].index(res.move)]
        if (proofs > 0).any():
            assert chosen == 1, "a proven win was there to play"
        elif (proofs < 0).any() and not (proofs < 0).all():
            assert chosen == 0, "played a proven loss with a move left that is not lost"
            mixed += 1
        ref = ReferenceState(SMALL, list(state.board), state.to_move, state.ply)
        for move, proof in zip(res.moves.tolist(), proofs.tolist()):
            if proof:
                ref.play(tuple(move))
                assert _can_force_win(ref, ref.to_move if proof < 0 else 1 - ref.to_move, 3), (move, proof)
                ref.undo()
                proven += 1
    assert proven >= 10 and mixed >= 5
