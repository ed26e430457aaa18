"""Checks shared by the actor tests: replay a game record move by move on the engine."""

from __future__ import annotations

import numpy as np

from ccengine._core import State
from ccengine.encoding import index_moves
from ccengine.rules import PASS, Rules
from learner.records import GameRecord


def record_states(rec: GameRecord) -> tuple[np.ndarray, int]:
    """Every piece list the record holds, oldest first, and how many of them are history."""
    h0, players = rec.start_pieces.shape[0], rec.pieces.shape[1]
    present = ~(rec.start_pieces < 0).reshape(h0, players * rec.k).any(axis=1)
    history = rec.start_pieces[: int(present.sum())][::-1]
    return np.concatenate([history, rec.pieces]).astype(np.int64), len(history)


def board_of(rules: Rules, lists: np.ndarray) -> list[int]:
    board = [-1] * rules.cells
    for p in range(rules.players):
        for c in lists[p]:
            board[int(c)] = p
    return board


def move_between(before: np.ndarray, after: np.ndarray, mover: int) -> tuple[int, int]:
    """The move of ``mover`` that turns piece list ``before`` into ``after`` (IDs kept)."""
    others = [p for p in range(len(before)) if p != mover]
    assert np.array_equal(before[others], after[others]), "a side not to move changed"
    changed = np.flatnonzero(before[mover] != after[mover])
    assert len(changed) <= 1, "more than one piece moved"
    if len(changed) == 0:
        return PASS
    j = int(changed[0])
    return int(before[mover][j]), int(after[mover][j])


def replay(rules: Rules, rec: GameRecord, *, first_ply_is_start: bool = True) -> State:
    """Replay the record on the engine from its oldest state: every state follows from the one
    before by a legal move, every policy target names only legal moves and sums to 1, the side to
    move alternates. Returns the engine state at the last recorded position (not terminal)."""
    states, h = record_states(rec)
    state = State(rules, board_of(rules, states[0]), 0, 0)
    if first_ply_is_start:
        assert tuple(state.board) == rules.geometry.start_board() or h == 0
    for i in range(len(states)):
        assert not state.is_terminal(), f"state {i} is already over"
        legal = set(state.legal_moves())
        t = i - h
        if t >= 0:
            assert int(rec.to_move[t]) == state.to_move
            idx, prob = rec.policy(t)
            if len(idx):
                assert abs(float(prob.astype(np.float64).sum()) - 1.0) < 2e-3
                moves = index_moves(rules, states[i], idx.astype(np.int64), state.to_move)
                named = {(int(s), int(e)) for s, e in moves}
                assert named <= legal, f"position {t}: target names an illegal move"
                assert len(named) == len(idx)
            else:  # no target: a pass, or a position the record does not keep (trains nothing)
                assert legal == {PASS} or (rec.keep is not None and not rec.keep[t])
        if i + 1 < len(states):
            move = move_between(states[i], states[i + 1], state.to_move)
            assert move in legal, f"state {i + 1} does not follow by a legal move"
            state.play(move)
    return state


def final_move_exists(state: State, scores) -> bool:
    """Whether some legal move from ``state`` ends the game with the result vector ``scores``."""
    for move in state.legal_moves():
        state.play(move)
        try:
            if state.is_terminal() and np.allclose(state.scores(), scores):
                return True
        finally:
            state.undo()
    return False
