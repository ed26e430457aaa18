"""Auxiliary training targets fitted to Chinese Checkers, computed from what a game record holds.

KataGo (Wu 2019, "Accelerating Self-Play Learning in Go", "Auxiliary Ownership and Score
Targets") trains its trunk on two more predictions of how the game ends: who owns each point,
and the final score. Their counterparts in a race game:

- **ownership**: the final occupant of each *goal* cell (every seat's goal): empty, or the seat
  whose piece stands there, seen from the position's mover (class 0 empty, 1 + i the seat i
  after the mover). The head (``NetConfig.ownership_head``) gives logits for every input element;
  only the goal cells carry a target (the rest is ``-1``, ignored).
- **score**: each seat's final *progress*, the rows its pieces advanced over the rows they can
  advance (0 at the start, 1 with the goal filled; the two-player margin is the difference), in
  the mover's frame, and the share of the move limit still to play from the position
  (``plies left / max_plies``). The head (``NetConfig.score_head``) gives ``P + 1`` logits for them.

A record ends at the last position *before* the game ended; the move that ended it is not
recorded. :func:`final_board` replays it when the engine can tell it: among the legal moves of
the last position, those that end the game with the record's result. Where they disagree on a
cell (a game ended by the move limit: any move ends it) that cell keeps its occupant of the last
position, as does the whole board when no move fits (a resignation, or an end by repetition or
by the progress limit, whose counts a single position does not hold). No record field is added.

:class:`AuxTargetStore` keeps these targets beside the replay window's positions (same ring
slots) and builds each batch's targets in the network's frame, reflected with the sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ccengine.encoding import Encoding, mover_frame, plane_cells, plane_side, seat_frame
from ccengine.engines import new_state
from ccengine.notation import Position
from ccengine.rules import Rules
from ccengine.symmetry import reflect_table, seat_reflection

from .records import GameRecord

__all__ = ["AuxBatch", "AuxTargetStore", "RecordTargets", "aux_store", "final_board", "record_targets", "seat_progress"]


@dataclass(frozen=True)
class RecordTargets:
    """The auxiliary targets of one record, before they are put in any position's frame."""

    final_board: np.ndarray
    """int8 ``[cells]``: who holds each cell when the game ends (-1 empty), :func:`final_board`."""
    progress: np.ndarray
    """float32 ``[P]``: each absolute seat's final progress in [0, 1], :func:`seat_progress`."""
    plies_left: np.ndarray
    """int32 ``[T]``: plies from each recorded position to the end of the game (at least 1)."""


@dataclass(frozen=True)
class AuxBatch:
    """A batch's auxiliary targets (``B`` positions, in the network's frame, reflected with the
    planes); None for a head the network does not have."""

    ownership: np.ndarray | None
    """int64 ``[B, side * side]``: class per input element (0 empty, 1 + i the seat i after the
    mover) on the goal cells, -1 elsewhere (no target)."""
    score: np.ndarray | None
    """float32 ``[B, P + 1]``: each seat's final progress (mover first), then plies left over
    ``max_plies``; all in [0, 1]."""


def _board(rules: Rules, pieces: np.ndarray) -> np.ndarray:
    board = np.full(rules.cells, -1, dtype=np.int8)
    for p in range(rules.players):
        board[pieces[p]] = p
    return board


def _ends_as_recorded(state: object, rec: GameRecord) -> bool:
    if not state.is_terminal():  # type: ignore[attr-defined]
        return False
    return bool(np.allclose(state.scores(), rec.scores, atol=1e-3))  # type: ignore[attr-defined]


def final_board(rules: Rules, rec: GameRecord) -> np.ndarray:
    """int8 ``[cells]``: the board when the game of ``rec`` ended (-1 empty, else the seat), as
    far as the record tells it (see the module docstring)."""
    last = _board(rules, rec.pieces[-1])
    state = new_state(rules, Position(tuple(int(c) for c in last), int(rec.to_move[-1]), rec.plies - 1))
    if state.is_terminal():
        return last
    endings = []
    for move in state.legal_moves():
        state.play(move)
        if _ends_as_recorded(state, rec):
            endings.append(np.asarray(state.board, dtype=np.int8))
        state.undo()
    if not endings:
        return last
    stack = np.stack(endings)
    agreed = (stack == stack[0]).all(axis=0)
    return np.where(agreed, stack[0], last).astype(np.int8)


def seat_progress(rules: Rules, board: np.ndarray) -> np.ndarray:
    """float32 ``[P]``: for each seat, the rows its pieces on ``board`` have advanced beyond its
    home, over the rows they advance to fill its goal (0 at the start, 1 with the goal full)."""
    geometry = rules.geometry
    board = np.asarray(board)
    out = np.zeros(rules.players, dtype=np.float32)
    for p in range(rules.players):
        advance = np.asarray(geometry.advances[p], dtype=np.float64)
        start = advance[_home(rules, p)].sum()
        full = advance[sorted(geometry.goal(p))].sum()
        now = advance[board == p].sum()
        out[p] = np.clip((now - start) / (full - start), 0.0, 1.0)
    return out


def _home(rules: Rules, player: int) -> np.ndarray:
    """The cells ``player`` starts on."""
    start = np.asarray(rules.geometry.start_board())
    return np.flatnonzero(start == player)


def record_targets(rules: Rules, rec: GameRecord) -> RecordTargets:
    """The auxiliary targets of ``rec`` (a record of ``rules``)."""
    board = final_board(rules, rec)
    t = rec.num_positions
    return RecordTargets(final_board=board, progress=seat_progress(rules, board),
                         plies_left=(t - np.arange(t)).astype(np.int32))


def aux_store(net: Any, encoding: Encoding, window_positions: int) -> AuxTargetStore | None:
    """The store a replay window of ``window_positions`` needs for the network ``net`` (a
    ``learner.model.NetConfig``): None when it has no auxiliary head."""
    if not (net.ownership_head or net.score_head):
        return None
    return AuxTargetStore(encoding, window_positions, ownership=net.ownership_head, score=net.score_head)


class AuxTargetStore:
    """The auxiliary targets of a replay window's positions, slot for slot (its ring arrays):
    ``insert`` when the window stores positions of a record, ``sample`` when it draws a batch.

    ``ownership``/``score``: which targets to keep (those of the network's heads).
    """

    def __init__(self, encoding: Encoding, window_positions: int, *, ownership: bool, score: bool) -> None:
        rules = encoding.rules
        self.rules = rules
        self.ownership = ownership
        self.score = score
        players = rules.players
        self._final = np.full((window_positions, rules.cells), -1, dtype=np.int8) if ownership else None
        self._progress = np.zeros((window_positions, players), dtype=np.float32)
        self._left = np.zeros(window_positions, dtype=np.float32)
        # Where each absolute cell lies in each mover's frame (the encoding's turn or rotation).
        ident = np.arange(rules.cells, dtype=np.int64)
        self._frames = (np.stack([seat_frame(rules, p) for p in range(players)]) if encoding.rotate
                        else np.broadcast_to(ident, (players, rules.cells)))
        self._goals = np.array(sorted(set().union(*(rules.geometry.goal(p) for p in range(players)))), dtype=np.int64)
        self._side = plane_side(rules)
        perm = seat_reflection(rules)
        # A reflected sample's seat i (after the mover) was seat perm[i]: class 1 + s becomes 1 + inverse[s].
        self._perm = perm
        self._inverse = np.argsort(perm) if perm is not None else np.arange(players)

    def insert(self, slots: np.ndarray, rec: GameRecord, rows: np.ndarray) -> None:
        """Store the targets of the record's positions ``rows`` in the window's ``slots``."""
        targets = record_targets(self.rules, rec)
        if self._final is not None:
            self._final[slots] = targets.final_board
        self._progress[slots] = targets.progress
        self._left[slots] = targets.plies_left[rows] / self.rules.max_plies

    def sample(self, slots: np.ndarray, to_move: np.ndarray, reflected: np.ndarray) -> AuxBatch:
        """The targets of the positions in ``slots`` (movers ``to_move``), reflected where
        ``reflected`` (as the window reflected their planes)."""
        tm = np.asarray(to_move, dtype=np.int64)
        flip = np.asarray(reflected, dtype=bool)
        players = self.rules.players
        ownership = score = None
        if self._final is not None:
            occupant = self._final[slots][:, self._goals].astype(np.int64)           # [B, G]
            seat = (occupant - tm[:, None]) % players
            seat = np.where(flip[:, None], self._inverse[seat], seat)
            classes = np.where(occupant < 0, 0, 1 + seat)
            cells = self._frames[tm][:, self._goals]                                  # [B, G] in the mover's frame
            cells = np.where(flip[:, None], reflect_table(self.rules)[cells], cells)
            ownership = np.full((len(tm), self._side * self._side), -1, dtype=np.int64)
            np.put_along_axis(ownership, plane_cells(self.rules)[cells], classes, axis=1)
        if self.score:
            progress = mover_frame(self._progress[slots], tm)
            if self._perm is not None:
                progress = np.where(flip[:, None], progress[:, self._perm], progress)
            score = np.concatenate([progress, self._left[slots][:, None]], axis=1).astype(np.float32)
        return AuxBatch(ownership=ownership, score=score)
