"""The board's one symmetry that keeps player 0's home: a reflection, an involution.

On the rhombus it is ``(r, c) -> (n-1-c, n-1-r)``, the mirror about the bottom-left--top-right
diagonal of the matrix (the seed paper's data augmentation; its code does
``fliplr(rot90(plane))``). On the 121-hole star it is the left-right mirror
``(q, r) -> (-q-r, r)``, which keeps the north and south points and swaps the east and west ones.
Both are the geometry's ``reflect``, tables of cells here (:func:`reflect_table`). Either maps the
six hex directions onto each other and each two-player home onto itself, so a reflected position
is a legal position of the same game with the same result, and its legal moves are the reflected
moves; with more players it also permutes the other seats (:func:`seat_reflection`).

Piece IDs stay attached to their pieces under reflection (``reflect_pieces`` moves cells, not
IDs), so a reflected policy keeps each ID's block and reflects the destination within it:
index ``id * cells + e`` -> ``id * cells + reflect(e)``. The seed paper's code augments the
input planes but copies the policy target unchanged, which pairs reflected inputs with
unreflected destinations; we reflect both.

Planes: the cells' elements of the planes' grid (``ccengine.encoding.plane_cells``) are permuted by
the table, and elements off the board (the star's, 0 in every plane) stay where they are; on the
rhombus, whose grid is its matrix, that is a transpose-and-flip of the ``n x n`` matrix.

The reflection commutes with the seat frames of the ``general`` encoding (with two players the
half turn: both compositions give ``(r, c) -> (c, r)`` on the rhombus and ``(q, r) -> (q + r, -r)``
on the star), so the same plane and policy maps serve both encodings and every side to move.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from .encoding import plane_cells, plane_side, seat_frame
from .notation import Position
from .rules import MAX_N, PASS, Geometry, Rules

__all__ = [
    "reflect_board",
    "reflect_cells",
    "reflect_move",
    "reflect_moves",
    "reflect_pieces",
    "reflect_planes",
    "reflect_policy",
    "reflect_position",
    "reflect_table",
    "seat_reflection",
]

Move = tuple[int, int]


@lru_cache(maxsize=32)
def _reflection(geometry: Any) -> np.ndarray:
    """``(cells,)``: the geometry's ``reflect`` as a read-only table (cached by the geometry)."""
    table = np.array([geometry.reflect(i) for i in range(geometry.cells)], dtype=np.int64)
    table.setflags(write=False)
    return table


@lru_cache(maxsize=None)
def _matrix_reflection(n: int) -> np.ndarray:
    """The reflection of the ``n x n`` rhombus, for planes given without rules (whose grid is
    the rhombus's matrix)."""
    return _reflection(Geometry(n, 1))


@lru_cache(maxsize=16)
def _plane_gather(rules: Rules) -> np.ndarray:
    """``(side * side,)``: the plane element each element of a reflected plane reads (the
    reflection on the cells' elements, the identity off the board)."""
    side, grid = plane_side(rules), plane_cells(rules)
    gather = np.arange(side * side)
    gather[grid] = grid[reflect_table(rules)]
    gather.setflags(write=False)
    return gather


def reflect_table(rules: Rules) -> np.ndarray:
    """``(cells,)`` int: ``table[i]`` is the reflection of cell ``i`` (read-only)."""
    return _reflection(rules.geometry)


def reflect_cells(rules: Rules, cells: np.ndarray) -> np.ndarray:
    """Reflect an integer array of cells of any shape; ``-1`` (missing / pass) stays ``-1``."""
    cells = np.asarray(cells)
    table = reflect_table(rules)
    return np.where(cells >= 0, table[np.where(cells >= 0, cells, 0)], cells).astype(cells.dtype, copy=False)


def reflect_pieces(rules: Rules, pieces: np.ndarray) -> np.ndarray:
    """Reflect piece lists ``[..., H, P, k]`` (IDs unchanged, cells reflected, -1 kept)."""
    return reflect_cells(rules, pieces)


def reflect_board(rules: Rules, board: Sequence[int] | np.ndarray) -> tuple[int, ...]:
    """The reflected board: the owner of cell ``reflect(i)`` is the owner of ``i``."""
    board = np.asarray(board)
    out = np.empty_like(board)
    out[reflect_table(rules)] = board
    return tuple(int(v) for v in out)


def reflect_position(rules: Rules, position: Position) -> Position:
    """The reflected position (side to move and ply unchanged)."""
    return Position(reflect_board(rules, position.board), position.to_move, position.ply)


def reflect_move(rules: Rules, move: Move) -> Move:
    """The reflected move; the pass stays the pass."""
    if tuple(move) == PASS:
        return PASS
    table = reflect_table(rules)
    return int(table[move[0]]), int(table[move[1]])


def reflect_moves(rules: Rules, moves: np.ndarray | Sequence[Move]) -> np.ndarray:
    """Reflect moves ``(M, 2)`` int; pass rows stay ``(-1, -1)``."""
    return reflect_cells(rules, np.asarray(moves, dtype=np.int64).reshape(-1, 2))


def reflect_planes(planes: np.ndarray, rules: Rules | None = None) -> np.ndarray:
    """Reflect encoded planes ``(..., side, side)``; returns a new C-contiguous array (so
    ``torch.from_numpy`` takes it).

    Each cell's element moves to its reflection's, elements off the board are copied unchanged.
    Without ``rules`` the planes are taken for the ``side x side`` rhombus:
    ``out[..., r, c] = in[..., n-1-c, n-1-r]``. Works on any encoding here, since every plane is
    a per-cell map or constant on the board.
    """
    planes = np.asarray(planes)
    if planes.ndim < 2 or planes.shape[-1] != planes.shape[-2]:
        raise ValueError(f"planes have shape {planes.shape}, need (..., side, side)")
    side = planes.shape[-1]
    if rules is None and side > MAX_N:
        raise ValueError(f"{side} x {side} planes are not a rhombus's (the star's?): pass rules= to reflect them")
    if rules is not None and side != plane_side(rules):
        raise ValueError(f"planes have side {side}, the {rules.name} rules need {plane_side(rules)}")
    gather = _matrix_reflection(side) if rules is None else _plane_gather(rules)
    flat = np.ascontiguousarray(planes).reshape(*planes.shape[:-2], side * side)
    return np.take(flat, gather, axis=-1).reshape(planes.shape)


def reflect_policy(rules: Rules, policy: np.ndarray) -> np.ndarray:
    """Reflect policy vectors ``(..., k * cells)``: each ID's block by the table.

    ``out[..., id * cells + reflect(e)] = in[..., id * cells + e]``; the reflection is an
    involution, so that is a gather with the same table.
    """
    k, cells = rules.k, rules.cells
    table = reflect_table(rules)
    shape = tuple(policy.shape)
    if shape[-1] != k * cells:
        raise ValueError(f"policy has length {shape[-1]}, the rules need k * cells = {k * cells}")
    blocks = policy.reshape(*shape[:-1], k, cells)
    return blocks[..., table].reshape(shape)


def seat_reflection(rules: Rules) -> np.ndarray | None:
    """How the reflection permutes the seats in the mover's frame, or None where it does not.

    The ``general`` encoding turns the board into the mover's seat frame, where the reflection
    keeps the mover's home. Returns ``perm`` (int64 ``[P]``): the home of the player ``i`` seats
    after the mover (``i = 0``: the mover), reflected, is the home of the player ``perm[i]``
    seats after the mover, the same for every mover: two players ``[0, 1]``, star3 ``[0, 2, 1]``,
    star6 ``[0, 5, 4, 3, 2, 1]``. None when the reflection does not map the seating onto itself
    for every mover alike (star4: seen from seat 0 the others sit at points 1, 3, 4; reflected,
    at 5, 3, 2).
    """
    geometry, players = rules.geometry, rules.players
    table = reflect_table(rules)
    perms = set()
    for p in range(players):
        frame = seat_frame(rules, p)
        homes = [frozenset(frame[list(geometry.home[(p + i) % players])].tolist()) for i in range(players)]
        images = [frozenset(table[list(home)].tolist()) for home in homes]
        if any(image not in homes for image in images):
            return None
        perms.add(tuple(homes.index(image) for image in images))
    if len(perms) != 1:
        return None
    return np.array(perms.pop(), dtype=np.int64)
