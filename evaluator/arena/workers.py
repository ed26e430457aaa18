"""A match played on worker processes, one game at a time in each (``workers``), with the result
of one process: every game takes its randomness from its own seeds (``schedule``)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ccengine.notation import Position
from ccengine.rules import Rules

from .results import MatchGame
from .runner import Scheduler, Sides
from .schedule import set_seatings

__all__ = ["WorkerMatch", "play_on_workers"]


@dataclass(frozen=True)
class WorkerMatch:
    """Everything a worker needs to play any game of a match (picklable: SPECs, not players)."""

    rules: Rules
    specs: tuple[str, ...]
    seed: int
    games: int
    random_opening: int
    engine: str
    keep_moves: bool
    start_positions: tuple[Position, ...] = ()
    seating: str = "rotations"

    def build(self) -> Scheduler:
        sides = tuple(Sides(s, self.rules, parallel=1, engine=self.engine) for s in self.specs)
        return Scheduler(self.rules, sides, games=self.games, seed=self.seed, random_opening=self.random_opening,
                         parallel=1, engine=self.engine, keep_moves=self.keep_moves,
                         start_positions=self.start_positions, seating=self.seating)


_worker: Scheduler | None = None  # the per-process match of a worker pool


def _init_worker(match: WorkerMatch) -> None:
    global _worker
    _worker = match.build()


def _play_in_worker(index: int) -> MatchGame:
    assert _worker is not None
    [game] = _worker.run([index])
    return game


def play_on_workers(
    match: WorkerMatch, workers: int, indices: list[int],
    on_game: Callable[[int, int, tuple[float, ...]], Any] | None, should_stop: Callable[[], bool] | None,
) -> list[MatchGame]:
    """The games ``indices`` of ``match`` played on ``workers`` processes, in game order."""
    # A spawn context local to this call: no global start-method patch, and no fork of a parent
    # that may hold threads (torch) or a Ray connection.
    ctx = multiprocessing.get_context("spawn")
    n = len(set_seatings(len(match.specs), match.seating))  # games a set
    chunk = max(1, min(16, len(indices) // (workers * 8)))
    games: list[MatchGame] = []
    with ctx.Pool(min(workers, len(indices)), initializer=_init_worker, initargs=(match,)) as pool:
        for game in pool.imap(_play_in_worker, indices, chunksize=chunk):
            games.append(game)
            if on_game is not None:
                on_game(game.index // n, game.index % n, game.player_scores)
            if should_stop is not None and should_stop():
                break  # leaving the block terminates the pool
    return sorted(games, key=lambda g: g.index)
