"""The seats' colours: six that people with any common colour blindness can tell apart.

They are the Okabe-Ito palette's (Okabe and Ito, "Color Universal Design"), which keeps its
colours distinct under protanopia, deuteranopia and tritanopia, less its black and one of its two
oranges. Each has a name, so that the status line, the results and the move list say "Blue", not
only show it. The page takes both from the server (``/api/presets/{name}``), never its own copy.
"""

from __future__ import annotations

__all__ = ["SEAT_COLOURS", "seat_name"]

#: ``(name, CSS colour)`` of seat 0..5.
SEAT_COLOURS: tuple[tuple[str, str], ...] = (
    ("Red", "#d55e00"),
    ("Blue", "#0072b2"),
    ("Green", "#009e73"),
    ("Yellow", "#f0e442"),
    ("Purple", "#cc79a7"),
    ("Sky", "#56b4e9"),
)


def seat_name(seat: int) -> str:
    """The colour name of ``seat`` ("Red" for seat 0)."""
    return SEAT_COLOURS[seat][0]
