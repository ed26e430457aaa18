"""The 121-hole star's geometry (RULES.md "The 121-hole star"): cells, neighbours, points, seats.

Cells are axial coordinates ``(q, r)`` with ``s = -q - r``. The star is the union of the two big
triangles ``min(q, r, s) >= -t`` and ``max(q, r, s) <= t`` (``t = 4``: points of side 4, 10 cells
each): the hexagon ``max(|q|, |r|, |s|) <= t`` plus six points, 121 cells. Cells are
numbered by ``r`` (top row first), then ``q`` (left to right): cell 0 is the north tip, the last
cell the south tip. This module knows nothing of the rules; ``ccengine.rules`` builds a
:class:`StarGeometry` for a ``Rules`` with ``board="star"``.

Naming: a *point* is one of the six triangles (``0`` north, ``1`` north-east, ``2`` south-east,
``3`` south, ``4`` south-west, ``5`` north-west, OpenSpiel's order); a *seat* is the point a
player starts on. Player ``p`` starts on ``SEATS[players][p]`` and its goal is the opposite point.
"""

from __future__ import annotations

__all__ = ["POINT_NAMES", "SEATS", "STAR_DIRECTIONS", "StarGeometry"]

#: The six axial neighbour offsets ``(dq, dr)``; directions ``2j`` and ``2j + 1`` are opposite.
STAR_DIRECTIONS: tuple[tuple[int, int], ...] = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, -1), (-1, 1))

#: Point ``i``'s name; the opposite of point ``i`` is ``(i + 3) % 6``.
POINT_NAMES: tuple[str, ...] = ("north", "north-east", "south-east", "south", "south-west", "north-west")

#: The points the players sit at, by number of players (OpenSpiel's seats): player p at ``[p]``.
SEATS: dict[int, tuple[int, ...]] = {2: (0, 3), 3: (0, 2, 4), 4: (0, 1, 3, 4), 6: (0, 1, 2, 3, 4, 5)}


def _point_of(q: int, r: int, t: int) -> int:
    """The point holding axial cell ``(q, r)`` of the star with points of side ``t``; -1 in the hexagon."""
    s = -q - r
    for point, outside in enumerate((r < -t, q > t, s < -t, r > t, q < -t, s > t)):
        if outside:
            return point
    return -1


def _axis(point: int, q: int, r: int) -> int:
    """The progress coordinate of a trip from ``point`` to its opposite point.

    North to south it is ``r``, north-east to south-west ``-q``, south-east to north-west ``s``;
    the reverse trips negate them. It equals ``-2t`` at the start point's tip.
    """
    s = -q - r
    return (r, -q, s, -r, q, -s)[point]


class StarGeometry:
    """Cells, neighbours, points, homes and goals of the star for ``players`` players.

    The interface the rules engines and players use is the rhombus
    :class:`ccengine.rules.Geometry`'s: ``cells``, ``k``, ``players``, ``seats``, ``step``,
    ``offset``, ``home``, ``goal``, ``forward_distance``, ``advance`` (and its table
    ``advances``), ``start_board``, ``reflect``, ``turn``, ``drawn``, ``grid`` and ``grid_side``.
    The star adds ``coords``, ``index``, ``point`` and ``points``.
    """

    kind = "star"

    def __init__(self, players: int = 2, t: int = 4) -> None:
        if players not in SEATS:
            raise ValueError(f"the star seats {', '.join(map(str, SEATS))} players, not {players}")
        self.players = players
        self.t = t
        self.k = t * (t + 1) // 2
        #: ``seats[p]``: the point player p starts on.
        self.seats: tuple[int, ...] = SEATS[players]
        span = range(-2 * t, 2 * t + 1)
        star = [(q, r) for r in span for q in span if _in_star(q, r, t)]
        #: ``coords[i]``: the axial ``(q, r)`` of cell i (sorted by r, then q).
        self.coords: tuple[tuple[int, int], ...] = tuple(sorted(star, key=lambda qr: (qr[1], qr[0])))
        #: ``index[(q, r)]``: the cell at axial ``(q, r)``.
        self.index: dict[tuple[int, int], int] = {qr: i for i, qr in enumerate(self.coords)}
        self.cells = len(self.coords)
        #: ``point[i]``: the point holding cell i, -1 for the central hexagon.
        self.point: tuple[int, ...] = tuple(_point_of(q, r, t) for q, r in self.coords)
        #: ``points[j]``: the cells of point j.
        self.points: tuple[frozenset[int], ...] = tuple(
            frozenset(i for i in range(self.cells) if self.point[i] == j) for j in range(6)
        )
        #: ``home[p]``: the cells where player p starts.
        self.home: tuple[frozenset[int], ...] = tuple(self.points[seat] for seat in self.seats)
        self._goals: tuple[frozenset[int], ...] = tuple(self.points[(seat + 3) % 6] for seat in self.seats)
        #: ``step[i][d]``: the neighbour of cell i in direction ``STAR_DIRECTIONS[d]``, or -1 off the board.
        self.step: tuple[tuple[int, ...], ...] = tuple(
            tuple(self.offset(i, d, 1) for d in range(len(STAR_DIRECTIONS))) for i in range(self.cells)
        )
        #: ``advances[p][i] == advance(p, i)``, as a table for the players' inner loops.
        self.advances: tuple[tuple[int, ...], ...] = tuple(
            tuple(self.advance(p, i) for i in range(self.cells)) for p in range(players)
        )
        #: ``drawn[i]``: where cell i is drawn, ``(row, column)``: one row per ``r`` (north at the
        #: top), columns in half-cells (``2q + r``).
        self.drawn: tuple[tuple[int, int], ...] = tuple((r, 2 * q + r) for q, r in self.coords)
        #: ``grid[i]``: cell i's element ``row * grid_side + col`` of the square matrix of the hex
        #: axes that holds the star, ``-2t <= q, r <= 2t``: ``(r + 2t, q + 2t)``.
        self.grid_side = 4 * t + 1
        self.grid: tuple[int, ...] = tuple((r + 2 * t) * self.grid_side + (q + 2 * t) for q, r in self.coords)

    def goal(self, player: int) -> frozenset[int]:
        """The cells player ``player`` must fill: the point opposite its seat."""
        return self._goals[player]

    def offset(self, cell: int, direction: int, distance: int) -> int:
        """The cell ``distance`` steps from ``cell`` along ``STAR_DIRECTIONS[direction]``, or -1."""
        dq, dr = STAR_DIRECTIONS[direction]
        q, r = self.coords[cell]
        return self.index.get((q + dq * distance, r + dr * distance), -1)

    def axis(self, player: int, cell: int) -> int:
        """Player ``player``'s progress coordinate of ``cell`` (RULES.md: its gain is ``psi``)."""
        q, r = self.coords[cell]
        return _axis(self.seats[player], q, r)

    def forward_distance(self, player: int, move: tuple[int, int]) -> int:
        """``psi``: how far a move advances its piece along the mover's progress axis."""
        s, e = move
        return self.axis(player, e) - self.axis(player, s)

    def advance(self, player: int, cell: int) -> int:
        """Rows a piece of ``player`` on ``cell`` is ahead of its home's tip."""
        return self.axis(player, cell) + 2 * self.t

    def start_board(self) -> tuple[int, ...]:
        """The start position's board: each player fills its home, the rest is empty."""
        board = [-1] * self.cells
        for p, home in enumerate(self.home):
            for i in home:
                board[i] = p
        return tuple(board)

    def turn(self, cell: int, steps: int = 1) -> int:
        """The image of ``cell`` under ``steps`` turns by 60 degrees about the centre, each
        ``(q, r, s) -> (-r, -s, -q)``, which carries point ``i`` onto point ``i + 1`` (mod 6)."""
        q, r = self.coords[cell]
        for _ in range(steps % 6):
            q, r = -r, q + r
        return self.index[(q, r)]

    def reflect(self, cell: int) -> int:
        """The mirror image about the north-south axis, ``(q, r, s) -> (s, r, q)``.

        It maps points 0 and 3 to themselves (so the two-player homes and goals) and swaps the
        east and west points.
        """
        q, r = self.coords[cell]
        return self.index[(-q - r, r)]


def _in_star(q: int, r: int, t: int) -> bool:
    """Whether axial ``(q, r)`` is on the star: inside one of its two big triangles."""
    s = -q - r
    return min(q, r, s) >= -t or max(q, r, s) <= t
