"""The strict readers of numbers, positions and moves as text (ccengine.notation)."""

from __future__ import annotations

import pytest

from ccengine import format_position, parse_move, parse_position, preset, start_position
from ccengine.notation import NotationError, excerpt, parse_int, parse_positive_float

RULES = preset("cc49")
START = format_position(RULES, start_position(RULES))


@pytest.mark.parametrize(
    "text, minimum, maximum, value",
    [("0", 0, 10, 0), ("10", 0, 10, 10), ("007", 0, 10, 7), ("-3", -5, 5, -3), (str(2**63 - 1), 0, 2**63 - 1, 2**63 - 1)],
)
def test_parse_int_reads_ascii_digits_in_range(text, minimum, maximum, value):
    assert parse_int(text, "n", minimum=minimum, maximum=maximum) == value


@pytest.mark.parametrize("text", ["²", "٣", "", " 5", "5 ", "+5", "1_000", "1e3", "0x10", "5.0", "- 3", "9" * 20,
                                  "9" * 5000, "--1"])
def test_parse_int_refuses_anything_else(text):
    with pytest.raises(NotationError, match=r"^n .* is not an integer in 0\.\.100$"):
        parse_int(text, "n", maximum=100)


def test_parse_int_names_the_bound_it_breaks():
    with pytest.raises(NotationError, match=r"^ply 2147483648 must be at most 200$"):
        parse_int("2147483648", "ply", maximum=200)
    with pytest.raises(NotationError, match=r"^n -6 must be at least -5$"):
        parse_int("-6", "n", minimum=-5, maximum=5)
    with pytest.raises(NotationError, match=r"^seed -1 must be at least 0$"):
        parse_int("-1", "seed", maximum=5)


@pytest.mark.parametrize("text, value", [("1", 1.0), ("0.5", 0.5), (".5", 0.5), ("2.", 2.0), ("1e3", 1000.0)])
def test_parse_positive_float(text, value):
    assert parse_positive_float(text, "t", maximum=1e6) == value


@pytest.mark.parametrize("text", ["0", "0.0", "-1", "+1", "nan", "inf", "1e400", "1_0", "²", "1e7", ""])
def test_parse_positive_float_refuses_signs_specials_and_out_of_range(text):
    with pytest.raises(NotationError, match=r"^t "):
        parse_positive_float(text, "t", maximum=1e6)


def test_excerpt_cuts_long_input():
    assert excerpt("abc") == "'abc'"
    shown = excerpt("x" * 10_000_000)
    assert len(shown) < 80 and "10000000 characters" in shown
    assert len(excerpt(list(range(100_000)))) < 50


@pytest.mark.parametrize("ply, words", [("2147483648", "at most 200"), ("201", "at most 200"), ("-1", "-1 must be at least 0"),
                                        ("²", "'²'"), ("+3", "'+3'")])
def test_parse_position_bounds_the_ply(ply, words):
    with pytest.raises(NotationError, match="ply count") as info:
        parse_position(RULES, START.replace(" 0", f" {ply}"))
    assert words in str(info.value)


def test_parse_position_accepts_plies_up_to_the_game_length():
    assert parse_position(RULES, START.replace(" 0", " 200")).ply == 200


def test_parse_position_error_shows_an_excerpt():
    with pytest.raises(NotationError) as info:
        parse_position(RULES, "x" * 1_000_000)
    assert len(str(info.value)) < 300


@pytest.mark.parametrize("text", ["٣-5", "²-3", "3-" + "9" * 5000, "1-2-3", [True, False], [1.0, 2.0], "+1-2"])
def test_parse_move_is_strict(text):
    with pytest.raises(NotationError) as info:
        parse_move(RULES, text)
    assert len(str(info.value)) < 300


def test_parse_move_still_reads_indices_and_pass():
    assert parse_move(RULES, "45-38") == (45, 38)
    assert parse_move(RULES, "45 38") == (45, 38)
    assert parse_move(RULES, [45, 38]) == (45, 38)
    assert parse_move(RULES, "pass") == (-1, -1)
    with pytest.raises(NotationError, match="off the board"):
        parse_move(RULES, "0-99")
