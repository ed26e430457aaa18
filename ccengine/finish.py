"""Steps left to finish: how many single steps a player's pieces need, at the least, to fill the
cells of its goal that no other player holds. Hops are ignored, so it is a measure of progress, not
the plies left; unlike the rows of ``forward_distance`` it counts sideways steps too.

It is a minimum-cost assignment of the player's pieces to those goal cells, the cost of a pair
being the shortest walk between them on the board. The search's ``finish`` rule
(``ccengine.search.SearchConfig.finish``) plays the searched move that lowers it the most when a
game is won, so a piece beside a hole in the goal walks to it instead of shuffling.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from .rules import Rules

__all__ = ["assignment_cost", "step_distances", "steps_to_finish"]


@lru_cache(maxsize=8)
def step_distances(rules: Rules) -> np.ndarray:
    """int32 ``[cells, cells]``: single steps between every two cells of the board (empty board)."""
    geometry: Any = rules.geometry
    cells = geometry.cells
    out = np.full((cells, cells), -1, dtype=np.int32)
    for start in range(cells):
        out[start, start] = 0
        queue = deque([start])
        while queue:
            cell = queue.popleft()
            for nxt in geometry.step[cell]:
                if nxt >= 0 and out[start, nxt] < 0:
                    out[start, nxt] = out[start, cell] + 1
                    queue.append(nxt)
    out.setflags(write=False)
    return out


def assignment_cost(cost: np.ndarray) -> int:
    """The least total cost of giving every row of ``cost`` (``n x m``, ``n <= m``) its own
    column: the Hungarian method with potentials, O(n^2 m)."""
    n, m = cost.shape
    if n == 0:
        return 0
    if n > m:
        raise ValueError(f"{n} rows cannot each get their own of {m} columns")
    inf = float("inf")
    u, v = [0.0] * (n + 1), [0.0] * (m + 1)
    match = [0] * (m + 1)  # match[j]: the row (1-based) holding column j; column 0 is the row being placed
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        match[0], j0 = i, 0
        least, used = [inf] * (m + 1), [False] * (m + 1)
        while match[j0]:
            used[j0] = True
            i0, delta, j1 = match[j0], inf, 0
            for j in range(1, m + 1):
                if not used[j]:
                    reduced = cost[i0 - 1, j - 1] - u[i0] - v[j]
                    if reduced < least[j]:
                        least[j], way[j] = reduced, j0
                    if least[j] < delta:
                        delta, j1 = least[j], j
            for j in range(m + 1):
                if used[j]:
                    u[match[j]] += delta
                    v[j] -= delta
                else:
                    least[j] -= delta
            j0 = j1
        while j0:
            j1 = way[j0]
            match[j0] = match[j1]
            j0 = j1
    return int(sum(cost[match[j] - 1, j - 1] for j in range(1, m + 1) if match[j]))


def steps_to_finish(rules: Rules, pieces: Sequence[int], others: Sequence[int], player: int) -> int:
    """The least single steps that bring ``player``'s ``pieces`` onto every cell of its goal that
    no piece of ``others`` (the other players' cells) stands on."""
    taken = set(int(c) for c in others)
    open_goal = [c for c in sorted(rules.geometry.goal(player)) if c not in taken]
    mine = [int(c) for c in pieces]
    distances = step_distances(rules)
    return assignment_cost(distances[np.ix_(open_goal, mine)])
