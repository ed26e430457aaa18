"""The board as the page draws it: a point for every cell, the homes and goals of every seat.

Every cell gets a point ``(x, y)`` in units of one neighbour step (y grows downwards), taken from
the engine's geometry so that one drawing code serves both boards:

- the rhombus cell ``(r, c)`` sits at ``((r + c) / 2, (r - c) * sqrt(3) / 2)``: the diamond of
  ``ccengine.render``, player 1's home at the top, player 0's at the bottom;
- the star's axial cell ``(q, r)`` sits at ``(q + r / 2, r * sqrt(3) / 2)``: north (player 0's
  home) at the top.

The page turns the drawing so that the seat it plays from sits at the bottom.
"""

from __future__ import annotations

import math
from typing import Any

from ccengine import Rules

from .palette import SEAT_COLOURS

__all__ = ["board_info", "cell_points"]

_ROOT3_2 = math.sqrt(3) / 2


def cell_points(rules: Rules) -> list[tuple[float, float]]:
    """``(x, y)`` of every cell, in cell order (see the module docstring)."""
    geo = rules.geometry
    if geo.kind == "star":
        return [(q + r / 2, r * _ROOT3_2) for q, r in geo.coords]
    n = rules.n
    return [((r + c) / 2, (r - c) * _ROOT3_2) for r, c in (divmod(i, n) for i in range(rules.cells))]


def board_info(rules: Rules) -> dict[str, Any]:
    """What the page needs to draw the empty board of ``rules``: cell points, every seat's home
    and goal, its colour and name, the cell count and the move limit."""
    geo = rules.geometry
    seats = range(rules.players)
    return {
        "preset": rules.name,
        "kind": geo.kind,
        "players": rules.players,
        "cells": rules.cells,
        "points": [[round(x, 4), round(y, 4)] for x, y in cell_points(rules)],
        "homes": [sorted(int(c) for c in geo.home[p]) for p in seats],
        "goals": [sorted(int(c) for c in geo.goal(p)) for p in seats],
        "colours": [SEAT_COLOURS[p][1] for p in seats],
        "names": [SEAT_COLOURS[p][0] for p in seats],
        "max_plies": rules.max_plies,
    }
