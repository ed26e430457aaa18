"""Network encodings: piece IDs, the network's input planes and the policy index of a move.

Conventions shared with the search and the learner (fixed project-wide):

- **Piece IDs.** Each player's pieces carry IDs ``0..k-1`` that stay attached to the piece for a
  whole game: after move ``(s, e)`` the piece that was on ``s`` (whatever its ID) is on ``e``.
  A position given without history gets the *canonical* assignment (:func:`canonical_ids`):
  player 0's pieces sorted by ``(r - c)`` descending then ``c`` ascending, player 1's by
  ``(c - r)`` descending then ``c`` descending. This reproduces the start-position IDs of the seed
  paper's code, and the two orders are each other's image under the 180-degree rotation, so a
  rotated player 1 gets exactly the IDs player 0 would have.
- **Piece lists.** ``pieces[..., H, 2, k]`` (any integer dtype): the cell of piece ID ``j`` of
  player ``p`` (absolute player numbers, not "own/opponent") in the state ``h`` plies ago
  (``h = 0`` is the current state); ``-1`` where that state is missing (before the game start,
  or a position given without history). They travel with ``to_move`` of the current state.
- **Policy index.** Move ``(s, e)`` -> ``id_of_piece_on(s) * cells + view(e)``, size
  ``k * cells`` (294 on 49 cells; the seed paper's "181th element" is ID 4 (1-based) to row 5,
  column 6 (1-based): ``3 * 49 + 4 * 7 + 5 = 180``, 0-based). ``view`` is the identity for the
  ``paper`` encoding and the 180-degree rotation ``e -> cells - 1 - e`` when player 1 is to move
  for the ``general`` encoding (see :func:`encode_general` for why). The pass has no index (-1):
  it is legal only as the sole move, so the search needs no prior for it.

Plane layout is batch-first and planes-first, ``(B, C, side, side)`` float32, as PyTorch's
``Conv2d`` wants. On the rhombus ``side = n`` and element ``[b, ch, r, c]`` is cell ``(r, c)``.

The 121-hole star (``rules.is_star``; only the ``general`` encoding) is drawn on the 17 x 17 axial
square that holds it (:func:`plane_side`, :func:`plane_cells`): cell ``(q, r)`` is element
``[r + 8, q + 8]``. The six hex directions ``(dq, dr)`` are then six of the eight 3 x 3
neighbours (all but ``(1, 1)`` and ``(-1, -1)``), as on the rhombus, so the same convolutional
network reads both boards. The 168 elements off the star are 0 in every plane; the last plane,
all 1 on the rhombus, is the on-board mask (1 on the 121 cells), so the network can tell the
board's edge from an empty cell. Star specifics of the conventions above:

- canonical IDs: player 0's pieces in ascending cell index (its home's tip, cell 0, first),
  player 1's in descending cell index;
- the 180-degree rotation ``(q, r) -> (-q, -r)`` is ``i -> cells - 1 - i`` = ``120 - i`` (cells
  are sorted by ``r`` then ``q`` and the star is centrally symmetric), so :func:`view_cells`
  serves both boards, and the two canonical orders are again each other's rotation;
- policy size ``k * cells = 10 * 121 = 1210``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .rules import PASS, Rules
from .star import StarGeometry

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
    "general_planes",
    "index_moves",
    "mover_frame",
    "paper_planes",
    "plane_cells",
    "plane_side",
    "policy_indices",
    "policy_size",
    "seat_frame",
    "view_cells",
]

Move = tuple[int, int]

#: Integer dtype of piece lists made here (cells < 128 fit; -1 marks missing history).
PIECE_DTYPE = np.int16

#: History length of the seed paper's input (its "3 nearest past game states").
PAPER_HISTORY = 3

_PAPER_ON_STAR = (
    "the paper encoding is the seed paper's rhombus input; the star ({name}) has the general encoding only"
)


# ---------------------------------------------------------------------------------------------
# Piece IDs
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=16)
def _seat_frames(rules: Rules) -> np.ndarray:
    """``(P, cells)`` int64: ``[p, i]`` = where cell ``i`` lies once the board is turned so that
    player p's seat is the north point (point 0). Two players (and the rhombus): the identity for
    player 0 and the 180-degree rotation ``cells - 1 - i`` for player 1, :func:`view_cells`."""
    cells = rules.cells
    ident = np.arange(cells, dtype=np.int64)
    if rules.players == 2:
        return np.stack([ident, cells - 1 - ident])
    geometry = rules.geometry
    assert isinstance(geometry, StarGeometry)
    return np.array([[geometry.turn(i, -seat) for i in range(cells)] for seat in geometry.seats], dtype=np.int64)


def seat_frame(rules: Rules, player: int) -> np.ndarray:
    """``(cells,)`` int64: cell ``i`` as seen by ``player`` (its seat turned to the north point on
    the star; for two players the identity or the 180-degree rotation, as :func:`view_cells`)."""
    return _seat_frames(rules)[player]


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


def canonical_ids(rules: Rules, board: Sequence[int] | np.ndarray) -> np.ndarray:
    """Canonical piece list ``(P, k)`` of a board: ``[p, j]`` = cell of piece ID ``j`` of player p.

    Rhombus: player 0 sorted by ``(r - c)`` descending then ``c`` ascending (its home tip first,
    row by row towards the goal); player 1 by ``(c - r)`` descending then ``c`` descending (the
    same order seen from the other side). Star: player 0 in ascending cell index, player 1 in
    descending cell index (the image of player 0's order under the rotation ``i -> cells - 1 - i``).
    Three or more players: player p's pieces in ascending index of their cell in p's own frame
    (:func:`seat_frame`, p's seat turned to the north), which for two players is the rule above.
    Raises ``ValueError`` if a player does not have exactly k pieces.
    """
    n, k = rules.n, rules.k
    board = np.asarray(board)
    if board.shape != (rules.cells,):
        raise ValueError(f"board has shape {board.shape}, the {rules.name} rules need ({rules.cells},)")
    if rules.players > 2:
        multi = np.empty((rules.players, k), dtype=PIECE_DTYPE)
        for p in range(rules.players):
            cells = np.flatnonzero(board == p)
            if len(cells) != k:
                raise ValueError(f"player {p} has {len(cells)} pieces on the board, the rules need {k}")
            multi[p] = cells[np.argsort(seat_frame(rules, p)[cells], kind="stable")]
        return multi
    out = np.empty((2, k), dtype=PIECE_DTYPE)
    if rules.is_star:
        keys: dict[int, Callable[[int], object]] = {0: lambda i: i, 1: lambda i: -i}
    else:
        keys = {
            0: lambda i: (-(i // n - i % n), i % n),
            1: lambda i: (-(i % n - i // n), -(i % n)),
        }
    for p in (0, 1):
        cells = [int(i) for i in np.flatnonzero(board == p)]
        if len(cells) != k:
            raise ValueError(f"player {p} has {len(cells)} pieces on the board, the rules need {k}")
        out[p] = sorted(cells, key=keys[p])  # type: ignore[arg-type]
    return out


# ---------------------------------------------------------------------------------------------
# The planes' grid
# ---------------------------------------------------------------------------------------------


def plane_side(rules: Rules) -> int:
    """Side of the square input planes: ``n`` on the rhombus, ``4t + 1`` (17) on the star."""
    geometry = rules.geometry
    if isinstance(geometry, StarGeometry):
        return 4 * geometry.t + 1
    return rules.n


@lru_cache(maxsize=16)
def _star_plane_cells(geometry: StarGeometry) -> np.ndarray:
    side, mid = 4 * geometry.t + 1, 2 * geometry.t
    table = np.array([(r + mid) * side + (q + mid) for q, r in geometry.coords], dtype=np.int64)
    table.setflags(write=False)
    return table


@lru_cache(maxsize=16)
def _rhombus_plane_cells(n: int) -> np.ndarray:
    table = np.arange(n * n, dtype=np.int64)
    table.setflags(write=False)
    return table


def plane_cells(rules: Rules) -> np.ndarray:
    """``(cells,)`` int64, read-only: the flat element ``row * side + col`` of each cell in a plane.

    The identity on the rhombus; on the star, cell ``(q, r)`` -> ``(r + 2t) * side + (q + 2t)``.
    """
    geometry = rules.geometry
    if isinstance(geometry, StarGeometry):
        return _star_plane_cells(geometry)
    return _rhombus_plane_cells(rules.n)


def _on_plane(rules: Rules, cells: np.ndarray) -> np.ndarray:
    """Cells -> flat plane elements (``-1`` kept); the identity on the rhombus."""
    if not rules.is_star:
        return cells
    return np.where(cells >= 0, plane_cells(rules)[np.where(cells >= 0, cells, 0)], cells)


def _board_mask(rules: Rules) -> np.ndarray:
    """``(side * side,)`` float32: 1 on the board's cells, 0 elsewhere (all 1 on the rhombus)."""
    side = plane_side(rules)
    mask = np.zeros(side * side, dtype=np.float32)
    mask[plane_cells(rules)] = 1.0
    return mask


def view_cells(rules: Rules, cells: np.ndarray, rotate: np.ndarray | bool) -> np.ndarray:
    """Map absolute cells to the network's frame: ``cells - 1 - i`` where ``rotate``, else ``i``.

    This is the 180-degree rotation on both boards (on the star ``(q, r) -> (-q, -r)``). ``-1``
    (missing) stays ``-1``. ``rotate`` broadcasts against ``cells``. The rotation is an
    involution, so the same call maps the network's frame back to absolute cells.
    """
    cells = np.asarray(cells)
    rotated = np.where(cells >= 0, rules.cells - 1 - cells, cells)
    return np.where(rotate, rotated, cells).astype(cells.dtype, copy=False)


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

    ``current`` is the current state's piece list ``(2, k)``; ``rotate`` is the encoding's
    perspective flag (``Encoding.rotate``; it only acts when ``to_move == 1``). The pass maps to
    -1. Raises ``ValueError`` for a move whose start cell holds no piece of the mover.
    """
    moves = np.asarray(moves, dtype=np.int64).reshape(-1, 2)
    s, e = moves[:, 0], moves[:, 1]
    is_pass = (s == PASS[0]) & (e == PASS[1])
    ids = _own_id_table(rules, current, to_move)[np.where(is_pass, 0, s)]
    bad = (ids < 0) & ~is_pass
    if bad.any():
        s0, e0 = moves[np.argmax(bad)]
        raise ValueError(f"move [{s0}, {e0}]: cell {s0} holds no piece of player {to_move}")
    dest = _to_frame(rules, e, to_move, rotate)
    return np.where(is_pass, -1, ids * rules.cells + dest)


def _to_frame(rules: Rules, cells: np.ndarray, to_move: int, rotate: bool) -> np.ndarray:
    """Absolute cells -> the mover's frame of a rotating encoding (-1 stays -1): two players as
    :func:`view_cells`; three or more, the turn that brings the mover's seat to the north."""
    if rules.players == 2 or not rotate:
        return view_cells(rules, cells, rotate and to_move == 1)
    cells = np.asarray(cells)
    return np.where(cells >= 0, seat_frame(rules, to_move)[np.maximum(cells, 0)], cells)


def _from_frame(rules: Rules, cells: np.ndarray, to_move: int, rotate: bool) -> np.ndarray:
    """The inverse of :func:`_to_frame`."""
    if rules.players == 2 or not rotate:
        return view_cells(rules, cells, rotate and to_move == 1)
    cells = np.asarray(cells)
    inverse = np.argsort(seat_frame(rules, to_move))
    return np.where(cells >= 0, inverse[np.maximum(cells, 0)], cells)


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
    e = _from_frame(rules, dest, to_move, rotate)
    moves = np.stack([s, e], axis=1)
    moves[is_pass] = PASS
    return moves


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
    """Input planes of the ``general`` encoding: one per player and state (P = 2: two), k ID
    planes, side and constant."""
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
    code stores ``(n, n, C)``); the plane order is the paper's.
    """
    if rules.is_star:
        raise ValueError(_PAPER_ON_STAR.format(name=rules.name))
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
    """Input of hopzero's own network, for any preset (any n, k, and the star).

    ``pieces`` ``(B, H, 2, k)`` int, ``to_move`` ``(B,)`` or scalar; returns (or fills ``out``)
    float32 ``(B, 2 * history + k + 2, side, side)`` (14 planes on cc49, 18 on cc81 and on the
    star; ``side`` is :func:`plane_side`, 17 on the star, see the module docstring for its grid):

    - planes ``2h`` / ``2h + 1``, ``h < history``: occupancy (0/1) of the side to move's /
      the opponent's pieces ``h`` plies ago; zero where that state is missing.
    - planes ``2 * history + j``, ``j < k``: one-hot cell of the side to move's piece ID ``j``
      now. The policy is indexed by piece ID, so the network must see which piece has which ID;
      occupancy alone cannot tell it once pieces have changed places.
    - plane ``2 * history + k``: 1 on every cell when player 1 is to move (who moved first
      matters for the ply limit and tempo); last plane: 1 on every cell, the on-board mask (marks
      the board inside the convolutions' zero padding, and on the star the board's edge inside
      the 17 x 17 square). Elements off the star are 0 in every plane.

    Perspective: when player 1 is to move, every plane is rotated 180 degrees (cell ``i`` ->
    ``cells - 1 - i``), and so is the destination in the policy index (``Encoding.rotate``).
    The rotation swaps the two homes, and the canonical IDs of a rotated player 1 are player 0's,
    so the side to move always sees itself starting in the same corner (bottom-left on the
    rhombus, the north point on the star) and racing to the opposite one: one pattern to learn
    instead of two, the usual AlphaZero choice. The rotation commutes with the home-preserving
    reflection, so symmetry augmentation is unchanged.
    """
    if rules.players > 2:
        return _encode_multi(rules, pieces, to_move, out, history)
    pieces, tm = _batch(rules, pieces, to_move)
    bsz, k = pieces.shape[0], rules.k
    n_planes = general_planes(rules, history)
    side = plane_side(rules)
    out = _buffer(out, (bsz, n_planes, side, side))
    flat = out.reshape(bsz, n_planes, side * side)
    rows = np.arange(bsz)
    rotate = (tm == 1)[:, None]
    for h in range(min(history, pieces.shape[1])):
        _scatter(flat, 2 * h, _on_plane(rules, view_cells(rules, pieces[rows, h, tm], rotate)), 1.0)
        _scatter(flat, 2 * h + 1, _on_plane(rules, view_cells(rules, pieces[rows, h, 1 - tm], rotate)), 1.0)
    own_now = _on_plane(rules, view_cells(rules, pieces[rows, 0, tm], rotate))
    _scatter(flat, 2 * history + np.arange(k), own_now, 1.0)
    if rules.is_star:
        mask = _board_mask(rules)
        flat[:, 2 * history + k, :] = (tm == 1)[:, None] * mask
        flat[:, 2 * history + k + 1, :] = mask
    else:  # every element is a cell
        flat[:, 2 * history + k, :] = (tm == 1)[:, None]
        flat[:, 2 * history + k + 1, :] = 1.0
    return out


def _encode_multi(
    rules: Rules, pieces: np.ndarray, to_move: np.ndarray | int, out: np.ndarray | None, history: int
) -> np.ndarray:
    """The ``general`` encoding for three or more players (the star's star3, star4, star6).

    ``pieces`` ``(B, H, P, k)``; returns float32 ``(B, P * history + k + 2, 17, 17)``:

    - plane ``P * h + i``, ``h < history``, ``i < P``: occupancy of the pieces of player
      ``(to_move + i) % P`` ``h`` plies ago: the mover first (``i = 0``), then the others in
      seat order after the mover, the order they move in;
    - planes ``P * history + j``: one-hot cell of the mover's piece ID ``j`` now;
    - plane ``P * history + k``: ``to_move / (P - 1)`` on the board (who moves in the round
      matters near the end: the round is completed before the game ends); last plane: the
      on-board mask.

    Perspective: every plane is turned so that the mover's seat is the north point
    (:func:`seat_frame`), and so is the destination in the policy index (``Encoding.rotate``),
    the three- or more-player counterpart of the two-player 180-degree rotation.
    """
    pieces, tm = _batch(rules, pieces, to_move)
    bsz, k, players = pieces.shape[0], rules.k, rules.players
    n_planes = general_planes(rules, history)
    side = plane_side(rules)
    out = _buffer(out, (bsz, n_planes, side, side))
    flat = out.reshape(bsz, n_planes, side * side)
    rows = np.arange(bsz)
    frames = _seat_frames(rules)[tm]  # (B, cells): each row's absolute -> mover frame map

    def framed(cells: np.ndarray) -> np.ndarray:
        turned = np.take_along_axis(frames, np.maximum(cells, 0), axis=1)
        return _on_plane(rules, np.where(cells >= 0, turned, -1))

    for h in range(min(history, pieces.shape[1])):
        for i in range(players):
            _scatter(flat, players * h + i, framed(pieces[rows, h, (tm + i) % players]), 1.0)
    _scatter(flat, players * history + np.arange(k), framed(pieces[rows, 0, tm]), 1.0)
    mask = _board_mask(rules)
    flat[:, players * history + k, :] = (tm / (players - 1))[:, None] * mask
    flat[:, players * history + k + 1, :] = mask
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
    """Whether player 1's view (planes and policy destinations) is rotated 180 degrees."""
    default_history: int
    used_by: str


ENCODINGS: dict[str, EncodingSpec] = {
    "paper": EncodingSpec(
        "paper", paper_planes, encode_paper, rotate=False, default_history=PAPER_HISTORY,
        used_by="the seed paper's network (reproduction of Liu et al. 2019, preset 'paper')",
    ),
    "general": EncodingSpec(
        "general", general_planes, encode_general, rotate=True, default_history=3,
        used_by="hopzero's own network, every preset",
    ),
}


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
        """Whether player 1's view is rotated 180 degrees (planes and policy destinations)."""
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
        """Planes ``(B, C, side, side)`` float32 of piece lists ``(B, H, 2, k)`` and ``to_move`` ``(B,)``."""
        return self.spec.encode(self.rules, pieces, to_move, out=out, history=self.history)

    def encode_one(self, pieces: np.ndarray, to_move: int) -> np.ndarray:
        """Planes ``(C, side, side)`` of one position's piece lists ``(H, 2, k)``."""
        return self.encode(np.asarray(pieces)[None], to_move)[0]

    def encode_tracker(self, tracker: PieceTracker) -> np.ndarray:
        """Planes ``(C, side, side)`` of a tracker's current state and its history."""
        return self.encode_one(tracker.piece_lists(self.history), tracker.to_move)

    def move_indices(self, current: np.ndarray, moves: np.ndarray | Sequence[Move], to_move: int) -> np.ndarray:
        """Policy indices ``(M,)`` of moves ``(M, 2)``, given the current piece list ``(2, k)``."""
        return policy_indices(self.rules, current, moves, to_move, self.rotate)

    def index_moves(self, current: np.ndarray, indices: np.ndarray | Sequence[int], to_move: int) -> np.ndarray:
        """Moves ``(M, 2)`` named by policy indices ``(M,)``, given the current piece list."""
        return index_moves(self.rules, current, indices, to_move, self.rotate)


def encoding_for(rules: Rules, name: str = "general", history: int | None = None) -> Encoding:
    """The encoding ``name`` (``paper`` or ``general``; on the star ``general`` only) bound to ``rules``."""
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; valid: {', '.join(ENCODINGS)}")
    if rules.is_star and name == "paper":
        raise ValueError(_PAPER_ON_STAR.format(name=rules.name))
    spec = ENCODINGS[name]
    history = spec.default_history if history is None else history
    if history < 1:
        raise ValueError(f"history={history} must be at least 1")
    return Encoding(spec, rules, history)
