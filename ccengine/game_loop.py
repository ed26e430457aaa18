"""One game from its start to its end under the seed paper's opening protocol, for any players.

The protocol (RULES.md, seed section 4): every player's first ``random_opening`` moves are
uniformly random, drawn from one opening generator, so the first ``players * random_opening``
plies of a game are random; then each seat's player chooses. The match runner
(``evaluator.arena``) plays its games by the same rule, many at a time, with
:func:`opening_move`; :func:`play_game` is the plain loop that the benchmarks, TD learning, the
8-bit calibration and stage 1's games use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .engines import new_state
from .rules import Rules

__all__ = ["FinishedGame", "Chooser", "opening_move", "play_game"]

Move = tuple[int, int]


class Chooser(Protocol):
    """What a seat needs: a move for the side to move (``ccengine.players.Player`` is one)."""

    def select(self, state: Any) -> Move: ...


@dataclass(frozen=True)
class FinishedGame:
    """A game :func:`play_game` played to its end (or to ``max_plies``)."""

    scores: tuple[float, ...]
    """The result vector by seat (``State.scores()``); empty when the game was cut off unfinished."""
    plies: int
    positions: int
    """Positions where a move was chosen (the plies of the game, the opening's included)."""
    legal_moves: int
    """Legal moves summed over those positions."""
    moves: tuple[Move, ...]
    """Every move from the first position, in order."""
    state: Any
    """The final state (its ``end_reason``, board and history)."""


def opening_move(
    state: Any, moves: Sequence[Move], opening_rng: np.random.Generator, random_opening: int
) -> Move | None:
    """The uniformly random move of ``state`` (among its legal ``moves``, drawn with
    ``opening_rng``) while the game is in its random opening, the first ``random_opening`` moves
    of every player counted from ply 0; None after."""
    if state.ply < state.players * random_opening:
        return moves[int(opening_rng.integers(len(moves)))]
    return None


def play_game(
    rules: Rules,
    seats: Sequence[Chooser],
    *,
    opening_rng: np.random.Generator | None = None,
    random_opening: int = 0,
    state: Any = None,
    max_plies: int | None = None,
    engine: str = "cython",
    on_position: Callable[[Any, list[Move]], Any] | None = None,
    on_move: Callable[[Any, Move], Any] | None = None,
) -> FinishedGame:
    """Play one game with ``seats[p]`` choosing for player ``p`` after the random opening.

    ``state``: start from this state instead of the start position (it is played on). ``max_plies``:
    stop there even when the rules' limit is later (the game is then unfinished: no ``scores``).
    ``on_position(state, moves)`` sees every position before its move is chosen (the opening's
    included) and ``on_move(state, move)`` every move after it is played. The players are not
    reset here: the caller owns their seeding.
    """
    if len(seats) != rules.players:
        raise ValueError(f"the {rules.name} rules seat {rules.players} players; {len(seats)} were given")
    if random_opening and opening_rng is None:
        raise ValueError("a random opening needs opening_rng")
    state = new_state(rules, engine=engine) if state is None else state
    limit = rules.max_plies if max_plies is None else min(max_plies, rules.max_plies)
    moves_played: list[Move] = []
    positions = legal = 0
    while not state.is_terminal() and state.ply < limit:
        moves = state.legal_moves()
        positions += 1
        legal += len(moves)
        if on_position is not None:
            on_position(state, moves)
        move = opening_move(state, moves, opening_rng, random_opening) if random_opening else None  # type: ignore[arg-type]
        if move is None:
            move = seats[state.to_move].select(state)
        move = (int(move[0]), int(move[1]))
        state.play(move)
        moves_played.append(move)
        if on_move is not None:
            on_move(state, move)
    scores = tuple(float(x) for x in state.scores()) if state.is_terminal() else ()
    return FinishedGame(scores, int(state.ply), positions, legal, tuple(moves_played), state)
