"""The 121-hole star's network input, policy index, canonical IDs and reflection (ccengine.encoding/symmetry)."""

from __future__ import annotations

import numpy as np
import pytest

from ccengine.encoding import (
    PieceTracker,
    canonical_ids,
    encode_paper,
    encoding_for,
    plane_cells,
    plane_side,
    seat_frame,
)
from ccengine.engines import new_state, state_class
from learner.players import make_player
from ccengine.rules import preset
from ccengine.star import STAR_DIRECTIONS
from ccengine.symmetry import (
    reflect_board,
    reflect_planes,
    reflect_table,
)

STAR = preset("star2")
GEO = STAR.geometry
State = state_class("cython")


Move = tuple[int, int]


def star_game(seed: int, plies: int | None = None) -> list[tuple[tuple[int, ...], int, list[Move], Move]]:
    """``(board, to_move, legal moves, move played)`` of each position of a greedy-stochastic
    star2 game on the compiled engine."""
    state = new_state(STAR)
    players = [make_player("greedy-stochastic", STAR, seed), make_player("greedy-stochastic", STAR, seed + 1)]
    out = []
    while not state.is_terminal() and (plies is None or state.ply < plies):
        move = players[state.to_move].select(state)
        out.append((state.board, state.to_move, state.legal_moves(), move))
        state.play(move)
    return out


def random_board(rng: np.random.Generator) -> tuple[int, ...]:
    cells = rng.choice(STAR.cells, size=2 * STAR.k, replace=False)
    board = [-1] * STAR.cells
    for j, cell in enumerate(cells):
        board[int(cell)] = 0 if j < STAR.k else 1
    return tuple(board)


def swap_colours(board: tuple[int, ...]) -> tuple[int, ...]:
    """The board rotated 180 degrees with the colours swapped (player 1's view as player 0's)."""
    return tuple(-1 if board[STAR.cells - 1 - i] < 0 else 1 - board[STAR.cells - 1 - i] for i in range(STAR.cells))


# ---------------------------------------------------------------------------------------------
# The grid
# ---------------------------------------------------------------------------------------------


def test_cells_sit_at_r_plus_8_q_plus_8_and_hex_neighbours_are_grid_neighbours():
    side = plane_side(STAR)
    assert side == 17 == STAR.n
    grid = plane_cells(STAR)
    assert grid.tolist() == [(r + 8) * 17 + (q + 8) for q, r in GEO.coords]
    assert len(set(grid.tolist())) == STAR.cells == 121
    offsets = set()
    for i in range(STAR.cells):
        ri, ci = divmod(int(grid[i]), side)
        for d in range(len(STAR_DIRECTIONS)):
            j = GEO.step[i][d]
            if j >= 0:
                rj, cj = divmod(int(grid[j]), side)
                offsets.add((rj - ri, cj - ci))
    # six of the eight 3x3 neighbours: all but the (1, 1) / (-1, -1) diagonal
    assert offsets == {(0, 1), (0, -1), (1, 0), (-1, 0), (-1, 1), (1, -1)}


def test_the_two_player_seat_frame_is_the_180_degree_rotation():
    rotated = seat_frame(STAR, 1)
    assert [GEO.coords[int(j)] for j in rotated] == [(-q, -r) for q, r in GEO.coords]
    assert rotated.tolist() == [STAR.cells - 1 - i for i in range(STAR.cells)]
    assert seat_frame(STAR, 0).tolist() == list(range(STAR.cells))


# ---------------------------------------------------------------------------------------------
# Canonical IDs and the policy index
# ---------------------------------------------------------------------------------------------


def test_canonical_ids_ascending_for_player_0_descending_for_player_1():
    ids = canonical_ids(STAR, GEO.start_board())
    assert ids[0].tolist() == list(range(10))  # the north tip (cell 0) first
    assert ids[1].tolist() == list(range(120, 110, -1))  # the south tip (cell 120) first
    assert ids[0].tolist() == sorted(GEO.home[0])
    rng = np.random.default_rng(3)
    for _ in range(20):
        board = random_board(rng)
        ids = canonical_ids(STAR, board)
        assert (np.diff(ids[0]) > 0).all() and (np.diff(ids[1]) < 0).all()
        assert sorted(ids[0].tolist()) == [i for i, v in enumerate(board) if v == 0]
        # rotated and colour-swapped, player 1's IDs are the ones player 0 gets there
        swapped = canonical_ids(STAR, swap_colours(board))
        assert (STAR.cells - 1 - ids[1]).tolist() == swapped[0].tolist()
        assert (STAR.cells - 1 - ids[0]).tolist() == swapped[1].tolist()


def test_canonical_ids_reject_wrong_boards():
    board = list(GEO.start_board())
    board[0] = -1
    with pytest.raises(ValueError, match="player 0 has 9 pieces"):
        canonical_ids(STAR, board)
    with pytest.raises(ValueError, match=r"board has shape \(49,\)"):
        canonical_ids(STAR, [-1] * 49)


# ---------------------------------------------------------------------------------------------
# The general encoding
# ---------------------------------------------------------------------------------------------


def test_general_planes_on_the_star():
    enc = encoding_for(STAR, "general")
    assert enc.input_shape == (18, 17, 17) and enc.in_planes == 18
    x = enc.encode_tracker(PieceTracker(STAR))
    grid = plane_cells(STAR)
    off = np.ones(17 * 17, dtype=bool)
    off[grid] = False
    flat = x.reshape(18, -1)
    assert not flat[:, off].any()  # nothing off the star
    mask = flat[-1]
    assert mask.sum() == 121 and (mask[grid] == 1).all()
    side = 2 * enc.history + STAR.k
    assert not flat[side].any()  # player 0 to move
    assert (flat[0, grid[list(GEO.home[0])]] == 1).all() and flat[0].sum() == 10
    assert (flat[1, grid[list(GEO.home[1])]] == 1).all() and flat[1].sum() == 10
    assert not flat[2:6].any()  # no history at the start
    for j in range(STAR.k):  # piece ID j of the mover sits on cell j at the start
        assert flat[2 * enc.history + j].sum() == 1 and flat[2 * enc.history + j, grid[j]] == 1


def test_player_1_sees_the_rotated_colour_swapped_board():
    enc = encoding_for(STAR)
    for board, to_move, legal, _ in star_game(7, plies=40)[1::2]:
        assert to_move == 1
        ids = canonical_ids(STAR, board)
        a = enc.encode_one(ids[None], 1)
        swapped = canonical_ids(STAR, swap_colours(board))
        b = enc.encode_one(swapped[None], 0)
        side = 2 * enc.history + STAR.k
        np.testing.assert_array_equal(np.delete(a, side, 0), np.delete(b, side, 0))
        assert a[side].sum() == 121 and not b[side].any()
        mirrored = [(STAR.cells - 1 - s, STAR.cells - 1 - e) for s, e in legal]
        np.testing.assert_array_equal(enc.move_indices(ids, legal, 1), enc.move_indices(swapped, mirrored, 0))


def test_the_paper_encoder_refuses_the_star():
    ids = canonical_ids(STAR, GEO.start_board())
    with pytest.raises(ValueError, match="general encoding only"):
        encode_paper(STAR, ids[None, None], 0)


# ---------------------------------------------------------------------------------------------
# Reflection
# ---------------------------------------------------------------------------------------------


def test_star_reflection_table_keeps_homes_and_commutes_with_the_rotation():
    table = reflect_table(STAR)
    assert table.tolist() == [GEO.reflect(i) for i in range(STAR.cells)]
    assert (table[table] == np.arange(STAR.cells)).all()
    assert reflect_board(STAR, GEO.start_board()) == GEO.start_board()
    assert [GEO.coords[int(j)] for j in table] == [(-q - r, r) for q, r in GEO.coords]
    rotate = STAR.cells - 1 - np.arange(STAR.cells)
    assert (table[rotate] == rotate[table]).all()
    assert [GEO.coords[int(j)] for j in table[rotate]] == [(q + r, -r) for q, r in GEO.coords]


def test_reflect_planes_on_the_star():
    rng = np.random.default_rng(0)
    planes = rng.random((3, 4, 17, 17))
    once = reflect_planes(planes, STAR)
    assert once.flags.c_contiguous
    np.testing.assert_array_equal(reflect_planes(once, STAR), planes)
    grid, table = plane_cells(STAR), reflect_table(STAR)
    flat, out = planes.reshape(3, 4, -1), once.reshape(3, 4, -1)
    np.testing.assert_array_equal(out[..., grid[table]], flat[..., grid])
    off = np.setdiff1d(np.arange(289), grid)
    np.testing.assert_array_equal(out[..., off], flat[..., off])
    with pytest.raises(ValueError, match="pass rules="):
        reflect_planes(planes)
    with pytest.raises(ValueError, match="side 7"):
        reflect_planes(rng.random((2, 7, 7)), STAR)


def test_the_search_gives_the_same_canonical_ids():
    from ccengine.search import canonical_pieces

    rng = np.random.default_rng(8)
    boards = [GEO.start_board()] + [random_board(rng) for _ in range(10)]
    for board in boards:
        assert canonical_pieces(State(STAR, board, 0, 0)).tolist() == canonical_ids(STAR, board).tolist()
