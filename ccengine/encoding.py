"""Network encodings: piece IDs, the network's input planes and the policy index of a move.

Conventions shared with the search and the learner (fixed project-wide), for any number of
players P (two on the rhombus; 2, 3, 4 or 6 on the star):

- **Seat frame.** Player p sees the board turned so that its seat is where player 0's is
  (:func:`seat_frame`; the geometry's ``turn``): the identity for player 0; with two players the
  half turn ``i -> cells - 1 - i`` for player 1 (on both boards; on the star ``(q, r) -> (-q, -r)``,
  as its cells are sorted by ``r`` then ``q`` and it is centrally symmetric); with more, the turn
  by 60-degree steps that brings p's point to the north point.
- **Piece IDs.** Each player's pieces carry IDs ``0..k-1`` that stay attached to the piece for a
  whole game: after move ``(s, e)`` the piece that was on ``s`` (whatever its ID) is on ``e``.
  A position given without history gets the *canonical* assignment (:func:`canonical_ids`):
  player 0's pieces from its home's tip, row by row towards its goal, each row left to right as
  the board is drawn (the rhombus: ``(r - c)`` descending then ``c`` ascending, the seed paper's
  code's start-position IDs; the star: ascending cell index); player p's likewise in its own seat
  frame, so a turned player p gets exactly the IDs player 0 would have (the rhombus's player 1:
  ``(c - r)`` descending then ``c`` descending).
- **Piece lists.** ``pieces[..., H, P, k]`` (any integer dtype): the cell of piece ID ``j`` of
  player ``p`` (absolute player numbers, not "own/opponent") in the state ``h`` plies ago
  (``h = 0`` is the current state); ``-1`` where that state is missing (before the game start,
  or a position given without history). They travel with ``to_move`` of the current state.
- **Policy index.** Move ``(s, e)`` -> ``id_of_piece_on(s) * cells + view(e)``, size
  ``k * cells`` (294 on 49 cells, 1210 on the star; the seed paper's "181th element" is ID 4
  (1-based) to row 5, column 6 (1-based): ``3 * 49 + 4 * 7 + 5 = 180``, 0-based). ``view`` is
  the identity for the ``paper`` encoding and the mover's seat frame for the ``general``
  encoding (``Encoding.rotate``; see :func:`encode_general` for why). The pass has no index
  (-1): it is legal only as the sole move, so the search needs no prior for it.

Plane layout is batch-first and planes-first, ``(B, C, side, side)`` float32, as PyTorch's
``Conv2d`` wants. Each cell is one element of the square matrix of the hex axes that holds the
board (the geometry's ``grid`` and ``grid_side``; :func:`plane_cells`, :func:`plane_side`): the
rhombus is that matrix (``side = n``, element ``[b, ch, r, c]`` is cell ``(r, c)``); the
121-hole star sits in the 17 x 17 axial square, cell ``(q, r)`` at element ``[r + 8, q + 8]``.
The six hex directions are six of the eight 3 x 3 neighbours on either board, so the same
convolutional network reads both. Elements off the board (the star's 168) are 0 in every plane;
the last plane is the on-board mask (all 1 on the rhombus), so the network can tell the board's
edge from an empty cell.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .rules import PASS, Rules

__all__ = [
    "ENCODINGS",
    "Encoding",
    "absolute_seats",
    "EncodingSpec",
    "PieceTracker",
    "canonical_ids",
    "encode_general",
    "encode_paper",
    "encoding_for",
    "encodings_for",
    "frame_indices",
    "general_planes",
    "index_moves",
    "mover_frame",
    "paper_planes",
    "plane_cells",
    "plane_side",
    "policy_indices",
    "policy_size",
    "seat_frame",
]

Move = tuple[int, int]

#: Integer dtype of piece lists made here (cells < 128 fit; -1 marks missing history).
PIECE_DTYPE = np.int16

#: History length of the seed paper's input (its "3 nearest past game states").
PAPER_HISTORY = 3


# ---------------------------------------------------------------------------------------------
# Seat frames and the planes' grid, as tables per board geometry
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tables:
    """A geometry's frame and grid tables (read-only). Every ``(P, cells + 1)`` table has a last
    column of -1, so that indexing it with a missing cell (-1) gives -1."""

    to_frame: np.ndarray
    """``[p, i]``: cell ``i`` in player p's seat frame."""
    from_frame: np.ndarray
    """The inverse of ``to_frame``: ``from_frame[p, to_frame[p, i]] == i``."""
    on_plane: np.ndarray
    """``[p, i]``: the plane element (``row * side + col``) of cell ``i`` in player p's frame."""
    grid: np.ndarray
    """``(cells,)``: the plane element of each cell (no frame)."""
    side: int
    """The planes' side."""
    mask: np.ndarray
    """``(side * side,)`` float32: 1 on the board's cells, 0 elsewhere."""
    rank: np.ndarray
    """``(cells,)``: each cell's place in player 0's canonical piece-ID order."""
    policy: np.ndarray
    """``(P, k * cells)`` int32: ``[p, id * cells + e] = id * cells + to_frame[p, e]``, a policy
    index as player p's frame has it."""


@lru_cache(maxsize=32)
def _tables(geometry: Any) -> _Tables:
    """The tables of a board geometry (``Rules.geometry``; cached by the geometry object)."""
    cells, seats = geometry.cells, geometry.seats
    frames = np.array([[geometry.turn(i, seats[0] - seat) for i in range(cells)] for seat in seats], dtype=np.int64)
    inverse = np.argsort(frames, axis=1)
    grid = np.array(geometry.grid, dtype=np.int64)
    missing = np.full((len(seats), 1), -1, dtype=np.int64)
    mask = np.zeros(geometry.grid_side**2, dtype=np.float32)
    mask[grid] = 1.0
    # player 0's ID order: rows from its home's tip towards its goal, each left to right as drawn
    order = sorted(range(cells), key=lambda i: (geometry.advance(0, i), geometry.drawn[i][1]))
    rank = np.empty(cells, dtype=np.int64)
    rank[order] = np.arange(cells)
    ids = np.arange(geometry.k)[:, None] * cells
    policy = (ids[None, :, :] + frames[:, None, :]).reshape(len(seats), -1).astype(np.int32)
    tables = _Tables(
        to_frame=np.hstack([frames, missing]),
        from_frame=np.hstack([inverse, missing]),
        on_plane=np.hstack([grid[frames], missing]),
        grid=grid,
        side=geometry.grid_side,
        mask=mask,
        rank=rank,
        policy=policy,
    )
    for table in (tables.to_frame, tables.from_frame, tables.on_plane, tables.grid, tables.mask, tables.rank, policy):
        table.setflags(write=False)
    return tables


def seat_frame(rules: Rules, player: int) -> np.ndarray:
    """``(cells,)`` int64, read-only: cell ``i`` as seen by ``player``, the board turned so that
    its seat is where player 0's is (two players: the identity or the half turn ``cells - 1 - i``)."""
    return _tables(rules.geometry).to_frame[player, :-1]


def absolute_seats(values: np.ndarray, to_move: np.ndarray) -> np.ndarray:
    """``(B, P)`` shares in the mover's frame (entry i: player ``(to_move + i) % P``) -> by
    absolute seat (entry p: player p)."""
    values = np.asarray(values)
    players = values.shape[1]
    seats = (np.asarray(to_move, dtype=np.int64)[:, None] + np.arange(players)) % players
    out = np.empty_like(values)
    np.put_along_axis(out, seats, values, axis=1)
    return out


def mover_frame(values: np.ndarray, to_move: np.ndarray) -> np.ndarray:
    """The inverse of :func:`absolute_seats`: ``(B, P)`` by absolute seat -> the mover's frame."""
    values = np.asarray(values)
    players = values.shape[1]
    seats = (np.asarray(to_move, dtype=np.int64)[:, None] + np.arange(players)) % players
    return np.take_along_axis(values, seats, axis=1)


def plane_side(rules: Rules) -> int:
    """Side of the square input planes: ``n`` on the rhombus, ``4t + 1`` (17) on the star."""
    return int(rules.geometry.grid_side)


def plane_cells(rules: Rules) -> np.ndarray:
    """``(cells,)`` int64, read-only: the flat element ``row * side + col`` of each cell in a plane.

    The identity on the rhombus; on the star, cell ``(q, r)`` -> ``(r + 2t) * side + (q + 2t)``.
    """
    return _tables(rules.geometry).grid


# ---------------------------------------------------------------------------------------------
# Piece IDs and policy indices
# ---------------------------------------------------------------------------------------------


def canonical_ids(rules: Rules, board: Sequence[int] | np.ndarray) -> np.ndarray:
    """Canonical piece list ``(P, k)`` of a board: ``[p, j]`` = cell of piece ID ``j`` of player p.

    Player p's pieces in player 0's ID order (its home's tip first, row by row towards its goal,
    each row left to right as drawn) of their cells in p's seat frame (:func:`seat_frame`): on the
    rhombus player 0 by ``(r - c)`` descending then ``c`` ascending and player 1 by ``(c - r)``
    descending then ``c`` descending; on the star player 0 in ascending cell index, player 1 (of
    two) in descending. Raises ``ValueError`` if a player does not have exactly k pieces.
    """
    board = np.asarray(board)
    if board.shape != (rules.cells,):
        raise ValueError(f"board has shape {board.shape}, the {rules.name} rules need ({rules.cells},)")
    tables = _tables(rules.geometry)
    out = np.empty((rules.players, rules.k), dtype=PIECE_DTYPE)
    for p in range(rules.players):
        cells = np.flatnonzero(board == p)
        if len(cells) != rules.k:
            raise ValueError(f"player {p} has {len(cells)} pieces on the board, the rules need {rules.k}")
        out[p] = cells[np.argsort(tables.rank[tables.to_frame[p, cells]])]
    return out


def _own_id_table(rules: Rules, current: np.ndarray, to_move: int) -> np.ndarray:
    """``(cells,)``: ID of the mover's piece on each cell, -1 where none."""
    table = np.full(rules.cells, -1, dtype=np.int64)
    own = np.asarray(current)[to_move]
    table[own] = np.arange(rules.k)
    return table


def policy_indices(
    rules: Rules, current: np.ndarray, moves: np.ndarray | Sequence[Move], to_move: int, rotate: bool = False
) -> np.ndarray:
    """Policy indices ``(M,)`` int64 of moves ``(M, 2)`` for the side to move.

    ``current`` is the current state's piece list ``(P, k)``; ``rotate`` is the encoding's
    perspective flag (``Encoding.rotate``): destinations in the mover's seat frame. The pass maps
    to -1. Raises ``ValueError`` for a move whose start cell holds no piece of the mover.
    """
    moves = np.asarray(moves, dtype=np.int64).reshape(-1, 2)
    s, e = moves[:, 0], moves[:, 1]
    is_pass = (s == PASS[0]) & (e == PASS[1])
    ids = _own_id_table(rules, current, to_move)[np.where(is_pass, 0, s)]
    bad = (ids < 0) & ~is_pass
    if bad.any():
        s0, e0 = moves[np.argmax(bad)]
        raise ValueError(f"move [{s0}, {e0}]: cell {s0} holds no piece of player {to_move}")
    dest = _tables(rules.geometry).to_frame[to_move if rotate else 0, e]  # player 0's frame: the identity
    return np.where(is_pass, -1, ids * rules.cells + dest)


def index_moves(
    rules: Rules, current: np.ndarray, indices: np.ndarray | Sequence[int], to_move: int, rotate: bool = False
) -> np.ndarray:
    """Inverse of :func:`policy_indices`: moves ``(M, 2)`` int64 of policy indices ``(M,)``.

    Index -1 maps back to the pass. The result is a move of the piece the index names; whether
    it is legal is the state's business.
    """
    indices = np.asarray(indices, dtype=np.int64).reshape(-1)
    if ((indices < -1) | (indices >= rules.k * rules.cells)).any():
        raise ValueError(f"policy index out of range 0..{rules.k * rules.cells - 1}")
    is_pass = indices == -1
    ids, dest = np.divmod(np.where(is_pass, 0, indices), rules.cells)
    s = np.asarray(current, dtype=np.int64)[to_move][ids]
    e = _tables(rules.geometry).from_frame[to_move if rotate else 0, dest]
    moves = np.stack([s, e], axis=1)
    moves[is_pass] = PASS
    return moves


def frame_indices(rules: Rules, indices: np.ndarray, to_move: np.ndarray, rotate: bool = True) -> np.ndarray:
    """Absolute policy indices ``id * cells + e`` -> the encoding's frame, row by row.

    ``indices`` ``(B, ...)`` non-negative ints, ``to_move`` ``(B,)``: where ``rotate``
    (``Encoding.rotate``), each destination as the row's mover sees it (:func:`seat_frame`);
    otherwise the indices unchanged. Same dtype as ``indices``.
    """
    indices = np.asarray(indices)
    if not rotate:
        return indices
    movers = np.asarray(to_move, dtype=np.intp).reshape(-1, *([1] * (indices.ndim - 1)))
    return _tables(rules.geometry).policy[movers, indices].astype(indices.dtype, copy=False)


class PieceTracker:
    """Piece IDs through one game: the current piece list, its past, and move <-> index maps.

    Built from a board (canonical IDs, no history) or the start position; ``play`` moves the
    piece on ``s`` with its ID. It checks only that ``s`` holds a piece of the side to move and
    ``e`` is empty, not full legality (that is the engine's business).
    """

    def __init__(self, rules: Rules, board: Sequence[int] | None = None, to_move: int = 0) -> None:
        self.rules = rules
        board = rules.geometry.start_board() if board is None else board
        self._current = canonical_ids(rules, board)
        self.to_move = to_move
        self._past: list[np.ndarray] = []  # piece lists of earlier states, oldest first
        self._moves: list[Move] = []
        self._rebuild_owner()

    def _rebuild_owner(self) -> None:
        # owner[i] (-1/0/1) and id_on[i] (-1 or the ID of the piece on i) mirror _current.
        self._owner = np.full(self.rules.cells, -1, dtype=np.int8)
        self._id_on = np.full(self.rules.cells, -1, dtype=np.int64)
        for p in range(self.rules.players):
            self._owner[self._current[p]] = p
            self._id_on[self._current[p]] = np.arange(self.rules.k)

    # -- reading ------------------------------------------------------------------------------

    @property
    def current(self) -> np.ndarray:
        """Current piece list ``(P, k)`` (a copy; P = players)."""
        return self._current.copy()

    @property
    def board(self) -> tuple[int, ...]:
        """The current board (``-1`` empty, else the owner), as the engines write it."""
        return tuple(int(v) for v in self._owner)

    @property
    def moves(self) -> list[Move]:
        """Moves played on this tracker, oldest first."""
        return list(self._moves)

    def id_of(self, cell: int) -> int:
        """ID of the piece on ``cell`` (of whichever owner), -1 when empty."""
        return int(self._id_on[cell])

    def piece_lists(self, history: int, out: np.ndarray | None = None) -> np.ndarray:
        """Piece lists ``(history, P, k)`` of the last ``history`` states, newest first, -1 missing.

        Writes into ``out`` (any integer dtype of that shape) when given.
        """
        shape = (history, self.rules.players, self.rules.k)
        if out is None:
            out = np.empty(shape, dtype=PIECE_DTYPE)
        elif out.shape != shape:
            raise ValueError(f"out has shape {out.shape}, needs {shape}")
        out.fill(-1)
        states = [self._current, *reversed(self._past)]
        for h, lists in enumerate(states[:history]):
            out[h] = lists
        return out

    # -- playing ------------------------------------------------------------------------------

    def play(self, move: Move) -> None:
        """Move the piece on ``s`` (keeping its ID) to ``e``; ``PASS`` only changes the side."""
        s, e = int(move[0]), int(move[1])
        nxt = self._current.copy()
        if (s, e) != PASS:
            if not (0 <= s < self.rules.cells and 0 <= e < self.rules.cells):
                raise ValueError(f"move [{s}, {e}] is off the board")
            if self._owner[s] != self.to_move:
                raise ValueError(f"move [{s}, {e}]: cell {s} holds no piece of player {self.to_move}")
            if self._owner[e] != -1:
                raise ValueError(f"move [{s}, {e}]: cell {e} is occupied")
            nxt[self.to_move, self._id_on[s]] = e
        self._past.append(self._current)
        self._moves.append((s, e))
        self._current = nxt
        self.to_move = (self.to_move + 1) % self.rules.players
        self._rebuild_owner()

    def undo(self) -> None:
        """Take back the last move played on this tracker."""
        if not self._past:
            raise ValueError("no move to undo")
        self._current = self._past.pop()
        self._moves.pop()
        self.to_move = (self.to_move - 1) % self.rules.players
        self._rebuild_owner()

    # -- policy indices -----------------------------------------------------------------------

    def move_index(self, move: Move, rotate: bool = False) -> int:
        """Policy index of one move of the side to move (-1 for the pass)."""
        return int(policy_indices(self.rules, self._current, [move], self.to_move, rotate)[0])

    def move_indices(self, moves: np.ndarray | Sequence[Move], rotate: bool = False) -> np.ndarray:
        """Policy indices ``(M,)`` int64 of moves ``(M, 2)`` of the side to move."""
        return policy_indices(self.rules, self._current, moves, self.to_move, rotate)

    def index_move(self, index: int, rotate: bool = False) -> Move:
        """The move a policy index names in the current state."""
        s, e = index_moves(self.rules, self._current, [index], self.to_move, rotate)[0]
        return int(s), int(e)


# ---------------------------------------------------------------------------------------------
# Encoders
# ---------------------------------------------------------------------------------------------


def paper_planes(rules: Rules, history: int = PAPER_HISTORY) -> int:
    """Input planes of the ``paper`` encoding: two ID matrices per state plus the side plane."""
    return 2 * history + 1


def general_planes(rules: Rules, history: int = 3) -> int:
    """Input planes of the ``general`` encoding: one per player and state, k ID planes, side and
    the on-board mask."""
    return rules.players * history + rules.k + 2


def _batch(rules: Rules, pieces: np.ndarray, to_move: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    pieces = np.asarray(pieces)
    players = rules.players
    if pieces.ndim != 4 or pieces.shape[2:] != (players, rules.k):
        raise ValueError(f"pieces has shape {pieces.shape}, needs (B, H, {players}, {rules.k})")
    tm = np.broadcast_to(np.asarray(to_move, dtype=np.int64), (pieces.shape[0],))
    if ((tm < 0) | (tm >= players)).any():
        raise ValueError(f"to_move must be a player, 0..{players - 1}")
    return pieces.astype(np.int64, copy=False), tm


def _buffer(out: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    if out is None:
        return np.zeros(shape, dtype=np.float32)
    if out.shape != shape or out.dtype != np.float32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float32 array of shape {shape}, got {out.dtype} {out.shape}")
    out.fill(0.0)
    return out


def _scatter(flat: np.ndarray, plane: np.ndarray | int, cells: np.ndarray, values: np.ndarray | float) -> None:
    """``flat[b, plane(j), cells[b, j]] = values(j)`` wherever ``cells[b, j] >= 0``."""
    b, j = np.nonzero(cells >= 0)
    plane_j = np.broadcast_to(plane, cells.shape[1:])[j]
    value_j = np.broadcast_to(values, cells.shape[1:])[j]
    flat[b, plane_j, cells[b, j]] = value_j


def encode_paper(
    rules: Rules,
    pieces: np.ndarray,
    to_move: np.ndarray | int,
    out: np.ndarray | None = None,
    history: int = PAPER_HISTORY,
) -> np.ndarray:
    """The seed paper's input (section 3.3 "Network Input"), for the paper-reproduction network.

    ``pieces`` ``(B, H, 2, k)`` int, ``to_move`` ``(B,)`` or scalar; returns (or fills ``out``)
    float32 ``(B, 2 * history + 1, n, n)``, 7 x 7 x 7 per position on the seed board:

    - plane ``2h``: ID matrix of the side to move's pieces ``h`` plies ago (value ``ID + 1``, i.e.
      1..k, 0 elsewhere); plane ``2h + 1``: the same for the opponent. "Side to move" is the
      current one for every ``h``, as in the paper's code (``to_model_input`` keeps
      ``cur_player`` fixed while it undoes the last moves on the ID layers).
    - missing states (``h`` before the game start, or positions given without history) are zero.
    - last plane: all 1 when player 1 (the paper's "Player 2") is to move, all 0 otherwise.

    Absolute coordinates: the paper's code never rotates or flips the board for its Player 2,
    and its policy index uses the absolute destination, so ``Encoding.rotate`` is False.
    Layout: ours is planes-first, ``ours[b, ch, r, c] == paper[r, c, ch]`` (the paper's Keras
    code stores ``(n, n, C)``); the plane order is the paper's. The seed paper's board only: the
    two-player rhombus.
    """
    _check_board(ENCODINGS["paper"], rules)
    pieces, tm = _batch(rules, pieces, to_move)
    bsz, cells, k = pieces.shape[0], rules.cells, rules.k
    n_planes = paper_planes(rules, history)
    out = _buffer(out, (bsz, n_planes, rules.n, rules.n))
    flat = out.reshape(bsz, n_planes, cells)
    rows = np.arange(bsz)
    ids = np.arange(1, k + 1, dtype=np.float32)
    for h in range(min(history, pieces.shape[1])):
        _scatter(flat, 2 * h, pieces[rows, h, tm], ids)
        _scatter(flat, 2 * h + 1, pieces[rows, h, 1 - tm], ids)
    flat[:, -1, :] = (tm == 1)[:, None]
    return out


def encode_general(
    rules: Rules,
    pieces: np.ndarray,
    to_move: np.ndarray | int,
    out: np.ndarray | None = None,
    history: int = 3,
) -> np.ndarray:
    """Input of hopzero's own network, for any preset (any n, k, the star, any number of players).

    ``pieces`` ``(B, H, P, k)`` int, ``to_move`` ``(B,)`` or scalar; returns (or fills ``out``)
    float32 ``(B, P * history + k + 2, side, side)`` (14 planes on cc49, 18 on cc81 and on star2,
    21 on star3; ``side`` is :func:`plane_side`, 17 on the star, see the module docstring):

    - plane ``P * h + i``, ``h < history``, ``i < P``: occupancy (0/1) of the pieces of player
      ``(to_move + i) % P`` ``h`` plies ago: the mover first (``i = 0``), then the others in the
      order they move in; zero where that state is missing.
    - planes ``P * history + j``, ``j < k``: one-hot cell of the side to move's piece ID ``j``
      now. The policy is indexed by piece ID, so the network must see which piece has which ID;
      occupancy alone cannot tell it once pieces have changed places.
    - plane ``P * history + k``: ``to_move / (P - 1)`` on the board (two players: 1 when player
      1 is to move; who moved first matters for the ply limit and tempo, and who moves in the
      round near the end: the star's round is completed before the game ends); last plane: the
      on-board mask (marks the board inside the convolutions' zero padding, and on the star the
      board's edge inside the 17 x 17 square). Elements off the board are 0 in every plane.

    Perspective: every plane is in the mover's seat frame (:func:`seat_frame`), and so is the
    destination in the policy index (``Encoding.rotate``): with two players, player 1 sees the
    board turned by 180 degrees; with more, each mover's point is turned to the north. Each side
    to move then sees itself starting in the same corner (bottom-left on the rhombus, the north
    point on the star) and racing to the opposite one: one pattern to learn instead of P, the
    usual AlphaZero choice. The home-preserving reflection maps the mover's seat to itself, so
    symmetry augmentation stays a reflection of the planes (``ccengine.symmetry``).
    """
    pieces, tm = _batch(rules, pieces, to_move)
    bsz, k, players = pieces.shape[0], rules.k, rules.players
    tables = _tables(rules.geometry)
    n_planes = general_planes(rules, history)
    out = _buffer(out, (bsz, n_planes, tables.side, tables.side))
    flat = out.reshape(bsz, n_planes, tables.side * tables.side)
    rows = np.arange(bsz)
    on_plane = tables.on_plane[tm]  # (B, cells + 1): each row's cell -> plane element in its mover's frame

    def placed(cells: np.ndarray) -> np.ndarray:
        return on_plane[rows[:, None], cells]  # a missing cell (-1) reads the last column, -1

    for h in range(min(history, pieces.shape[1])):
        for i in range(players):
            _scatter(flat, players * h + i, placed(pieces[rows, h, (tm + i) % players]), 1.0)
    _scatter(flat, players * history + np.arange(k), placed(pieces[rows, 0, tm]), 1.0)
    flat[:, players * history + k, :] = (tm / (players - 1))[:, None] * tables.mask
    flat[:, players * history + k + 1, :] = tables.mask
    return out


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncodingSpec:
    """One registered encoding, not yet bound to a rules object."""

    name: str
    in_planes: Callable[[Rules, int], int]
    """Input planes for ``(rules, history)``."""
    encode: Callable[..., np.ndarray]
    """``encode(rules, pieces, to_move, out=None, history=...)``."""
    rotate: bool
    """Whether the mover's view (planes and policy destinations) is in its seat frame."""
    default_history: int
    used_by: str
    boards: tuple[str, ...]
    """The boards (``Rules.board``) it encodes."""


ENCODINGS: dict[str, EncodingSpec] = {
    "paper": EncodingSpec(
        "paper", paper_planes, encode_paper, rotate=False, default_history=PAPER_HISTORY,
        used_by="the seed paper's network (reproduction of Liu et al. 2019, preset 'paper')",
        boards=("rhombus",),
    ),
    "general": EncodingSpec(
        "general", general_planes, encode_general, rotate=True, default_history=3,
        used_by="hopzero's own network, every preset", boards=("rhombus", "star"),
    ),
}


def encodings_for(rules: Rules) -> tuple[str, ...]:
    """The names of the encodings of ``rules``'s board, in registry order (the seed paper's first
    where it applies: the default of an untrained benchmark network)."""
    return tuple(name for name, spec in ENCODINGS.items() if rules.board in spec.boards)


def _check_board(spec: EncodingSpec, rules: Rules) -> None:
    if rules.board not in spec.boards:
        names = encodings_for(rules)
        raise ValueError(
            f"the {spec.name} encoding is for the {' and '.join(spec.boards)} only ({spec.used_by}); "
            f"the {rules.name} board ({rules.board}) has the {', '.join(names)} "
            f"encoding{'s' if len(names) > 1 else ''} only"
        )


def policy_size(rules: Rules) -> int:
    """Length of the policy vector: ``k * cells`` (294 on the seed board, 1210 on the star)."""
    return rules.k * rules.cells


@dataclass(frozen=True)
class Encoding:
    """An encoding bound to one rules object: sizes, the encoder and the move <-> index maps."""

    spec: EncodingSpec
    rules: Rules
    history: int

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def rotate(self) -> bool:
        """Whether the mover's view (planes and policy destinations) is in its seat frame."""
        return self.spec.rotate

    @property
    def in_planes(self) -> int:
        return self.spec.in_planes(self.rules, self.history)

    @property
    def policy_size(self) -> int:
        return policy_size(self.rules)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """Shape of one encoded position, ``(C, side, side)`` (``side``: :func:`plane_side`)."""
        side = plane_side(self.rules)
        return (self.in_planes, side, side)

    def encode(self, pieces: np.ndarray, to_move: np.ndarray | int, out: np.ndarray | None = None) -> np.ndarray:
        """Planes ``(B, C, side, side)`` float32 of piece lists ``(B, H, P, k)`` and ``to_move`` ``(B,)``."""
        return self.spec.encode(self.rules, pieces, to_move, out=out, history=self.history)

    def encode_one(self, pieces: np.ndarray, to_move: int) -> np.ndarray:
        """Planes ``(C, side, side)`` of one position's piece lists ``(H, P, k)``."""
        return self.encode(np.asarray(pieces)[None], to_move)[0]

    def encode_tracker(self, tracker: PieceTracker) -> np.ndarray:
        """Planes ``(C, side, side)`` of a tracker's current state and its history."""
        return self.encode_one(tracker.piece_lists(self.history), tracker.to_move)

    def move_indices(self, current: np.ndarray, moves: np.ndarray | Sequence[Move], to_move: int) -> np.ndarray:
        """Policy indices ``(M,)`` of moves ``(M, 2)``, given the current piece list ``(P, k)``."""
        return policy_indices(self.rules, current, moves, to_move, self.rotate)

    def index_moves(self, current: np.ndarray, indices: np.ndarray | Sequence[int], to_move: int) -> np.ndarray:
        """Moves ``(M, 2)`` named by policy indices ``(M,)``, given the current piece list."""
        return index_moves(self.rules, current, indices, to_move, self.rotate)


def encoding_for(rules: Rules, name: str = "general", history: int | None = None) -> Encoding:
    """The encoding ``name`` (``paper`` or ``general``; on the star ``general`` only) bound to ``rules``."""
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; valid: {', '.join(ENCODINGS)}")
    spec = ENCODINGS[name]
    _check_board(spec, rules)
    history = spec.default_history if history is None else history
    if history < 1:
        raise ValueError(f"history={history} must be at least 1")
    return Encoding(spec, rules, history)
