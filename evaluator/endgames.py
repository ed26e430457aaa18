"""Won endgames to finish: built star positions where player 0, to move, is far ahead, and how
often each player of a match converts them into a win.

A network that rates every move of a won position near 1 has nothing in its value to prefer the
move that finishes, and may shuffle a piece until the third repetition draws the game. These
positions measure that (docs/STRENGTH.md, "Won endgames"). Two families, drawn from a seed:

- ``parked``: one to three pieces of the player whose home is player 0's goal (player 1 of
  two; player 1 where no home is opposite, on ``star3``) never left it: a blocker's way to hold
  the goal. Player 0 has all but one to three of the goal's other cells
  filled and the rest of its pieces within four rows of the goal; it wins by filling the free
  cells (the anti-block rule), or by bringing all ten home once the parked pieces leave.
- ``race``: nobody stands in player 0's goal; player 0's pieces lie within six rows of the goal
  (at most seven in it) and every other player's pieces within eight rows of its own home, so
  player 0 leads the race by dozens of rows.

Beyond the parked pieces, no piece stands in another player's goal but at its own home. Each
position is played once with each player on seat 0 (the match's seat rotations,
``evaluator.arena``), so every player converts every position, against the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccengine.engines import new_state
from ccengine.notation import Position
from ccengine.rules import Rules

from .arena import MatchResult, Side, play_match

__all__ = ["FAMILIES", "EndgameRecord", "build_endgames", "convert_endgames", "endgame_records", "parker"]

FAMILIES = ("parked", "race")

_GOAL_ROWS = 13  # a piece's advance (rows ahead of its home's tip) from which it stands in its goal


def build_endgames(rules: Rules, family: str, count: int, seed: int) -> list[Position]:
    """``count`` positions of ``family`` on ``rules`` (a star preset), player 0 to move at ply 0,
    none over and each with a legal move; the same for the same seed."""
    if not rules.is_star:
        raise ValueError(f"won endgames are built on the star; {rules.name} is a {rules.board}")
    if family not in FAMILIES:
        raise ValueError(f"unknown endgame family {family!r}; the families are {', '.join(FAMILIES)}")
    if count < 1:
        raise ValueError(f"count={count} must be at least 1")
    rng = np.random.default_rng(seed)
    build = _parked if family == "parked" else _race
    positions: list[Position] = []
    while len(positions) < count:
        position = Position(tuple(build(rules, rng)), 0, 0)
        state = new_state(rules, position)
        if not state.is_terminal() and state.legal_moves():
            positions.append(position)
    return positions


def _parked(rules: Rules, rng: np.random.Generator) -> list[int]:
    g = rules.geometry
    goal = sorted(g.goal(0))
    back = [c for c in goal if g.advance(0, c) >= _GOAL_ROWS + 1]  # the goal's three back rows
    parked = {int(c) for c in rng.choice(back, size=int(rng.integers(1, 4)), replace=False)}
    owner = parker(rules)
    free_goal = [c for c in goal if c not in parked]
    holes = int(rng.integers(1, 4))
    inside = {int(c) for c in rng.choice(free_goal, size=len(free_goal) - holes, replace=False)}
    board = [-1] * g.cells
    for c in parked:
        board[c] = owner
    for c in inside:
        board[c] = 0
    near = [c for c in sorted(_open_to(rules, 0)) if _GOAL_ROWS - 4 <= g.advance(0, c) < _GOAL_ROWS]
    _place(board, rng, near, 0, g.k - len(inside))
    _place_others(rules, board, rng, skip={owner: len(parked)})
    return board


def parker(rules: Rules) -> int:
    """The player whose pieces are parked in player 0's goal: the one whose home it is, else 1."""
    goal = rules.geometry.goal(0)
    return next((p for p in range(1, rules.players) if rules.geometry.home[p] == goal), 1)


def _race(rules: Rules, rng: np.random.Generator) -> list[int]:
    g = rules.geometry
    board = [-1] * g.cells
    goal = sorted(g.goal(0))
    inside = int(rng.integers(0, 8))
    _place(board, rng, goal, 0, inside)
    near = [c for c in sorted(_open_to(rules, 0)) if _GOAL_ROWS - 6 <= g.advance(0, c) < _GOAL_ROWS]
    _place(board, rng, near, 0, g.k - inside)
    _place_others(rules, board, rng, skip={})
    return board


def _place_others(rules: Rules, board: list[int], rng: np.random.Generator, skip: dict[int, int]) -> None:
    """Every player but 0 gets its pieces (less ``skip[p]`` already placed) within eight rows of
    its own home (which may be another player's goal, not player 0's) and off the cells taken."""
    g = rules.geometry
    for p in range(1, rules.players):
        home = g.home[p] - g.goal(0)
        cells = [c for c in range(g.cells) if (c in home or c in _open_to(rules, p)) and g.advance(p, c) <= 8]
        _place(board, rng, cells, p, g.k - skip.get(p, 0))


def _open_to(rules: Rules, player: int) -> set[int]:
    """The cells where a piece of ``player`` is placed freely: off every other player's goal (a
    piece there would fill part of that goal for its owner)."""
    g = rules.geometry
    taken = set().union(*(g.goal(p) for p in range(rules.players) if p != player))
    return {c for c in range(g.cells) if c not in taken}


def _place(board: list[int], rng: np.random.Generator, cells: Sequence[int], player: int, count: int) -> None:
    empty = [c for c in cells if board[c] < 0]
    if len(empty) < count:
        raise ValueError(f"{count} pieces of player {player} do not fit on {len(empty)} free cells")
    for c in rng.choice(empty, size=count, replace=False):
        board[int(c)] = player


@dataclass(frozen=True)
class EndgameRecord:
    """One player's games from seat 0 (the side that is far ahead)."""

    player: str
    positions: int
    won: int
    """Games it won (alone: the others are far behind)."""
    drawn: dict[str, int]
    """Drawn games by why they ended (``repetition``, ``max_plies``, ``no_move``)."""
    lost: int
    mean_plies_to_win: float
    """The plies of its won games, on average (every player's moves counted)."""

    def to_dict(self) -> dict[str, Any]:
        return {"player": self.player, "positions": self.positions, "won": self.won,
                "won_share": round(self.won / max(self.positions, 1), 4), "drawn": dict(self.drawn),
                "lost": self.lost, "mean_plies_to_win": round(self.mean_plies_to_win, 1)}


def endgame_records(result: MatchResult) -> list[EndgameRecord]:
    """Each player's record from seat 0 in a match of built endgames."""
    records = []
    for k, name in enumerate(result.players):
        games = [g for g in result.played if g.seats[k] == 0]
        won = [g for g in games if not g.draw and g.scores[0] == max(g.scores)]
        drawn: dict[str, int] = {}
        for g in games:
            if g.draw:
                drawn[g.reason] = drawn.get(g.reason, 0) + 1
        plies = sum(g.plies for g in won) / len(won) if won else 0.0
        records.append(EndgameRecord(name, len(games), len(won), drawn, len(games) - len(won) - sum(drawn.values()),
                                     plies))
    return records


def convert_endgames(
    rules: Rules, *players: Side, family: str, positions: int, seed: int, parallel: int = 1,
    on_game: Any = None,
) -> tuple[MatchResult, list[EndgameRecord]]:
    """Play ``positions`` built endgames of ``family`` (seed ``seed``) once with each player on
    seat 0 (no random opening; the players' own seeds from ``seed`` as in any match)."""
    starts = build_endgames(rules, family, positions, seed)
    result = play_match(rules, *players, games=positions * rules.players, seed=seed, random_opening=0,
                        parallel=parallel, start_positions=starts, on_game=on_game)
    return result, endgame_records(result)
