"""Which game is which: the seeds, the seats and the opening of every game of a match.

The seed paper's protocol for N players (two are N = 2): in every game each player's first
``random_opening`` moves are uniformly random (``ccengine.game_loop.opening_move``), and the
players take every seat in turn. Game ``i`` is rotation ``i % N`` of set ``i // N``: player ``k``
(0 = A, 1 = B, ...) holds seat ``(k + i) % N`` (seat 0 moves first). The N games of a set share
their random opening, so a short match meets fewer lucky openings and keeps the same expectation.

Seeding: set ``s`` takes its randomness only from ``SeedSequence(seed).spawn(sets)[s]``, which
spawns the opening's sequence and one sequence per game, and each game spawns one per player. So a
match is reproducible from its seed, a game does not depend on the games beside it, and playing it
on several worker processes, or many games at once, gives exactly the result of one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["game_seeds", "seat_of"]


def game_seeds(seed: int, games: int, players: int = 2) -> list[tuple[np.random.SeedSequence, ...]]:
    """Per game: the seed sequences of its opening and of each player (A, B, ...), as the module
    docstring says (the ``players`` games of a set share the opening's)."""
    seeds: list[tuple[np.random.SeedSequence, ...]] = []
    for one_set in np.random.SeedSequence(seed).spawn(-(-games // players)):
        opening, *in_set = one_set.spawn(1 + players)
        for game in in_set:
            seeds.append((opening, *game.spawn(players)))
    return seeds[:games]


def seat_of(index: int, player: int, players: int) -> int:
    """The seat (0 moves first) that player ``player`` (0 = A, 1 = B, ...) holds in game ``index``:
    rotation ``index % players`` of its set puts player ``k`` in seat ``(k + index) % players``."""
    return (player + index % players) % players
