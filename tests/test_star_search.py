"""The batched tree search on the 121-hole star (preset ``star2``): canonical piece IDs, whole
searches, and the draw by repetition inside the tree (docs/RULES.md "Repetition history")."""

from __future__ import annotations

import numpy as np
import pytest

from ccengine._core import State
from ccengine._playout import RolloutEvaluator
from ccengine._search import SearchForest, canonical_pieces
from ccengine.rules import preset
from ccengine.search import BatchedSearch, SearchConfig

STAR2 = preset("star2")
GEO = STAR2.geometry


class ConstantValueEvaluator:
    """Uniform priors and the value +0.5 for the player to move at every leaf: a non-terminal
    child then always backs up -0.5 to its mover, a terminal draw exactly 0."""

    def evaluate(self, pieces, to_move, legal, counts):
        priors = np.zeros(legal.shape, np.float32)
        for i, c in enumerate(counts):
            priors[i, :c] = 1.0 / max(int(c), 1)
        return priors, np.full(len(counts), 0.5, np.float32)


def _random_state(seed: int, plies: int) -> State:
    rng = np.random.default_rng(seed)
    state = State(STAR2)
    for _ in range(plies):
        if state.is_terminal():
            break
        moves = state.legal_moves()
        state.play(moves[rng.integers(len(moves))])
    return state


def test_canonical_ids_on_the_star_are_cell_order_and_its_rotation():
    for seed in range(20):
        state = _random_state(seed, 2 * seed)
        ids = canonical_pieces(state)
        board = np.asarray(state.board)
        assert ids[0].tolist() == sorted(np.flatnonzero(board == 0).tolist())
        assert ids[1].tolist() == sorted(np.flatnonzero(board == 1).tolist(), reverse=True)
    # the start: player 1's IDs are player 0's under the 180-degree rotation i -> 120 - i
    start = canonical_pieces(State(STAR2))
    assert (120 - start[1]).tolist() == start[0].tolist()


def _shuffle_moves() -> tuple[tuple[int, int], tuple[int, int]]:
    """A step of player 0 and one of player 1 out of the start that can both be taken back."""
    state = State(STAR2)
    a = next(m for m in state.legal_moves() if GEO.forward_distance(0, m) == 1 and m[1] in GEO.step[m[0]])
    state.play(a)
    b = next(m for m in state.legal_moves() if GEO.forward_distance(1, m) == 1 and m[1] in GEO.step[m[0]])
    return a, b


def _edge(forest: SearchForest, move, path=()):
    moves, visits, wsum, _, _ = forest.node_edges(0, path)
    i = [tuple(m) for m in moves.tolist()].index(tuple(move))
    return int(visits[i]), float(wsum[i]), moves, visits, wsum


@pytest.mark.parametrize("how", ["history", "advance-reuse", "advance-fresh"])
def test_the_third_occurrence_is_a_terminal_draw_in_the_tree(how):
    a, b = _shuffle_moves()
    back_a, back_b = a[::-1], b[::-1]
    line = [a, b, back_a, back_b, a, b, back_a]   # after one more back_b: the start, 3rd time
    state = State(STAR2)
    forest = SearchForest(state.tables, 1, c_puct=1.0)
    evaluator = ConstantValueEvaluator()
    if how == "history":
        for move in line:
            state.play(move)
        forest.set_root(0, state, seed=1)
    else:
        forest.set_root(0, state, seed=1)
        for move in line:
            if how == "advance-reuse":      # build a tree first, so advance keeps subtrees
                _run(forest, evaluator, 30)
            forest.advance(0, *move, reuse=how == "advance-reuse")
            state.play(move)
    _run(forest, evaluator, 400)
    visits, wsum, moves, all_visits, all_wsum = _edge(forest, back_b)
    assert visits > 0 and wsum == 0.0                      # the repetition draw: exact 0 each visit
    others = [i for i, m in enumerate(moves.tolist()) if tuple(m) != back_b and all_visits[i] > 0]
    assert others and all(all_wsum[i] < 0 for i in others)  # ordinary children back up -0.5
    forest.check_invariants(0)
    # the engine agrees: that move ends the real game by repetition
    state.play(back_b)
    assert state.is_terminal() and state.end_reason == "repetition" and state.result() == 0


def test_a_repetition_on_the_tree_path_alone_counts():
    # From the start (seen once, no history), the line a, b, back_a, back_b reaches it a 2nd time
    # 4 plies deep (no draw) and a 3rd time 8 plies deep: that node is a terminal draw.
    a, b = _shuffle_moves()
    cycle = [a, b, a[::-1], b[::-1]]
    state = State(STAR2)
    forest = SearchForest(state.tables, 1, c_puct=1.0)
    forest.set_root(0, state, seed=0)
    _run(forest, SteeringEvaluator(cycle), 40)
    path = cycle + cycle[:3]
    visits, wsum, *_ = _edge(forest, cycle[3], path)
    assert visits >= 1 and wsum == 0.0
    # the 2nd occurrence was expanded (play goes on there), the 3rd is terminal (no edges)
    assert forest.node_edges(0, cycle) is not None
    assert forest.node_edges(0, cycle + cycle) is None


class SteeringEvaluator(ConstantValueEvaluator):
    """Priors that put almost all mass on the next move of a cycle of moves, so the search walks
    down it; the value is +0.5 for the player to move, as in the parent class."""

    def __init__(self, cycle):
        state = State(STAR2)
        self.next_move = {}
        for move in cycle:
            self.next_move[state.board] = move
            state.play(move)

    def evaluate(self, pieces, to_move, legal, counts):
        priors, values = super().evaluate(pieces, to_move, legal, counts)
        for i, c in enumerate(counts):
            board = [-1] * STAR2.cells
            for p in (0, 1):
                for cell in pieces[i, 0, p]:
                    board[cell] = p
            move = self.next_move.get(tuple(board))
            if move is not None:
                mover = int(to_move[i])
                piece = int(np.flatnonzero(pieces[i, 0, mover] == move[0])[0])
                priors[i, :c] = np.where(legal[i, :c] == piece * STAR2.cells + move[1], 1.0, 1e-4)
        return priors, values


def _run(forest: SearchForest, evaluator, simulations: int) -> None:
    """Drive one game's search directly: select, evaluate, expand and back up."""
    k, m = forest.k, forest.max_moves
    rows = forest.num_games * forest.leaves_per_game
    pieces = np.full((rows, forest.history, 2, k), -1, np.int8)
    to_move = np.zeros(rows, np.int8)
    legal = np.zeros((rows, m), np.int32)
    counts = np.zeros(rows, np.int32)
    forest.start(0, simulations)
    while forest.pending_simulations():
        n = forest.select(pieces, to_move, legal, counts)
        if n:
            priors, values = evaluator.evaluate(pieces[:n], to_move[:n], legal[:n], counts[:n])
            full = np.zeros((n, m), np.float32)
            full[:, : priors.shape[1]] = priors
            forest.expand_and_backup(full, np.asarray(values, np.float32))


@pytest.mark.parametrize("leaves", [1, 4])
def test_whole_searches_on_the_star_stay_consistent(leaves):
    config = SearchConfig(num_simulations=64, leaves_per_game=leaves, c_puct=1.0)
    states = [_random_state(seed, 20 + 7 * seed) for seed in range(4)]
    search = BatchedSearch(STAR2, len(states), config, rng=np.random.default_rng(0))
    for g, state in enumerate(states):
        search.set_root(g, state)
    results = search.search(RolloutEvaluator(search.tables, policy="greedy", seed=3))
    for g, (state, result) in enumerate(zip(states, results)):
        assert result is not None and result.move in state.legal_moves()
        search.forest.check_invariants(g)
