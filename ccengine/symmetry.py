"""The board's one symmetry that keeps both homes (two players): a reflection, an involution.

On the rhombus it is ``(r, c) -> (n-1-c, n-1-r)``, the mirror about the bottom-left--top-right
diagonal of the matrix (the seed paper's data augmentation; its code does
``fliplr(rot90(plane))``). On the 121-hole star it is the left-right mirror
``(q, r) -> (-q-r, r)`` (``StarGeometry.reflect``), which keeps the north and south points, the
two-player homes. Either maps the six hex directions onto each other and each home onto itself,
so a reflected position is a legal position of the same game with the same result, and its legal
moves are the reflected moves. Both are tables of cells (:func:`reflect_table`).

Piece IDs stay attached to their pieces under reflection (``reflect_pieces`` moves cells, not
IDs), so a reflected policy keeps each ID's block and reflects the destination within it:
index ``id * cells + e`` -> ``id * cells + reflect(e)``. The seed paper's code augments the
input planes but copies the policy target unchanged, which pairs reflected inputs with
unreflected destinations; we reflect both.

Planes: on the rhombus the reflection is a transpose-and-flip of the ``n x n`` matrix; on the star
the cells' elements of the 17 x 17 grid (``ccengine.encoding.plane_cells``) are permuted by the
table and the elements off the star (0 in every plane) stay where they are.

The reflection commutes with the 180-degree rotation of the ``general`` encoding (both
compositions give ``(r, c) -> (c, r)`` on the rhombus and ``(q, r) -> (q + r, -r)`` on the star),
so the same plane and policy maps serve both encodings and both sides to move.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from .encoding import plane_cells, plane_side
from .notation import Position
from .rules import PASS, STAR_N, Rules
from .star import StarGeometry

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
]

Move = tuple[int, int]


@lru_cache(maxsize=None)
def _table(n: int) -> np.ndarray:
    i = np.arange(n * n)
    r, c = np.divmod(i, n)
    table = (n - 1 - c) * n + (n - 1 - r)
    table.setflags(write=False)
    return table


@lru_cache(maxsize=16)
def _star_table(geometry: StarGeometry) -> np.ndarray:
    table = np.array([geometry.reflect(i) for i in range(geometry.cells)], dtype=np.int64)
    table.setflags(write=False)
    return table


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
    geometry = rules.geometry
    if isinstance(geometry, StarGeometry):
        return _star_table(geometry)
    return _table(rules.n)


def reflect_cells(rules: Rules, cells: np.ndarray) -> np.ndarray:
    """Reflect an integer array of cells of any shape; ``-1`` (missing / pass) stays ``-1``."""
    cells = np.asarray(cells)
    table = reflect_table(rules)
    return np.where(cells >= 0, table[np.where(cells >= 0, cells, 0)], cells).astype(cells.dtype, copy=False)


def reflect_pieces(rules: Rules, pieces: np.ndarray) -> np.ndarray:
    """Reflect piece lists ``[..., H, 2, k]`` (IDs unchanged, cells reflected, -1 kept)."""
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

    Rhombus (``rules`` None or a rhombus): ``out[..., r, c] = in[..., n-1-c, n-1-r]``. Star
    (``rules`` required): each cell's element moves to its reflection's, elements off the star are
    copied unchanged. Works on any encoding here, since every plane is a per-cell map or constant
    on the board.
    """
    planes = np.asarray(planes)
    if planes.ndim < 2 or planes.shape[-1] != planes.shape[-2]:
        raise ValueError(f"planes have shape {planes.shape}, need (..., side, side)")
    if rules is None and planes.shape[-1] == STAR_N:
        raise ValueError(f"{STAR_N} x {STAR_N} planes are the star's: pass rules= to reflect them")
    if rules is not None and planes.shape[-1] != plane_side(rules):
        raise ValueError(f"planes have side {planes.shape[-1]}, the {rules.name} rules need {plane_side(rules)}")
    if rules is None or not rules.is_star:
        return np.ascontiguousarray(np.flip(np.swapaxes(planes, -1, -2), axis=(-2, -1)))
    flat = np.ascontiguousarray(planes).reshape(*planes.shape[:-2], -1)
    return np.take(flat, _plane_gather(rules), axis=-1).reshape(planes.shape)


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
    """How the reflection permutes the seats in the mover's frame.

    The ``general`` encoding of three or more players turns the board so that the mover sits at
    the north point; the reflection about the north-south axis keeps the mover there and maps
    point ``x`` to ``-x`` (mod 6). Returns ``perm`` (int64 ``[P]``): the player ``i`` seats after
    the mover (``i = 0``: the mover) sits, reflected, where the player ``perm[i]`` seats after
    the mover sat, the same for every mover: star3 ``[0, 2, 1]``, star6 ``[0, 5, 4, 3, 2, 1]``.
    Two players: ``[0, 1]``, no seat moves. None when the reflection does not map the seating onto
    itself for every mover (star4: the seats 0, 1, 3, 4 seen from seat 0 are points 1, 3, 4 after
    it, reflected 5, 3, 2).
    """
    if not rules.is_star:  # the rhombus's reflection maps each home onto itself
        return np.arange(rules.players, dtype=np.int64)
    seats = rules.geometry.seats
    players = len(seats)
    perms = set()
    for p in range(players):
        rel = [(seats[(p + i) % players] - seats[p]) % 6 for i in range(players)]
        image = [(-x) % 6 for x in rel]
        if sorted(image) != sorted(rel):
            return None
        perms.add(tuple(rel.index(x) for x in image))
    if len(perms) != 1:
        return None
    return np.array(perms.pop(), dtype=np.int64)
