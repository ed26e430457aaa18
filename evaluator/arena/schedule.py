"""Which game is which: the seeds, the seats and the opening of every game of a match.

The seed paper's protocol for N players (two are N = 2): in every game each player's first
``random_opening`` moves are uniformly random (``ccengine.game_loop.opening_move``), and the games
come in *sets* that share their random opening and seat the players every way the *seating* says:

- ``rotations`` (the default): N games; game ``i`` is rotation ``i % N`` of set ``i // N``, player
  ``k`` (0 = A, 1 = B, ...) in seat ``(k + i) % N`` (seat 0 moves first);
- ``permutations``: every order of the players, N! games a set (``itertools.permutations`` of the
  seats: game ``r`` of a set gives player ``k`` seat ``permutations[r][k]``). With three or more
  players who moves after whom matters too (a player seated after a weak one meets its mistakes
  first); rotations keep the cyclic order, permutations play every order. For two players both
  are the same two games.

A short match meets fewer lucky openings and keeps the same expectation.

Seeding: set ``s`` takes its randomness only from ``SeedSequence(seed).spawn(sets)[s]``, which
spawns the opening's sequence and one sequence per game, and each game spawns one per player. So a
match is reproducible from its seed, a game does not depend on the games beside it, and playing it
on several worker processes, or many games at once, gives exactly the result of one.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

__all__ = ["SEATINGS", "game_seeds", "seat_of", "set_seatings"]

#: The ways a set seats its players (the module docstring).
SEATINGS = ("rotations", "permutations")


@lru_cache(maxsize=32)
def set_seatings(players: int, seating: str = "rotations") -> tuple[tuple[int, ...], ...]:
    """The games of one set: for each, the seat of every player (A, B, ...)."""
    if seating == "rotations":
        return tuple(tuple((k + r) % players for k in range(players)) for r in range(players))
    if seating == "permutations":
        return tuple(itertools.permutations(range(players)))
    raise ValueError(f"unknown seating {seating!r}; the seatings are {', '.join(SEATINGS)}")


def game_seeds(seed: int, games: int, players: int = 2, set_size: int | None = None,
               ) -> list[tuple[np.random.SeedSequence, ...]]:
    """Per game: the seed sequences of its opening and of each player (A, B, ...), as the module
    docstring says (the ``set_size`` games of a set, ``players`` by default, share the opening's)."""
    size = players if set_size is None else set_size
    seeds: list[tuple[np.random.SeedSequence, ...]] = []
    for one_set in np.random.SeedSequence(seed).spawn(-(-games // size)):
        opening, *in_set = one_set.spawn(1 + size)
        for game in in_set:
            seeds.append((opening, *game.spawn(players)))
    return seeds[:games]


def seat_of(index: int, player: int, players: int, seating: str = "rotations") -> int:
    """The seat (0 moves first) that player ``player`` (0 = A, 1 = B, ...) holds in game ``index``
    (with rotations, player ``k`` in seat ``(k + index) % players``)."""
    games = set_seatings(players, seating)
    return games[index % len(games)][player]
