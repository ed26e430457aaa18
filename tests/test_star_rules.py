"""The 121-hole star in the reference engine (RULES.md "The 121-hole star", preset ``star2``).

Geometry and numbering, the rules object's star options, COMPACT121 text, and every end-of-game
reason of star2 on hand-built positions, in RULES.md's order.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from ccengine.notation import (
    NotationError,
    Position,
    format_compact121,
    format_position,
    format_star_path,
    parse_compact121,
    parse_position,
    parse_star_path,
    start_position,
)
from ccengine.players import greedy_candidates
from ccengine.reference import (
    IllegalMoveError,
    ReferenceState,
    is_witness_path,
    legal_moves,
    move_path,
    piece_destinations,
)
from ccengine.rules import Rules, RulesError, preset
from ccengine.star import SEATS, StarGeometry

STAR2 = preset("star2")
GEO = STAR2.geometry


def cell(q: int, r: int) -> int:
    """The index of axial cell ``(q, r)``."""
    return GEO.index[(q, r)]


def cells(*qr: tuple[int, int]) -> list[int]:
    return [cell(q, r) for q, r in qr]


def row(r: int) -> list[int]:
    """The cells of row ``r``, west to east."""
    return sorted(i for i, (_, rr) in enumerate(GEO.coords) if rr == r)


def board_of(p0: Iterable[int], p1: Iterable[int]) -> tuple[int, ...]:
    """A board with exactly these pieces (ten each, on distinct cells)."""
    p0, p1 = list(p0), list(p1)
    assert len(p0) == len(p1) == 10 and len(set(p0) | set(p1)) == 20
    board = [-1] * GEO.cells
    for p, owned in ((0, p0), (1, p1)):
        for i in owned:
            board[i] = p
    return tuple(board)


#: Player 0's goal (the south point) and player 1's (the north point), in cell order.
SOUTH = sorted(GEO.goal(0))
NORTH = sorted(GEO.goal(1))
#: Ten cells in the middle of the board, far from both goals.
MIDDLE_A = row(0)[:9] + row(1)[:1]
MIDDLE_B = row(-1)[:9] + row(-2)[:1]


# ---------------------------------------------------------------------------------------------
# Geometry and numbering
# ---------------------------------------------------------------------------------------------


def test_numbering_rows_tips_and_points():
    assert GEO.cells == 121
    assert GEO.coords[0] == (4, -8) and GEO.coords[120] == (-4, 8)  # north tip, south tip
    widths = [len(row(r)) for r in range(-8, 9)]
    assert widths == [1, 2, 3, 4, 13, 12, 11, 10, 9, 10, 11, 12, 13, 4, 3, 2, 1]
    assert all(GEO.coords[i][1] <= GEO.coords[i + 1][1] for i in range(120))
    assert [len(p) for p in GEO.points] == [10] * 6
    assert GEO.points[0] == frozenset(range(10)) and GEO.points[3] == frozenset(range(111, 121))
    assert sum(1 for p in GEO.point if p == -1) == 61  # the central hexagon


def test_points_lie_where_their_names_say():
    north_east = [GEO.coords[i] for i in GEO.points[1]]
    assert all(q > 4 and r < 0 for q, r in north_east)
    south_west = [GEO.coords[i] for i in GEO.points[4]]
    assert all(q < -4 and r > 0 for q, r in south_west)


def test_neighbours_are_symmetric_and_six_inside():
    for i in range(GEO.cells):
        for d, j in enumerate(GEO.step[i]):
            if j >= 0:
                assert GEO.step[j][d ^ 1] == i  # directions 2j and 2j+1 are opposite
    degree = {i: sum(1 for j in GEO.step[i] if j >= 0) for i in range(GEO.cells)}
    hexagon = {i for i in range(GEO.cells) if GEO.point[i] == -1}
    corners = set(cells((4, -4), (4, 0), (0, 4), (-4, 4), (-4, 0), (0, -4)))
    assert len(corners) == 6 and all(degree[i] == 5 for i in corners)  # each faces a notch between points
    assert all(degree[i] == 6 for i in hexagon - corners)
    assert sorted(n for n in GEO.step[0] if n >= 0) == [1, 2]


@pytest.mark.parametrize("players", sorted(SEATS))
def test_seats_homes_and_goals(players):
    geo = StarGeometry(players)
    assert geo.players == players and geo.seats == SEATS[players]
    for p in range(players):
        assert geo.home[p] == geo.points[SEATS[players][p]]
        assert geo.goal(p) == geo.points[(SEATS[players][p] + 3) % 6]
        assert sum(1 for v in geo.start_board() if v == p) == 10
        tip = max(geo.home[p], key=lambda i: -geo.advance(p, i))
        assert geo.advance(p, tip) == 0 and max(geo.advance(p, i) for i in geo.goal(p)) == 16


def test_forward_distance_along_each_axis():
    six = StarGeometry(6)
    centre = six.index[(0, 0)]
    # One step towards each player's goal gains 1: south (r+1), south-west (q-1), north-west (s+1) ...
    towards_goal = {0: (0, 1), 1: (-1, 1), 2: (-1, 0), 3: (0, -1), 4: (1, -1), 5: (1, 0)}
    for p, (dq, dr) in towards_goal.items():
        assert six.forward_distance(p, (centre, six.index[(dq, dr)])) == 1
        assert six.forward_distance(p, (six.index[(dq, dr)], centre)) == -1


def test_reflection_keeps_the_two_player_homes():
    assert all(GEO.reflect(GEO.reflect(i)) == i for i in range(121))
    for p in (0, 1):
        assert {GEO.reflect(i) for i in GEO.home[p]} == GEO.home[p]
    assert {GEO.reflect(i) for i in GEO.points[1]} == GEO.points[5]


# ---------------------------------------------------------------------------------------------
# The rules object
# ---------------------------------------------------------------------------------------------


def test_star2_is_ccerl_2p10_v2():
    assert (STAR2.board, STAR2.players, STAR2.k, STAR2.cells) == ("star", 2, 10, 121)
    assert (STAR2.goal_lock, STAR2.repetition, STAR2.equal_turn, STAR2.max_plies) == ("chain", 3, True, 240)
    assert (STAR2.hops, STAR2.win_rule) == ("adjacent", "filled")
    assert Rules.from_dict(STAR2.to_dict()) == STAR2


@pytest.mark.parametrize(
    ("base", "changes", "words"),
    [
        ("cc49", {"goal_lock": "chain"}, "goal_lock='chain' needs board='star'"),
        ("cc49", {"repetition": 3}, "repetition=3 needs board='star'"),
        ("cc49", {"equal_turn": True}, "equal_turn=True needs board='star'"),
        ("cc49", {"players": 3}, "players=3 needs board='star'"),
        ("cc49", {"board": "hex"}, "board: must be one of 'rhombus', 'star', got 'hex'"),
        ("cc49", {"goal_lock": "yes"}, "goal_lock: must be one of False, True, 'chain', got 'yes'"),
        ("cc49", {"board": "star"}, "needs n=17 and k=10"),
        ("star2", {"players": 5}, "seats 2, 3, 4, 6 players"),
        ("star2", {"players": 3}, "equal_turn=True is a two-player rule; players=3 needs it off"),
        ("star3", {"equal_turn": True}, "equal_turn=True is a two-player rule"),
        ("star2", {"hops": "mirror"}, "adjacent hops only"),
        ("star2", {"repetition": 1}, "at least 2"),
        ("star2", {"progress_limit": 50}, "rhombus option"),
    ],
)
def test_bad_star_options_name_the_problem(base, changes, words):
    with pytest.raises(RulesError, match=words.replace("(", r"\(").replace(")", r"\)")):
        preset(base).replace(**changes)


@pytest.mark.parametrize("name", ["star3", "star4", "star6"])
def test_distance_adjudication_is_allowed_for_every_player_count(name):
    rules = preset(name).replace(adjudicate="distance", distance_margin=0)
    assert (rules.adjudicate, rules.distance_margin, rules.players) == ("distance", 0, int(name[-1]))


# ---------------------------------------------------------------------------------------------
# COMPACT121 text
# ---------------------------------------------------------------------------------------------


def test_compact121_round_trip_of_the_start():
    text = format_compact121(STAR2, start_position(STAR2))
    assert text == "0" * 10 + "." * 101 + "1" * 10 + " 0 0"
    assert parse_compact121(STAR2, text) == start_position(STAR2)
    assert parse_position(STAR2, text) == start_position(STAR2)  # the generic reader dispatches
    assert format_position(STAR2, Position(GEO.start_board(), 1, 17)).endswith(" 1 17")
    assert parse_compact121(STAR2, "0" * 10 + "." * 101 + "1" * 10 + " 1") == Position(GEO.start_board(), 1, 0)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("0" * 10 + "." * 100 + "1" * 10 + " 0", "has 120 characters, the star needs 121"),
        ("0" * 10 + "." * 102 + "1" * 10 + " 0", "has 122 characters"),
        ("0" * 9 + "." * 102 + "1" * 10 + " 0", "9 pieces of player 0, the star needs exactly 10"),
        ("0" * 10 + "." * 101 + "1" * 9 + "0 0", "11 pieces of player 0"),
        ("0" * 10 + "." * 101 + "1" * 10 + " 2", "player to move '2' is unknown; valid: 0..1"),
        ("0" * 10 + "." * 101 + "1" * 10 + " x", "player to move 'x' is unknown"),
        ("0" * 10 + "." * 100 + "2" + "1" * 10 + " 0", "cell 110 holds player 2, but the game has 2 players"),
        ("0" * 10 + "." * 100 + "x" + "1" * 10 + " 0", "cell 110: 'x' is not '.' or a player digit"),
        ("0" * 10 + "." * 101 + "1" * 10 + " 0 -3", "ply count -3 must be at least 0"),
        ("0" * 10 + "." * 101 + "1" * 10 + " 0 \u0663", "ply count"),  # an Arabic-Indic digit
        ("0" * 10 + "." * 101 + "1" * 10, "must be '<COMPACT121> <player> \\[ply\\]'"),
    ],
)
def test_bad_compact121_names_the_problem(text, words):
    with pytest.raises(NotationError, match=words):
        parse_compact121(STAR2, text)


def test_compact121_is_for_the_star_only():
    with pytest.raises(NotationError, match="for the star"):
        parse_compact121(preset("cc49"), "0" * 121 + " 0")


def test_star_moves_and_paths_as_text():
    assert parse_star_path(STAR2, "3-14") == (3, 14)
    assert parse_star_path(STAR2, "1-12-25") == (1, 12, 25)
    assert format_star_path([1, 12, 25]) == "1-12-25"
    for bad, words in (("3", "joined by '-'"), ("3-121", "at most 120"), ("3--4", "cell ''"), ("a-4", "'a'"), ("pass", "no pass")):
        with pytest.raises(NotationError, match=words):
            parse_star_path(STAR2, bad)


# ---------------------------------------------------------------------------------------------
# Moves: steps, chains, the chain goal lock, witness paths
# ---------------------------------------------------------------------------------------------


def test_start_moves():
    state = ReferenceState(STAR2)
    assert state.legal_moves()[:4] == [(3, 14), (3, 16), (4, 15), (4, 17)]


#: A chain into player 0's goal and out again: A hops over B into the goal at G, over C out to
#: O, and over D further to F. A piece H inside the goal can hop out over C to X and back in to Y.
A, B, G, C, O, D, F = cells((-2, 3), (-2, 4), (-2, 5), (-1, 4), (0, 3), (1, 3), (2, 3))
E, L = cells((-3, 6), (-4, 7))  # a hop inside the goal: G over E to L
H, X, W, Y = cells((-1, 5), (-1, 3), (-2, 4), (-3, 5))


def _chain_board(mover_at: int) -> tuple[int, ...]:
    # G and L stay empty; the other goal cells taken leave no second way out.
    p0 = [mover_at, B, C, D, E, *cells((-4, 5), (-4, 6), (-3, 7), (-4, 8)), MIDDLE_A[0]]
    return board_of(p0, MIDDLE_B)


def test_chain_goal_lock_stops_a_chain_leaving_the_goal():
    board = _chain_board(A)
    assert {G, O, F, L} <= set(piece_destinations(STAR2.replace(goal_lock=False), board, A))
    assert {G, O, F, L} <= set(piece_destinations(STAR2.replace(goal_lock=True), board, A))  # A starts outside
    locked = set(piece_destinations(STAR2, board, A))
    assert G in locked and L in locked  # into the goal, and on inside it
    assert O not in locked and F not in locked  # entered at G, it may not hop out again
    assert move_path(STAR2, board, (A, L)) == [A, G, L]
    with pytest.raises(IllegalMoveError):
        move_path(STAR2, board, (A, F))
    assert is_witness_path(STAR2.replace(goal_lock=False), board, [A, G, O, F])
    assert not is_witness_path(STAR2, board, [A, G, O, F])
    assert not is_witness_path(STAR2.replace(goal_lock=False), board, [A, G, O, G, L])  # a loop
    assert not is_witness_path(STAR2, board, [A, L])  # neither a step nor a hop


def test_chain_goal_lock_keeps_a_piece_in_its_goal():
    # H stands in the goal; over C it hops out to X, then over W back in to Y: legal with the
    # destination-only lock, not with the chain lock, which also forbids its steps out.
    p0 = [H, C, W, *SOUTH[4:], MIDDLE_A[0]]
    board = board_of(p0, MIDDLE_B)
    free = set(piece_destinations(STAR2.replace(goal_lock=False), board, H))
    dest_lock = set(piece_destinations(STAR2.replace(goal_lock=True), board, H))
    chain = set(piece_destinations(STAR2, board, H))
    assert X in free and Y in free and Y in dest_lock and X not in dest_lock
    assert Y not in chain and chain <= GEO.goal(0)
    assert any(n >= 0 and n not in GEO.goal(0) and board[n] == -1 for n in GEO.step[H])  # a step out existed
    assert move_path(STAR2.replace(goal_lock=True), board, (H, Y)) == [H, X, Y]


def test_every_witness_path_is_a_legal_chain():
    board = _chain_board(A)
    state = ReferenceState(STAR2, board, 0)
    for move in state.legal_moves():
        path = move_path(STAR2, board, move)
        assert (path[0], path[-1]) == move and is_witness_path(STAR2, board, path)


# ---------------------------------------------------------------------------------------------
# End of the game, in RULES.md's order
# ---------------------------------------------------------------------------------------------


def _finish(rules: Rules, p0: list[int], p1: list[int], move: tuple[int, int], to_move: int = 0) -> ReferenceState:
    state = ReferenceState(rules, board_of(p0, p1), to_move, 10)
    assert not state.is_terminal()
    state.play(move)
    return state


#: Player 0 one step from home: nine in the goal, the tenth beside its last empty cell.
P0_NEAR = [cell(-4, 4), *SOUTH[1:]]
P0_STEP_HOME = (cell(-4, 4), SOUTH[0])
#: Player 1 one step from home likewise (its goal's last empty cell is on its base row).
P1_NEAR = [cell(4, -4), *NORTH[:-1]]
P1_STEP_HOME = (cell(4, -4), NORTH[-1])


def test_all_ten_home_wins():
    state = _finish(STAR2, P0_NEAR, MIDDLE_B, P0_STEP_HOME)
    assert (state.result(), state.end_reason) == (1, "all_home")
    state = _finish(STAR2, MIDDLE_A, P1_NEAR, P1_STEP_HOME, to_move=1)
    assert (state.result(), state.end_reason) == (-1, "all_home")


def test_equal_turn_draw_when_player_1_finishes_at_once():
    assert P1_STEP_HOME[1] in GEO.step[P1_STEP_HOME[0]]
    state = _finish(STAR2, P0_NEAR, P1_NEAR, P0_STEP_HOME)
    assert (state.result(), state.end_reason) == (0, "equal_turn")
    state = _finish(STAR2.replace(equal_turn=False), P0_NEAR, P1_NEAR, P0_STEP_HOME)
    assert (state.result(), state.end_reason) == (1, "all_home")


def test_no_equal_turn_draw_when_player_1_cannot_finish_at_once():
    p1_far = [cell(0, 0), *NORTH[:-1]]  # nine home, the tenth too far for one move
    state = _finish(STAR2, P0_NEAR, p1_far, P0_STEP_HOME)
    assert (state.result(), state.end_reason) == (1, "all_home")


def test_both_home_is_a_draw():
    state = ReferenceState(STAR2, board_of(SOUTH, NORTH), 1)
    assert (state.result(), state.end_reason) == (0, "both_home")


def test_anti_block_wins_for_the_blocked_player():
    # Player 1 keeps one piece in its home (player 0's goal); player 0 fills the other nine cells.
    blocker = SOUTH[-1]
    p0 = [cell(-4, 4), *SOUTH[1:-1], MIDDLE_A[0]]
    p1 = [blocker, *MIDDLE_B[:9]]
    state = _finish(STAR2, p0, p1, P0_STEP_HOME)
    assert (state.result(), state.end_reason) == (1, "anti_block")
    state = _finish(STAR2.replace(win_rule="all_own"), p0, p1, P0_STEP_HOME)
    assert not state.is_terminal()


def test_anti_block_checks_player_0_first():
    p0 = [*SOUTH[:9], NORTH[0]]
    p1 = [*NORTH[1:], SOUTH[9]]
    for to_move in (0, 1):
        state = ReferenceState(STAR2, board_of(p0, p1), to_move)
        assert (state.result(), state.end_reason) == (1, "anti_block")


def _shuffle() -> list[tuple[int, int]]:
    """Four plies that bring the start position back: a step of each player, then both back."""
    there = (3, 14)
    back = (112, next(e for e in GEO.step[112] if e >= 0 and e not in GEO.points[3]))
    return [there, back, there[::-1], back[::-1]]


def test_third_repetition_draws():
    state = ReferenceState(STAR2)
    for move in _shuffle() * 2:
        assert not state.is_terminal()
        state.play(move)
    assert (state.result(), state.end_reason, state.ply) == (0, "repetition", 8)
    assert state.seen[state.key()] == 3
    state.undo()
    assert not state.is_terminal() and state.seen[(GEO.start_board(), 0)] == 2
    assert not ReferenceState(STAR2.replace(repetition=0)).seen  # off: no history kept


def test_repetition_history_travels_with_copies_and_undo():
    state = ReferenceState(STAR2)
    for move in _shuffle():
        state.play(move)
    copy = state.copy()
    copy.play((3, 14))
    assert state.seen[(GEO.start_board(), 0)] == 2 and sum(state.seen.values()) == 5
    while state.ply:
        state.undo()
    assert dict(state.seen) == {(GEO.start_board(), 0): 1}


def test_move_limit_draws():
    state = ReferenceState(STAR2, GEO.start_board(), 0, 239)
    state.play((3, 14))
    assert (state.result(), state.end_reason) == (0, "max_plies")
    assert ReferenceState(STAR2, GEO.start_board(), 0, 240).end_reason == "max_plies"


def test_no_legal_move_draws():
    # Player 1: nine pieces locked in its full goal (player 0's piece holds the tenth cell) and
    # one on the north-east tip, walled in. With anti-block on, the blocked goal wins first.
    tip = max(GEO.points[1], key=lambda i: GEO.coords[i][0])
    assert GEO.coords[tip] == (8, -4)
    wall = cells((7, -4), (7, -3), (6, -4), (6, -2))
    p0 = [NORTH[0], *wall, *MIDDLE_A[:5]]
    p1 = [tip, *NORTH[1:]]
    no_anti_block = STAR2.replace(win_rule="all_own")
    state = ReferenceState(no_anti_block, board_of(p0, p1), 1)
    assert (state.result(), state.end_reason, state.legal_moves()) == (0, "no_move", [])
    state = ReferenceState(STAR2, board_of(p0, p1), 1)
    assert (state.result(), state.end_reason) == (-1, "anti_block")


def test_a_finished_game_refuses_moves():
    state = _finish(STAR2, P0_NEAR, MIDDLE_B, P0_STEP_HOME)
    with pytest.raises(IllegalMoveError):
        state.play((MIDDLE_B[0], MIDDLE_B[0] + 1))


# ---------------------------------------------------------------------------------------------
# The baseline players on the star (forward distance along each player's axis)
# ---------------------------------------------------------------------------------------------


def test_greedy_picks_the_largest_forward_distance_then_the_least_advanced_piece():
    # From the start the back rows' hops over the front row gain 2 rows, more than any step.
    moves = ReferenceState(STAR2).legal_moves()
    hops = [m for m in moves if GEO.forward_distance(0, m) == 2]
    assert hops and greedy_candidates(STAR2, 0, moves) == hops
    # Player 1 runs the other way (its psi is a gain of -r): the same holds for it.
    p1_moves = legal_moves(STAR2, GEO.start_board(), 1)
    assert all(GEO.forward_distance(1, m) == 2 for m in greedy_candidates(STAR2, 1, p1_moves))
    # Two lone pieces can each step one row south; eight are packed deep in the goal. The tie goes
    # to the less advanced piece, the one further north.
    north, south = cell(0, -3), cell(0, 0)
    board = board_of([north, south, *SOUTH[:2], *SOUTH[4:]], MIDDLE_B)
    moves = legal_moves(STAR2, board, 0)
    assert max(GEO.forward_distance(0, m) for m in moves) == 1
    assert {s for s, _ in greedy_candidates(STAR2, 0, moves)} == {north}
