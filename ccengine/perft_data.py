"""Perft of the start position of every preset, agreed by both engines.

``START_PERFT[preset][d - 1]`` is perft(d) from the preset's start (RULES.md "Perft": a terminal
position is a leaf, a pass is a move). Every number was computed independently by the
pure-Python reference (``ccengine.reference.perft``) and by the compiled engine
(``ccengine._core.State.perft``), and they agree; docs/perft.json keeps both runs with timings.
"""

from __future__ import annotations

__all__ = ["START_PERFT", "STAR_START_PERFT"]

START_PERFT: dict[str, tuple[int, ...]] = {
    "cc49": (10, 100, 1720, 29584),
    "paper": (10, 100, 1780, 31684),
    "cc81": (14, 196, 4648),
    "small-4-1": (2, 4, 16, 64, 256),
    "small-5-1": (2, 4, 16, 64, 256),
    "small-6-1": (2, 4, 16, 64, 256),
    "small-4-3": (6, 36, 376, 3940, 40196),
    "small-5-3": (6, 36, 372, 3844, 39480),
    "small-6-3": (6, 36, 372, 3844, 39432),
    "small-4-6": (10, 82, 872, 8840, 87888),
    "small-5-6": (10, 100, 1746, 30934, 579754),
    "small-6-6": (10, 100, 1720, 29584, 545004),
}

#: perft(d) of the star's start (RULES.md "The 121-hole star"), from the pure-Python reference,
#: and the compiled engine agrees (tests/test_star_core.py, tests/test_star_multi.py). So early no
#: rule of the presets can act (no piece reaches a goal, no position occurs a third time), so these
#: are also the numbers under OpenSpiel's rules, and OpenSpiel's ``chinese_checkers`` agrees with
#: them (tests/test_star_openspiel.py: depths 1-4 for two players, 1-3 for three, four and six).
STAR_START_PERFT: dict[str, tuple[int, ...]] = {
    "star2": (14, 196, 4760, 115600),
    "star3": (14, 196, 2744, 66640),
    "star4": (14, 199, 2786, 39601),
    "star6": (14, 199, 2828, 40189),
}
