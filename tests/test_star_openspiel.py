"""The star's move generator against OpenSpiel's ``chinese_checkers`` (RULES.md "The 121-hole star").

OpenSpiel plays the same board with the same numbering and seats (2, 3, 4 or 6 players), but its
rules differ: no goal lock, no anti-block, no equal turns, no repetition, 1,000 moves, the first
player home wins at once (no end of the round), a blocked player passes. With those options off
here (:data:`OPEN_RULES`, :func:`open_rules`) the legal moves must agree exactly. OpenSpiel's actions are single steps and
single hops, ``action = cell * 6 + direction`` (directions up-left, up-right, left, right,
down-left, down-right on its doubled-column drawing), a chain being several actions of one
player ended by the pass action 726 or by running out of hops; a move here is the set of
``(start, end)`` pairs such a sequence reaches.
"""

from __future__ import annotations

import random

import pyspiel  # open-spiel, pinned in the test extra
import pytest

from ccengine.perft_data import STAR_START_PERFT
from ccengine.reference import ReferenceState, is_witness_path, move_path, perft
from ccengine.rules import preset

#: star2 with every rule OpenSpiel lacks turned off.
OPEN_RULES = preset("star2").replace(
    goal_lock=False, win_rule="all_own", equal_turn=False, repetition=0, max_plies=1000, name="star2-openspiel"
)
OPEN_PASS = 726
#: OpenSpiel's direction index of each unit axial offset (dq, dr).
OPEN_DIRECTION = {(0, -1): 0, (1, -1): 1, (-1, 0): 2, (1, 0): 3, (-1, 1): 4, (0, 1): 5}
#: perft of the star's start with OPEN_RULES: star2's own (no star2 rule can act that early).
START_PERFT_OPEN = STAR_START_PERFT["star2"]


def open_rules(players: int):
    """The star of ``players`` players with every rule OpenSpiel lacks turned off."""
    if players == 2:
        return OPEN_RULES
    return preset(f"star{players}").replace(
        goal_lock=False, win_rule="all_own", repetition=0, max_plies=1000, name=f"star{players}-openspiel"
    )


def _open_state(players: int = 2):
    return pyspiel.load_game("chinese_checkers", {"players": players, "max_moves": 1000}).new_initial_state()


def _landing(state, action: int) -> int:
    """The cell an OpenSpiel action lands on: ``'s->e'`` (step) or ``'s=>e'`` (hop)."""
    text = state.action_to_string(state.current_player(), action)
    return int(text.replace("=>", "->").split("->")[1])


def _open_moves(state) -> dict[tuple[int, int], object]:
    """Every ``(start, end)`` the player to move reaches with one turn of actions, and a state after it."""
    player = state.current_player()
    moves: dict[tuple[int, int], object] = {}

    def expand(st, start: int) -> None:
        for action in st.legal_actions():
            if action == OPEN_PASS:
                continue  # ends the chain where it stands: already recorded
            end = _landing(st, action)
            child = st.clone()
            child.apply_action(action)
            origin = action // 6 if start < 0 else start
            if (origin, end) not in moves:
                turn_over = child.is_terminal() or child.current_player() != player
                if turn_over:
                    moves[(origin, end)] = child
                else:
                    done = child.clone()
                    done.apply_action(OPEN_PASS)
                    moves[(origin, end)] = done
            if not (child.is_terminal() or child.current_player() != player):
                expand(child, origin)

    expand(state, -1)
    return moves


def _open_perft(state, depth: int) -> int:
    if depth == 0 or state.is_terminal():
        return 1
    moves = _open_moves(state)
    if depth == 1:
        return len(moves)
    return sum(_open_perft(child, depth - 1) for child in moves.values())


def _open_actions(rules, board, move: tuple[int, int]) -> list[int]:
    """OpenSpiel's actions for a move: its witness path, leg by leg (a pass ends a chain early)."""
    geo = rules.geometry
    path = move_path(rules, board, move)
    actions = []
    for x, y in zip(path, path[1:]):
        (qx, rx), (qy, ry) = geo.coords[x], geo.coords[y]
        dq, dr = qy - qx, ry - rx
        length = max(abs(dq), abs(dr))
        actions.append(x * 6 + OPEN_DIRECTION[(dq // length, dr // length)])
    return actions


def _play_both(state: ReferenceState, open_state, move: tuple[int, int]) -> None:
    player = open_state.current_player()
    for action in _open_actions(state.rules, state.board, move):
        open_state.apply_action(action)
    if not open_state.is_terminal() and open_state.current_player() == player:
        open_state.apply_action(OPEN_PASS)  # the chain could go on: stop it where the move ends
    state.play(move)


def _drawing(rules, board) -> str:
    """The board drawn as OpenSpiel's ``ToString`` draws it, from our axial coordinates.

    Row ``r + 8``, column ``2q + r + 12`` (doubled columns, 25 wide), players shown as 1..6.
    """
    geo = rules.geometry
    lines = [[" "] * 25 for _ in range(17)]
    for i, (q, r) in enumerate(geo.coords):
        lines[r + 8][2 * q + r + 12] = "." if board[i] == -1 else str(board[i] + 1)
    return "\n".join("".join(line).rstrip() for line in lines)


def _open_board(open_state) -> list[int]:
    """The owner of each cell, read from OpenSpiel's observation tensor (player 0's view: its
    planes are the players in order, then the empty cells)."""
    obs = open_state.observation_tensor(0)
    players = open_state.num_players()
    return [next((p for p in range(players) if obs[p * 121 + i]), -1) for i in range(121)]


def test_numbering_agrees_with_openspiel_board():
    ours = ReferenceState(OPEN_RULES)
    theirs = _open_state()
    assert str(theirs) == _drawing(OPEN_RULES, ours.board) + "\nPlayer: 0"
    assert _open_board(theirs) == list(ours.board)


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_start_perft_agrees_with_openspiel(depth):
    ours = perft(ReferenceState(OPEN_RULES), depth)
    assert ours == START_PERFT_OPEN[depth - 1]
    assert _open_perft(_open_state(), depth) == ours


def _forward_biased(state: ReferenceState, moves: list[tuple[int, int]], rng: random.Random) -> tuple[int, int]:
    """Mostly a move of largest forward distance (so games reach crowded goals), sometimes any."""
    if rng.random() < 0.3:
        return rng.choice(moves)
    geo = state.rules.geometry
    best = max(geo.forward_distance(state.to_move, m) for m in moves)
    return rng.choice([m for m in moves if geo.forward_distance(state.to_move, m) == best])


def test_legal_moves_agree_on_1000_random_positions():
    rng = random.Random(20240601)
    compared = 0
    while compared < 1000:
        ours, theirs = ReferenceState(OPEN_RULES), _open_state()
        while not ours.is_terminal():
            moves = ours.legal_moves()
            open_moves = _open_moves(theirs)
            assert set(moves) == set(open_moves), f"ply {ours.ply}: {sorted(set(moves) ^ set(open_moves))}"
            assert _open_board(theirs) == list(ours.board)
            compared += 1
            _play_both(ours, theirs, _forward_biased(ours, moves, rng))
        assert theirs.is_terminal() == (ours.end_reason == "all_home")
        if ours.end_reason == "all_home":
            winner = 0 if ours.result() == 1 else 1
            assert theirs.returns()[winner] == 1.0


def test_witness_paths_are_openspiel_chains():
    """Every move of a crowded mid-game position: its witness path is legal here and in OpenSpiel."""
    rng = random.Random(7)
    ours, theirs = ReferenceState(OPEN_RULES), _open_state()
    for _ in range(60):
        _play_both(ours, theirs, _forward_biased(ours, ours.legal_moves(), rng))
    hops = 0
    for move in ours.legal_moves():
        path = move_path(OPEN_RULES, ours.board, move)
        assert is_witness_path(OPEN_RULES, ours.board, path)
        hops += len(path) > 2
        copy_ours, copy_theirs = ours.copy(), theirs.clone()
        _play_both(copy_ours, copy_theirs, move)
        assert _open_board(copy_theirs) == list(copy_ours.board)
    assert hops > 0  # the position has chains of several hops, so the paths were exercised


# ---------------------------------------------------------------------------------------------
# Three, four and six players
# ---------------------------------------------------------------------------------------------

MULTI = (3, 4, 6)


@pytest.mark.parametrize("players", MULTI)
def test_numbering_and_seats_agree_with_openspiel(players: int):
    rules = open_rules(players)
    ours, theirs = ReferenceState(rules), _open_state(players)
    assert str(theirs) == _drawing(rules, ours.board) + "\nPlayer: 0"
    assert _open_board(theirs) == list(ours.board)


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("players", MULTI)
def test_multi_player_start_perft_agrees_with_openspiel(players: int, depth: int):
    ours = perft(ReferenceState(open_rules(players)), depth)
    assert ours == STAR_START_PERFT[f"star{players}"][depth - 1]
    assert _open_perft(_open_state(players), depth) == ours


def compare_random_games(players: int, positions: int, seed: int) -> int:
    """Play forward-biased games in both engines until ``positions`` positions compared: the
    legal moves and boards agree at every one. Returns the number of positions compared."""
    rules, rng, compared = open_rules(players), random.Random(seed), 0
    while compared < positions:
        ours, theirs = ReferenceState(rules), _open_state(players)
        # OpenSpiel ends the game when the first player is home; ours at the end of that round.
        while not ours.is_terminal() and not theirs.is_terminal() and compared < positions:
            assert theirs.current_player() == ours.to_move
            moves = ours.legal_moves()
            open_moves = _open_moves(theirs)
            assert set(moves) == set(open_moves), f"ply {ours.ply}: {sorted(set(moves) ^ set(open_moves))}"
            assert _open_board(theirs) == list(ours.board)
            compared += 1
            _play_both(ours, theirs, _forward_biased(ours, moves, rng))
        if theirs.is_terminal() and not ours.is_terminal():
            winner = max(range(players), key=lambda p: theirs.returns()[p])
            assert all(ours.board[i] == winner for i in rules.geometry.goal(winner))
    return compared


@pytest.mark.parametrize("players", MULTI)
def test_multi_player_legal_moves_agree_on_300_random_positions(players: int):
    """More positions: ``python -c 'import test_star_openspiel as t; t.compare_random_games(6, 5000, 1)'``
    from tests/."""
    assert compare_random_games(players, 300, 20261124 + players) == 300
