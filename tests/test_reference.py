"""The reference engine against hand-checked positions: every rule of docs/RULES.md."""

import pytest

from ccengine import (
    IllegalMoveError,
    NotationError,
    ReferenceState,
    RulesError,
    format_position,
    parse_move,
    parse_position,
    preset,
)
from ccengine.reference import move_path, perft


def state_of(rules, text):
    pos = parse_position(rules, text)
    return ReferenceState(rules, pos.board, pos.to_move, pos.ply)


def cell(rules, r, c):
    return r * rules.n + c


# --- presets and options -----------------------------------------------------------------


def test_presets_match_rules_md():
    assert preset("cc49").options() == preset("cc49").replace(name="x").options()
    paper = preset("paper")
    assert (paper.n, paper.k, paper.hops, paper.win_rule, paper.max_plies) == (7, 6, "mirror", "all_own", 100)
    cc81 = preset("cc81")
    assert (cc81.n, cc81.k, cc81.hops, cc81.win_rule, cc81.max_plies) == (9, 10, "adjacent", "filled", 200)
    small = preset("small-5-3")
    assert (small.n, small.k) == (5, 3)


@pytest.mark.parametrize("name", ["cc50", "small-3-3", "small-7-6", "small-5-4", "", "small-5-3x"])
def test_unknown_presets_are_rejected_with_the_valid_names(name):
    with pytest.raises(RulesError, match="valid|small boards"):
        preset(name)


@pytest.mark.parametrize(
    "options",
    [{"hops": "long"}, {"win_rule": "most"}, {"max_plies": 0}, {"adjudicate": "score"}, {"k": 5}, {"n": 3, "k": 6}],
)
def test_invalid_options_are_rejected(options):
    with pytest.raises(RulesError):
        preset("cc49").replace(**options)


def test_unknown_option_is_rejected():
    with pytest.raises(RulesError, match="^colour: unknown key; valid: "):
        preset("cc49").replace(colour="red")


def test_rules_round_trip_through_dict():
    rules = preset("paper").replace(progress_limit=100, adjudicate="distance")
    assert type(rules).from_dict(rules.to_dict()) == rules


# --- start positions and perft ------------------------------------------------------------


def test_start_position_text_of_small_4_3():
    rules = preset("small-4-3")
    assert format_position(rules, parse_position(rules, "..oo/...o/x.../xx.. x 0")) == "..oo/...o/x.../xx.. x 0"
    assert ReferenceState(rules).board == parse_position(rules, "..oo/...o/x.../xx.. x").board


def test_perft_counts_a_terminal_position_once():
    rules = preset("small-4-1")
    # x on (1,3) can step into its goal (0,3) and win: that leaf is not expanded further.
    state = state_of(rules, ".o../...x/..../.... x")
    win = (cell(rules, 1, 3), cell(rules, 0, 3))
    assert win in state.legal_moves()
    expected = 0
    for move in state.legal_moves():
        state.play(move)
        expected += 1 if move == win else perft(state, 2)
        assert state.is_terminal() == (move == win)
        state.undo()
    assert perft(state, 3) == expected


# --- moves -------------------------------------------------------------------------------


def test_steps_and_adjacent_hop_chains():
    rules = preset("small-5-1")
    # x on (4,0), o on (3,0): x may hop north to (2,0) or step east; (3,0) is occupied.
    state = state_of(rules, "...../...../...../o..../x.... x")
    moves = set(state.legal_moves())
    x = cell(rules, 4, 0)
    assert (x, cell(rules, 2, 0)) in moves  # hop north over (3,0)
    assert (x, cell(rules, 4, 1)) in moves  # step east
    assert (x, cell(rules, 3, 0)) not in moves  # occupied
    assert move_path(rules, state.board, (x, cell(rules, 2, 0))) == [x, cell(rules, 2, 0)]


def test_hop_chain_changes_direction_and_never_lands_on_start():
    rules = preset("small-5-3")
    # x on (4,2) hops north over (3,2) to (2,2), then west over (2,1) to (2,0).
    text = "..o../....o/.o.../..x../.xx.. x"
    state = state_of(rules, text)
    s = cell(rules, 4, 2)
    moves = set(state.legal_moves())
    assert (s, cell(rules, 2, 2)) in moves
    assert (s, cell(rules, 2, 0)) in moves
    assert move_path(rules, state.board, (s, cell(rules, 2, 0))) == [s, cell(rules, 2, 2), cell(rules, 2, 0)]
    assert all(a != b for a, b in moves)


def test_mirror_hop_over_a_distant_piece():
    paper = preset("paper").replace(k=1, n=5, win_rule="all_own")
    # x on (4,0), o on (2,0): distance 2, cells (1,0) and (0,0) empty -> lands on (0,0).
    state = state_of(paper, "...../...../o..../...../x.... x")
    assert (cell(paper, 4, 0), cell(paper, 0, 0)) in state.legal_moves()
    adjacent = paper.replace(hops="adjacent")
    state = state_of(adjacent, "...../...../o..../...../x.... x")
    assert (cell(paper, 4, 0), cell(paper, 0, 0)) not in state.legal_moves()


def test_goal_lock_keeps_a_goal_piece_in_the_goal():
    rules = preset("small-5-3").replace(goal_lock=True)
    text = "...x./....o/..x.o/o..../x.... x"
    g = cell(rules, 0, 3)  # an x piece already inside its goal
    locked = {e for s, e in state_of(rules, text).legal_moves() if s == g}
    free = {e for s, e in state_of(rules.replace(goal_lock=False), text).legal_moves() if s == g}
    assert locked and locked <= set(rules.geometry.goal(0))
    assert free - set(rules.geometry.goal(0))
    assert locked == free & set(rules.geometry.goal(0))


def test_illegal_move_is_refused_and_changes_nothing():
    state = ReferenceState(preset("cc49"))
    before = (state.board, state.to_move, state.ply)
    with pytest.raises(IllegalMoveError, match="not legal"):
        state.play((0, 1))
    assert (state.board, state.to_move, state.ply) == before


def test_pass_is_illegal_while_a_move_exists():
    state = ReferenceState(preset("small-4-3"))
    with pytest.raises(IllegalMoveError):
        state.play((-1, -1))


# --- end of game ---------------------------------------------------------------------------


def test_filled_rule_counts_opponent_pieces_in_the_goal():
    rules = preset("small-4-3")
    # Goal of x is (0,2),(0,3),(1,3). o sits on (0,3); x fills the rest by stepping (1,2)->(0,2)?
    # (1,2)-(0,2) are neighbours (dr=-1, dc=0).
    state = state_of(rules, "...o/..xx/ox../o... x")
    move = (cell(rules, 1, 2), cell(rules, 0, 2))
    assert move in state.legal_moves()
    state.play(move)
    assert state.result() == 1


def test_all_own_rule_needs_every_own_piece():
    rules = preset("small-4-3").replace(win_rule="all_own")
    state = state_of(rules, "...o/..xx/ox../o... x")
    state.play((cell(rules, 1, 2), cell(rules, 0, 2)))
    assert state.result() is None


def test_given_position_is_judged_as_if_the_other_side_just_moved():
    rules = preset("small-4-3")
    done = state_of(rules, "..xx/...x/o.../oo.. o")
    assert done.is_terminal() and done.result() == 1 and done.legal_moves() == []


def test_max_plies_draw_and_distance_adjudication():
    rules = preset("small-4-3").replace(max_plies=3)
    state = ReferenceState(rules)
    for _ in range(3):
        state.play(state.legal_moves()[0])
    assert state.result() == 0
    adj = preset("small-4-3").replace(max_plies=1, adjudicate="distance", distance_margin=0)
    state = ReferenceState(adj)
    # x advances one row: advance 1 > margin 0 -> x wins by adjudication
    fwd = [m for m in state.legal_moves() if adj.geometry.forward_distance(0, m) == 1][0]
    state.play(fwd)
    assert state.result() == 1


def test_progress_limit_ends_a_stalled_game():
    rules = preset("small-4-3").replace(progress_limit=4)
    state = ReferenceState(rules)
    # Shuffle one piece of each side back and forth: nobody ever enters its goal.
    shuffle = [(8, 4), (2, 6), (4, 8), (6, 2)]
    for i, move in enumerate(shuffle):
        assert not state.is_terminal()
        state.play(move)
    assert state.is_terminal() and state.result() == 0 and state.ply == 4


# --- text -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ("..oo/...o/x.../xx..", "must be"),
        ("..oo/...o/x... x", "rows"),
        ("..oo/...o/x.../xx. x", "cells"),
        ("..oo/...o/x.../xx.q x", "not a cell"),
        ("..oo/...o/x.../xx.. y", "side to move"),
        ("..oo/...o/x.../xx.. x -1", "ply"),
        ("..oo/...o/xx../xx.. x", "exactly 3"),
    ],
)
def test_malformed_positions_say_what_is_wrong(text, message):
    with pytest.raises(NotationError, match=message):
        parse_position(preset("small-4-3"), text)


def test_moves_as_text_and_json():
    rules = preset("cc49")
    assert parse_move(rules, [42, 35]) == (42, 35)
    assert parse_move(rules, "42-35") == (42, 35)
    assert parse_move(rules, [-1, -1]) == (-1, -1)
    assert parse_move(rules, "pass") == (-1, -1)
    for bad in ([42], [42, 49], "a-b", [1.5, 2], "42"):
        with pytest.raises(NotationError):
            parse_move(rules, bad)
