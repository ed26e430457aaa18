"""The diamond rendering and the human move notation (ccengine.render)."""

from __future__ import annotations

import io
import re

import pytest

from ccengine.notation import NotationError, parse_position, start_position
from ccengine.reference import ReferenceState
from ccengine.render import (
    cell_name,
    format_move,
    parse_cell,
    parse_human_move,
    parse_human_path,
    render_board,
    render_position,
    use_color,
)
from ccengine.rules import DIRECTIONS, PASS, preset

PRESETS = ["cc49", "cc81", "small-4-1", "small-4-3", "small-5-6", "small-6-3"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def rc(n: int, r: int, c: int) -> int:
    return r * n + c


CC49_START = """\
 1        o
 2       o o
 3      o o o
 4     . . . .
 5    . . . . .
 6   . . . . . .
 7  . . . . . . .
 8   . . . . . .
 9    . . . . .
10     . . . .
11      x x x
12       x x
13        x"""


def test_start_position_diamond():
    rules = preset("cc49")
    assert render_board(rules, rules.geometry.start_board()) == CC49_START
    plain = render_board(rules, rules.geometry.start_board(), row_numbers=False)
    assert plain.splitlines()[0] == "      o" and plain.splitlines()[6] == ". . . . . . ."


@pytest.mark.parametrize("name", PRESETS)
def test_diamond_shape_and_hex_neighbours(name):
    rules = preset(name)
    n = rules.n
    # Render every cell's index on its own to find where it lands: (line, column).
    text = render_board(rules, [-1] * rules.cells, labels=True, row_numbers=False)
    lines = text.splitlines()
    assert len(lines) == 2 * n - 1
    right = [line[2 * n + 4 :] for line in lines]  # the index diamond, right of the board
    where: dict[int, tuple[int, int]] = {}
    for y, line in enumerate(right):
        for m in re.finditer(r"\d+", line):
            where[int(m.group())] = (y, m.end())
    assert sorted(where) == list(range(rules.cells))
    widths = [sum(1 for _ in re.finditer(r"\d+", line)) for line in right]
    assert widths == list(range(1, n + 1)) + list(range(n - 1, 0, -1))
    # Each hex neighbour is one row up/down or beside in the same row, one or two steps over.
    step = min(abs(where[1][1] - where[0][1]), abs(where[n][1] - where[0][1]))
    for i in range(rules.cells):
        for d in range(len(DIRECTIONS)):
            j = rules.geometry.step[i][d]
            if j < 0:
                continue
            dy, dx = where[j][0] - where[i][0], where[j][1] - where[i][1]
            assert (abs(dy), abs(dx)) in {(1, step), (0, 2 * step)}


def test_homes_top_and_bottom():
    for name in PRESETS:
        rules = preset(name)
        lines = render_board(rules, rules.geometry.start_board(), row_numbers=False).splitlines()
        t = rules.t
        assert all(set(line.split()) == {"o"} for line in lines[:t])
        assert all(set(line.split()) == {"x"} for line in lines[-t:])
        assert all(set(line.split()) == {"."} for line in lines[t:-t])


def test_last_move_highlight_and_labels():
    rules = preset("cc49")
    state = ReferenceState(rules)
    move = (rc(7, 4, 0), rc(7, 3, 0))  # 11.1 -> 10.1
    state.play(move)
    lines = render_board(rules, state.board, last_move=move).splitlines()
    assert lines[9] == "10     X . . ."
    assert lines[10] == "11      * x x"
    labelled = render_board(rules, state.board, labels=True).splitlines()
    assert labelled[6].endswith(" 0   8  16  24  32  40  48")
    assert labelled[12].endswith("42")


def test_colour_is_opt_in():
    rules = preset("small-4-3")
    board = rules.geometry.start_board()
    assert "\x1b" not in render_board(rules, board)
    coloured = render_board(rules, board, color=True, last_move=(rc(4, 2, 0), rc(4, 1, 0)))
    assert "\x1b[" in coloured
    plain = render_board(rules, board)
    assert [ANSI.sub("", line).rstrip() for line in coloured.splitlines()] == plain.splitlines()
    assert use_color(io.StringIO()) is False  # not a TTY


def test_render_position_header():
    rules = preset("small-4-3")
    text = render_position(rules, parse_position(rules, "..oo/...o/x.../xx.. o 7"))
    assert text.splitlines()[0] == "small-4-3: o (player 1) to move, ply 7"
    assert render_position(rules, start_position(rules)).splitlines()[0].startswith("small-4-3: x (player 0)")


# ---------------------------------------------------------------------------------------------
# Notation
# ---------------------------------------------------------------------------------------------


def test_cell_names_on_the_seed_board():
    rules = preset("cc49")
    assert cell_name(rules, rc(7, 6, 0)) == "13.1"  # player 0's tip, bottom
    assert cell_name(rules, rc(7, 0, 6)) == "1.1"  # player 1's tip, top
    assert cell_name(rules, rc(7, 0, 0)) == "7.1" and cell_name(rules, rc(7, 6, 6)) == "7.7"
    assert cell_name(rules, rc(7, 4, 5)) == "6.5"
    assert format_move(rules, (rc(7, 5, 0), rc(7, 3, 0))) == "12.1-10.1"
    assert format_move(rules, (rc(7, 5, 0), rc(7, 3, 0)), style="index") == "35-21"
    assert format_move(rules, PASS) == "pass"


def test_parse_human_move_forms():
    rules = preset("cc49")
    move = (35, 21)
    for text in ["12.1-10.1", " 12.1 - 10.1 ", "12.1 10.1", "12.1->10.1", "35-21", "35 21", "12.1-21", "35-10.1"]:
        assert parse_human_move(rules, text) == move, text
    assert parse_human_move(rules, "pass") == PASS and parse_human_move(rules, "PASS") == PASS
    assert parse_human_move(rules, [35, 21]) == move and parse_human_move(rules, [-1, -1]) == PASS


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "must be 'row.pos-row.pos'"),
        ("12.1", "must be 'row.pos-row.pos'"),
        ("12.1-10.1-9.1", "must be 'row.pos-row.pos'"),
        ("a-b", "must be 'row.pos-row.pos'"),
        ("12,1-10,1", "must be 'row.pos-row.pos'"),
        ("14.1-10.1", "row 14 is off the board"),
        ("0.1-10.1", "row 0 is off the board"),
        ("13.2-10.1", "row 13 has 1 cell"),
        ("7.8-7.1", "row 7 has 7 cells"),
        ("7.0-7.1", "positions 1..7"),
        ("35-49", "cell 49 is off the board"),
    ],
)
def test_parse_human_move_errors(text, message):
    with pytest.raises(NotationError, match=re.escape(message)):
        parse_human_move(preset("cc49"), text)


def test_notation_errors_for_cells():
    rules = preset("cc49")
    with pytest.raises(NotationError, match="off the board"):
        cell_name(rules, 49)
    with pytest.raises(NotationError, match="row.position"):
        parse_cell(rules, "x")
    with pytest.raises(NotationError, match="off the board"):
        format_move(rules, (0, 99), style="index")
    with pytest.raises(ValueError, match="style"):
        format_move(rules, (0, 1), style="fancy")


# --- the star ----------------------------------------------------------------------------------


def test_star_shape_neighbours_and_numbers():
    """The star drawn with its cell numbers beside it: 17 rows, within 80 columns, every number
    once, and every hex neighbour one row up or down half a cell over, or beside in the row."""
    rules = preset("star2")
    geo = rules.geometry
    text = render_board(rules, geo.start_board(), labels=True)
    lines = text.splitlines()
    assert len(lines) == 17 and max(map(len, lines)) <= 80
    board = [line[:25] for line in lines]
    assert [len(line.split()) for line in board] == [1, 2, 3, 4, 13, 12, 11, 10, 9, 10, 11, 12, 13, 4, 3, 2, 1]
    assert all(set(line.split()) == {"x"} for line in board[:4])
    assert all(set(line.split()) == {"o"} for line in board[-4:])
    assert "".join(board).count("x") == "".join(board).count("o") == 10
    where: dict[int, tuple[int, int]] = {}
    for y, line in enumerate(lines):
        for m in re.finditer(r"\d+", line[25:]):
            where[int(m.group())] = (y, m.end())
    assert sorted(where) == list(range(121))
    for i in range(rules.cells):
        for j in geo.step[i]:
            if j >= 0:
                dy, dx = where[j][0] - where[i][0], where[j][1] - where[i][1]
                assert (abs(dy), abs(dx)) in {(1, 2), (0, 4)}, (i, j)


def test_star_last_move_and_cell_names():
    rules = preset("star2")
    state = ReferenceState(rules)
    state.play((3, 16))
    lines = render_board(rules, state.board, last_move=(3, 16)).splitlines()
    assert lines[2] == "          * x x" and lines[4] == ". . . . . . X . . . . . ."
    assert cell_name(rules, 120) == "120"
    assert format_move(rules, (3, 16)) == "3-16" == format_move(rules, (3, 16), "index")
    assert parse_human_move(rules, "3 -> 16") == (3, 16)
    for text in ("1.1-2.1", "3-999"):
        with pytest.raises(NotationError):
            parse_human_move(rules, text)


def test_a_hop_chain_is_written_and_read_as_its_path_on_either_board():
    cc49, star = preset("cc49"), preset("star2")
    assert format_move(cc49, (35, 21, 7)) == "12.1-10.1-8.1" and format_move(cc49, (35, 21, 7), "index") == "35-21-7"
    assert parse_human_path(cc49, "12.1 -> 10.1 - 7") == (35, 21, 7)
    assert parse_human_path(cc49, "35 21") == (35, 21) and parse_human_path(cc49, "pass") == PASS
    assert format_move(star, (3, 16, 29)) == "3-16-29" == format_move(star, (3, 16, 29), "index")
    assert parse_human_path(star, "3-16-29") == (3, 16, 29)
    with pytest.raises(NotationError, match=re.escape("move '1.1-2.1': cell '1.1' must be a cell index 0..120")):
        parse_human_path(star, "1.1-2.1")
    with pytest.raises(NotationError, match="hop chain's path"):
        parse_human_path(cc49, "12.1")
    with pytest.raises(NotationError, match=re.escape("row 14 is off the board")):
        parse_human_path(cc49, "12.1-14.1")
