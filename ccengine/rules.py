"""The rules object, its presets and the board geometries (docs/RULES.md).

A board is a *geometry*: the ``n x n`` rhombus (:class:`Geometry`) or the 121-hole star
(:class:`ccengine.star.StarGeometry`); both give cells, neighbours by direction, homes and goals
per player, and the forward distance, so the engines' rules code serves either.

Naming convention used across ``ccengine``:

- *cell*: an index ``i = r * n + c`` on the ``n x n`` rhombus; on the star, the index of RULES.md
  (axial cells sorted by ``r``, then ``q``).
- *board*: who occupies each cell: ``-1`` empty, ``0`` player 0 (``x``), ``1`` player 1 (``o``)
  (on the star, ``0..players-1``).
- *position*: a board plus the side to move and the ply count (what the text format holds).
- *state*: a position plus what the end-of-game rules need from the past (progress tracking).
- *move*: a pair ``(s, e)`` of cells; ``PASS == (-1, -1)``.
- *ply*: one move of one player, passes included.
- *result*: ``+1 / 0 / -1`` from player 0's side (two players only).
- *scores*: the result as a vector, one entry per player, summing to 1: the winners share 1, a
  draw splits it equally (any number of players; ``(1, 0)``, ``(0, 1)`` or ``(0.5, 0.5)`` for two).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from plumbing.fields import FieldError, build_config, check_fields, checked
from .star import SEATS, StarGeometry

__all__ = [
    "DIRECTIONS",
    "PASS",
    "PRESETS",
    "PRESET_NAMES",
    "Geometry",
    "Preset",
    "RulesError",
    "Rules",
    "STAR_N",
    "StarGeometry",
    "preset",
    "presets_markdown",
    "presets_text",
]

#: The six neighbour offsets ``(dr, dc)`` of the hex grid drawn as a matrix.
DIRECTIONS: tuple[tuple[int, int], ...] = ((-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (1, 1))

#: The pass move, legal only when a player has no other move.
PASS: tuple[int, int] = (-1, -1)

_HOPS = ("adjacent", "mirror")
_WIN_RULES = ("filled", "all_own")
_ADJUDICATE = ("none", "distance")
_BOARDS = ("rhombus", "star")
_GOAL_LOCKS = (False, True, "chain")
_SMALL = re.compile(r"^small-(\d+)-(\d+)$")

#: Largest board the bitboard engine holds (121 cells fit two 64-bit words).
MAX_N = 11

#: The star's ``n``: the side of the axial square ``-8 <= q, r <= 8`` that holds it (17 rows).
STAR_N = 17
#: Pieces per player on the star (points of side 4).
STAR_K = 10


class RulesError(ValueError):
    """An invalid rules option or an unknown preset name (an option's error starts with its
    name: ``max_plies: must be an integer >= 1, got 0``)."""


def _triangle_side(k: int) -> int | None:
    """Return ``t`` with ``t (t + 1) / 2 == k``, or None when k is not triangular."""
    t = 0
    while t * (t + 1) // 2 < k:
        t += 1
    return t if t * (t + 1) // 2 == k else None


@dataclass(frozen=True)
class Rules:
    """Every option of RULES.md in one frozen object. Build variants with ``replace``."""

    n: int = checked(7, ge=3, le=STAR_N)
    """Board side: cells are ``(r, c)`` with ``0 <= r, c < n`` (rhombus: at most ``MAX_N``); the
    star's is 17 (``STAR_N``)."""
    k: int = checked(6, choices=tuple(t * (t + 1) // 2 for t in range(1, MAX_N)))
    """Pieces per player, a triangular number ``t (t + 1) / 2`` with ``t <= n - 1``; 10 on the star."""
    hops: str = checked("adjacent", choices=_HOPS)
    """``adjacent`` (the standard game) or ``mirror`` (the seed paper's long hops)."""
    win_rule: str = checked("filled", choices=_WIN_RULES)
    """``filled`` (goal full, one own piece in it) or ``all_own`` (the seed's rule). On the star
    ``filled`` is all ten home or the anti-block rule, ``all_own`` turns anti-block off."""
    max_plies: int = checked(200, ge=1)
    """Plies (passes included) after which the game ends without a winner."""
    goal_lock: bool | str = checked(False, choices=_GOAL_LOCKS)
    """``True``: a piece inside its goal may only move to goal cells (the destination only).
    ``"chain"`` (star only, the CCERL rule): every landing of a piece that stands in its goal, each
    hop of a chain included, must be a goal cell. ``False``: off."""
    adjudicate: str = checked("none", choices=_ADJUDICATE)
    """How a game cut off by ``max_plies``/``progress_limit`` is scored: ``none`` or ``distance``.
    On the star it is a training-only change of check 6 (the move limit); a third repetition
    still draws first. With three or more players the players within ``distance_margin`` rows of
    the most advanced share the point (the leader alone when it leads them all by more)."""
    distance_margin: int = checked(3, ge=0)
    """``distance`` adjudication: rows of advance a side needs beyond every other to win alone."""
    progress_limit: int = checked(0, ge=0)
    """Plies without either side adding a piece to its goal that end the game (0 = off)."""
    board: str = checked("rhombus", choices=_BOARDS)
    """``rhombus`` (the ``n x n`` board) or ``star`` (the 121-hole star, ``n=17``, ``k=10``)."""
    players: int = checked(2, ge=2, le=6)
    """Number of players (the rhombus seats 2; the star 2, 3, 4 or 6)."""
    repetition: int = checked(0, ge=0)
    """Star only: the game is drawn when a position (board and side to move) occurs this many
    times (0 = off; CCERL: 3)."""
    equal_turn: bool = checked(False)
    """Star, two players only: when player 0 completes its goal, player 1 draws if one move
    completes its own (CCERL: on)."""
    name: str = checked("custom")
    """The preset this rules object came from (informational; not part of equality)."""

    def __post_init__(self) -> None:
        try:
            check_fields(self)
        except FieldError as exc:
            raise RulesError(str(exc)) from None
        if self.board == "star":
            self._check_star()
        else:
            self._check_rhombus()

    def _check_rhombus(self) -> None:
        """The rhombus's own options; the star's options must keep their defaults."""
        if self.n > MAX_N:
            raise RulesError(f"n: the rhombus's side must be at most {MAX_N}, got {self.n}")
        if self.t > self.n - 1:
            raise RulesError(f"k: {self.k} pieces need n >= {self.t + 1} so that the homes are disjoint")
        star_only = {
            "goal_lock='chain'": self.goal_lock == "chain",
            f"players={self.players}": self.players != 2,
            f"repetition={self.repetition}": self.repetition != 0,
            f"equal_turn={self.equal_turn}": self.equal_turn,
        }
        for option, is_set in star_only.items():
            if is_set:
                raise RulesError(f"{option} needs board='star'; the rhombus seats 2 players and has no star options")

    def _check_star(self) -> None:
        """The star's options; the rhombus-only options must keep their defaults."""
        if (self.n, self.k) != (STAR_N, STAR_K):
            raise RulesError(
                f"board='star' is the 121-hole star: it needs n={STAR_N} and k={STAR_K}, got n={self.n} k={self.k}"
                " (preset 'star2' has them)"
            )
        if self.players not in SEATS:
            raise RulesError(f"players={self.players}: the star seats {', '.join(map(str, SEATS))} players")
        if self.players != 2 and self.equal_turn:
            raise RulesError(f"equal_turn=True is a two-player rule; players={self.players} needs it off")
        if self.hops != "adjacent":
            raise RulesError(f"hops={self.hops!r}: the star has adjacent hops only")
        if self.progress_limit != 0:
            raise RulesError("progress_limit is a rhombus option; the star needs 0")
        if self.repetition == 1:
            raise RulesError(f"repetition={self.repetition} must be 0 (off) or at least 2")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rules):
            return NotImplemented
        return self.options() == other.options()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.options().items())))

    def options(self) -> dict[str, object]:
        """The game-defining options as a plain dict (what records and checkpoints carry)."""
        d = dataclasses.asdict(self)
        d.pop("name")
        return d

    def to_dict(self) -> dict[str, object]:
        """All fields, preset name included, as a JSON-ready dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Rules:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        return cls._build(data)

    def replace(self, **changes: object) -> Rules:
        """A copy with some options changed (validated like any new rules object)."""
        return self._build(changes, base=self)

    @classmethod
    def _build(cls, data: dict[str, object], base: Rules | None = None) -> Rules:
        try:
            return build_config(cls, data, base=base)  # type: ignore[no-any-return]
        except FieldError as exc:  # an unknown key
            raise RulesError(str(exc)) from None

    @property
    def cells(self) -> int:
        """Number of cells: ``n * n`` on the rhombus, 121 on the star."""
        return self.geometry.cells

    @property
    def is_star(self) -> bool:
        """Whether the board is the 121-hole star."""
        return self.board == "star"

    @property
    def t(self) -> int:
        """Side of the home triangle."""
        t = _triangle_side(self.k)
        assert t is not None
        return t

    @cached_property
    def geometry(self) -> Geometry | StarGeometry:
        """The board's neighbour tables, homes and goals (computed once per rules object)."""
        if self.board == "star":
            return StarGeometry(self.players)
        return Geometry(self.n, self.k)


@dataclass(frozen=True)
class Preset:
    """One named game: its rules options and the words that describe it (the presets table)."""

    name: str
    """The name ``--preset`` takes (a family's pattern, ``small-N-k``, for the small boards)."""
    summary: str
    """What the game is, in a few words (CLI help, the web page's board list, the docs' table)."""
    options: tuple[tuple[str, Any], ...]
    """The :class:`Rules` options that differ from the defaults."""

    def rules(self, name: str | None = None) -> Rules:
        """The preset's rules object (``name``: a family member's own name)."""
        return Rules(**dict(self.options), name=name or self.name)

    def row(self) -> dict[str, Any]:
        """The docs' and the web page's row: name, board, players, pieces, rules, limits."""
        family = self.name == SMALL_FAMILY
        rules = preset(f"small-{_SMALL_SIDES[0]}-{_SMALL_PIECES[0]}") if family else self.rules()
        return {"name": self.name, "summary": self.summary,
                "board": f"N x N rhombus, N {_SMALL_SIDES[0]}..{_SMALL_SIDES[-1]}" if family else _board_words(rules),
                "players": rules.players, "pieces": f"k = {_words(_SMALL_PIECES)}" if family else rules.k,
                "rules": _rule_words(rules), "limits": f"{rules.max_plies} plies"}


#: The small boards: one family of presets, ``small-N-k``.
SMALL_FAMILY = "small-N-k"
_SMALL_SIDES = (4, 5, 6)
_SMALL_PIECES = (1, 3, 6)
#: The star's shared options; star2 adds CCERL's equal turns. Three or more players end at the end
#: of the round in which a goal is filled (RULES.md); their move limits (200, 175 and 150 rounds)
#: fall at the end of a round.
_STAR = (("board", "star"), ("n", STAR_N), ("k", STAR_K), ("goal_lock", "chain"), ("repetition", 3))

#: Every preset, in the order the CLI, the web page and the docs list them: the single source of
#: their names, options and descriptions.
PRESETS: tuple[Preset, ...] = (
    Preset("cc49", "the seed paper's 7 x 7 board with hopzero's default rules (the default preset)",
           (("n", 7), ("k", 6))),
    Preset("paper", "the seed paper's own rules, for reproducing it",
           (("n", 7), ("k", 6), ("hops", "mirror"), ("win_rule", "all_own"), ("max_plies", 100))),
    Preset("cc81", "the two-player game of the star without its four side points", (("n", 9), ("k", 10))),
    Preset("star2", "the 121-hole star for two, as the CCERL rating list plays it (CCERL-2P10-v2)",
           (*_STAR, ("equal_turn", True), ("max_plies", 240))),
    Preset("star3", "the star for three: the game ends at the end of a round", (*_STAR, ("players", 3),
                                                                                ("max_plies", 600))),
    Preset("star4", "the star for four: the game ends at the end of a round", (*_STAR, ("players", 4),
                                                                               ("max_plies", 700))),
    Preset("star6", "the star for six: the game ends at the end of a round", (*_STAR, ("players", 6),
                                                                              ("max_plies", 900))),
    Preset(SMALL_FAMILY, "boards small enough to solve exactly", ()),
)
_BY_NAME = {p.name: p for p in PRESETS}

#: The preset names (``small-N-k`` stands for its family).
PRESET_NAMES: tuple[str, ...] = tuple(p.name for p in PRESETS)


def presets_text() -> str:
    """The presets in one line, for help and error texts."""
    return ", ".join(f"{SMALL_FAMILY} (N {_SMALL_SIDES[0]}..{_SMALL_SIDES[-1]}, k {', '.join(map(str, _SMALL_PIECES))})"
                     if n == SMALL_FAMILY else n for n in PRESET_NAMES)


def presets_markdown() -> str:
    """The presets as a Markdown table (docs/RULES.md holds this table; a test keeps it so)."""
    head = "| preset | board | players | pieces each | rules | move limit | what it is |"
    rows = [head, "|---|---|---|---|---|---|---|"]
    for p in PRESETS:
        r = p.row()
        rows.append(f"| `{r['name']}` | {r['board']} | {r['players']} | {r['pieces']} | {r['rules']} | "
                    f"{r['limits']} | {r['summary']} |")
    return "\n".join(rows) + "\n"


def preset(name: str) -> Rules:
    """The rules of a preset of :data:`PRESETS` (``cc49``, ``star2``, ``small-5-3``, ...)."""
    if name in _BY_NAME and name != SMALL_FAMILY:
        return _BY_NAME[name].rules()
    m = _SMALL.match(name) if isinstance(name, str) else None
    if m:
        n, k = int(m.group(1)), int(m.group(2))
        if n in _SMALL_SIDES and k in _SMALL_PIECES:
            return Rules(n=n, k=k, name=name)
        raise RulesError(f"preset {name!r}: small boards take N {_SMALL_SIDES[0]}..{_SMALL_SIDES[-1]} and k "
                         f"{_words(_SMALL_PIECES)}")
    shown = str(name)[:40]
    raise RulesError(f"unknown preset {shown!r}; valid: {presets_text()}")


def _words(numbers: tuple[int, ...]) -> str:
    """``(1, 3, 6)`` as ``1, 3 or 6``."""
    return ", ".join(map(str, numbers[:-1])) + f" or {numbers[-1]}"


def _board_words(rules: Rules) -> str:
    return "121-hole star" if rules.is_star else f"{rules.n} x {rules.n} rhombus, {rules.cells} cells"


def _rule_words(rules: Rules) -> str:
    """The rules that set a preset apart, in words."""
    filled = "goal filled (or the anti-block rule)" if rules.is_star else "goal filled"
    words = [f"{rules.hops} hops", filled if rules.win_rule == "filled" else "all own pieces home"]
    if rules.goal_lock == "chain":
        words.append("chain goal lock")
    if rules.repetition:
        words.append(f"draw at the {rules.repetition}rd repetition" if rules.repetition == 3 else
                     f"draw at repetition {rules.repetition}")
    if rules.equal_turn:
        words.append("equal turns")
    return ", ".join(words)


class Geometry:
    """Cells, neighbours and homes of the ``n x n`` rhombus with ``k`` pieces a side."""

    kind = "rhombus"
    #: The rhombus seats two players.
    players = 2
    #: ``seats[p]``: the compass point (``ccengine.star.POINT_NAMES``) of player p's home as the
    #: board is drawn: player 0 at the bottom (south), player 1 at the top (north).
    seats: tuple[int, ...] = (3, 0)

    def __init__(self, n: int, k: int) -> None:
        self.n = n
        self.k = k
        t = _triangle_side(k)
        assert t is not None
        self.t = t
        self.cells = n * n
        #: ``rows[i]`` is ``r - c``: cells with the same value form one row of the real board.
        self.diag: tuple[int, ...] = tuple(i // n - i % n for i in range(self.cells))
        #: ``home[p]``: the cells where player p starts; its goal is ``home[1 - p]``.
        self.home: tuple[frozenset[int], frozenset[int]] = (
            frozenset(i for i in range(self.cells) if self.diag[i] >= n - t),
            frozenset(i for i in range(self.cells) if -self.diag[i] >= n - t),
        )
        #: ``step[i][d]``: the neighbour of cell i in direction ``DIRECTIONS[d]``, or -1 off the board.
        self.step: tuple[tuple[int, ...], ...] = tuple(
            tuple(self.offset(i, d, 1) for d in range(len(DIRECTIONS))) for i in range(self.cells)
        )
        #: ``advances[p][i] == advance(p, i)``, as a table for the players' inner loops.
        self.advances: tuple[tuple[int, ...], ...] = tuple(
            tuple(self.advance(p, i) for i in range(self.cells)) for p in range(self.players)
        )
        #: ``drawn[i]``: where cell i is drawn, ``(row, column)``: one row per value of ``r - c``
        #: (player 1's home tip at the top), columns in half-cells (``r + c``).
        self.drawn: tuple[tuple[int, int], ...] = tuple((i // n - i % n, i // n + i % n) for i in range(self.cells))
        #: ``grid[i]``: cell i's element ``row * grid_side + col`` of the square matrix of the hex
        #: axes that holds the board: the rhombus is that matrix, so this is the identity.
        self.grid_side = n
        self.grid: tuple[int, ...] = tuple(range(self.cells))

    def goal(self, player: int) -> frozenset[int]:
        """The cells player ``player`` must fill: the other player's home."""
        return self.home[1 - player]

    def offset(self, cell: int, direction: int, distance: int) -> int:
        """The cell ``distance`` steps from ``cell`` along ``DIRECTIONS[direction]``, or -1."""
        dr, dc = DIRECTIONS[direction]
        r, c = divmod(cell, self.n)
        r, c = r + dr * distance, c + dc * distance
        return r * self.n + c if 0 <= r < self.n and 0 <= c < self.n else -1

    def forward_distance(self, player: int, move: tuple[int, int]) -> int:
        """``psi``: rows a move advances its piece towards the mover's goal (seed section 3.2)."""
        s, e = move
        d = self.diag[s] - self.diag[e]
        return d if player == 0 else -d

    def advance(self, player: int, cell: int) -> int:
        """Rows a piece of ``player`` on ``cell`` is ahead of its home's tip."""
        return (self.n - 1 - self.diag[cell]) if player == 0 else (self.n - 1 + self.diag[cell])

    def start_board(self) -> tuple[int, ...]:
        """The start position's board: each player fills its home."""
        return tuple(0 if i in self.home[0] else 1 if i in self.home[1] else -1 for i in range(self.cells))

    def reflect(self, cell: int) -> int:
        """The board's reflection that maps each home to itself: ``(r, c) -> (n-1-c, n-1-r)``."""
        r, c = divmod(cell, self.n)
        return (self.n - 1 - c) * self.n + (self.n - 1 - r)

    def turn(self, cell: int, steps: int = 1) -> int:
        """The image of ``cell`` under ``steps`` turns by 60 degrees about the centre. The rhombus
        has only the half turn ``(r, c) -> (n-1-r, n-1-c)``, which swaps the homes: ``steps``
        must be a multiple of 3."""
        if steps % 3:
            raise ValueError(f"the rhombus turns onto itself by half turns only (steps a multiple of 3), not {steps}")
        return cell if steps % 6 == 0 else self.cells - 1 - cell
