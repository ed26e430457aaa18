"""Matches between two players under the seed's evaluation protocol (RULES.md, seed section 4).

Protocol: in every game each side's first ``random_opening`` moves are uniformly random, and the
two players alternate who starts: in game ``i``, player A holds seat 0 (moves first) when ``i``
is even.

Seeding: games ``2p`` and ``2p + 1`` form pair ``p`` and take their randomness only from
``SeedSequence(seed).spawn(pairs)[p]``. Both games of a pair play the same random opening with
the seats swapped (fewer lucky openings in a short match, the same expectation), and each game
seeds A and B from its own streams. So a match is reproducible from its seed, and playing it on
several worker processes gives exactly the result of one.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ccengine.engines import new_state, state_class
from ccengine.players import Player, make_player
from ccengine.rules import Rules
from learner import network_player  # noqa: F401 - registers the mcts SPEC

__all__ = [
    "GameRecord",
    "MatchResult",
    "SideRecord",
    "a_seat_of",
    "game_seeds",
    "opening_move",
    "play_game",
    "play_match",
]

Move = tuple[int, int]


@dataclass(frozen=True)
class GameRecord:
    """One finished game of a match."""

    index: int
    a_seat: int
    """The seat (0 moves first) player A held."""
    result: int
    """``+1 / 0 / -1`` from seat 0's side."""
    plies: int
    positions: int
    """Positions where a move was chosen (the plies of the game)."""
    legal_moves: int
    """Legal moves summed over those positions."""

    @property
    def a_result(self) -> int:
        """``+1 / 0 / -1`` from player A's side."""
        return self.result if self.a_seat == 0 else -self.result


@dataclass(frozen=True)
class SideRecord:
    """A's wins, losses and draws over some of the games."""

    wins: int = 0
    losses: int = 0
    draws: int = 0


@dataclass(frozen=True)
class MatchResult:
    """The outcome of a match; ``to_dict()`` is what ``hopzero match --json`` prints."""

    preset: str
    a: str
    b: str
    games: int
    seed: int
    random_opening: int
    a_wins: int
    b_wins: int
    draws: int
    mean_plies: float
    mean_legal_moves: float
    """Mean number of legal moves per position, over all positions played."""
    seat_wins: tuple[int, int]
    """Wins of whoever held seat 0 (moved first) and seat 1."""
    a_first: SideRecord
    """A's record in the games where A moved first."""
    a_second: SideRecord
    """A's record in the games where B moved first."""
    a_results: tuple[int, ...]
    """Each game's result from A's side, in game order (games 2p and 2p+1 share an opening)."""

    @property
    def a_score(self) -> float:
        """A's score per game, a draw counting one half."""
        return (self.a_wins + 0.5 * self.draws) / self.games if self.games else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (per-game results left out)."""
        d = asdict(self)
        d.pop("a_results")
        d["seat_wins"] = list(self.seat_wins)
        d["a_score"] = round(self.a_score, 6)
        d["mean_plies"] = round(self.mean_plies, 4)
        d["mean_legal_moves"] = round(self.mean_legal_moves, 4)
        return d


def game_seeds(seed: int, games: int) -> list[tuple[np.random.SeedSequence, ...]]:
    """Per game: the seed sequences of its opening, of player A and of player B.

    Spawned from ``seed``, so independent of each other; the two games of a pair share the
    opening's sequence (see the module docstring).
    """
    seeds: list[tuple[np.random.SeedSequence, ...]] = []
    for pair in np.random.SeedSequence(seed).spawn((games + 1) // 2):
        opening, first, second = pair.spawn(3)
        for game in (first, second):
            seeds.append((opening, *game.spawn(2)))
    return seeds[:games]


def a_seat_of(index: int) -> int:
    """The seat player A holds in game ``index``: 0 (moves first) in even games, 1 in odd ones."""
    return index % 2


def opening_move(state: Any, moves: list[Move], opening_rng: np.random.Generator, random_opening: int) -> Move | None:
    """The uniformly random move of ``state`` (its legal ``moves``, drawn with ``opening_rng``)
    while the game is in its random opening (the first ``2 * random_opening`` plies); None after."""
    if state.ply < 2 * random_opening:
        return moves[int(opening_rng.integers(len(moves)))]
    return None


def play_game(
    rules: Rules,
    player0: Player,
    player1: Player,
    *,
    opening_rng: np.random.Generator,
    random_opening: int = 3,
    engine: str = "cython",
) -> tuple[int, int, int, int]:
    """Play one game from the start; returns ``(result, plies, positions, legal_moves_total)``.

    The first ``random_opening`` moves of each side (the first ``2 * random_opening`` plies) are
    drawn uniformly with ``opening_rng``; then each player's ``select`` chooses. The players are
    not reset here: the caller owns their seeding.
    """
    state = new_state(rules, engine=engine)
    seats = (player0, player1)
    positions = 0
    legal_total = 0
    while not state.is_terminal():
        moves = state.legal_moves()
        positions += 1
        legal_total += len(moves)
        move = opening_move(state, moves, opening_rng, random_opening)
        if move is None:
            move = seats[state.to_move].select(state)
        state.play(move)
    return int(state.result()), int(state.ply), positions, legal_total


# ---------------------------------------------------------------------------------------------
# Matches (the same code runs in the parent and in each worker)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _MatchSpec:
    """Everything a worker needs to play any game of a match (picklable)."""

    rules: Rules
    a: str
    b: str
    seed: int
    games: int
    random_opening: int
    engine: str


class _GamePlayer:
    """Builds the two players once per process and plays games by index."""

    def __init__(self, spec: _MatchSpec) -> None:
        self.spec = spec
        self.seeds = game_seeds(spec.seed, spec.games)
        self.player_a = make_player(spec.a, spec.rules)
        self.player_b = make_player(spec.b, spec.rules)

    def play(self, index: int) -> GameRecord:
        opening_seed, a_seed, b_seed = self.seeds[index]
        self.player_a.reset(a_seed)
        self.player_b.reset(b_seed)
        a_seat = a_seat_of(index)
        seats = (self.player_a, self.player_b) if a_seat == 0 else (self.player_b, self.player_a)
        result, plies, positions, legal = play_game(
            self.spec.rules,
            seats[0],
            seats[1],
            opening_rng=np.random.default_rng(opening_seed),
            random_opening=self.spec.random_opening,
            engine=self.spec.engine,
        )
        return GameRecord(index, a_seat, result, plies, positions, legal)


_worker: _GamePlayer | None = None  # the per-process game player of a worker pool


def _init_worker(spec: _MatchSpec) -> None:
    global _worker
    _worker = _GamePlayer(spec)


def _play_in_worker(index: int) -> GameRecord:
    assert _worker is not None
    return _worker.play(index)


def _records(spec: _MatchSpec, workers: int) -> Iterator[GameRecord]:
    """The match's game records in game order, played here or on ``workers`` processes."""
    if workers <= 1 or spec.games <= 1:
        game_player = _GamePlayer(spec)
        for index in range(spec.games):
            yield game_player.play(index)
        return
    # A spawn context local to this call: no global start-method patch, and no fork of a parent
    # that may hold threads (torch) or a Ray connection.
    ctx = multiprocessing.get_context("spawn")
    chunk = max(1, min(16, spec.games // (workers * 8)))
    with ctx.Pool(min(workers, spec.games), initializer=_init_worker, initargs=(spec,)) as pool:
        yield from pool.imap(_play_in_worker, range(spec.games), chunksize=chunk)


def summarize(spec: _MatchSpec, records: list[GameRecord]) -> MatchResult:
    """Fold game records (in game order) into a match result."""
    a_wins = sum(1 for r in records if r.a_result > 0)
    b_wins = sum(1 for r in records if r.a_result < 0)
    draws = len(records) - a_wins - b_wins

    def side(seat: int) -> SideRecord:
        mine = [r.a_result for r in records if r.a_seat == seat]
        return SideRecord(sum(x > 0 for x in mine), sum(x < 0 for x in mine), sum(x == 0 for x in mine))

    positions = sum(r.positions for r in records)
    return MatchResult(
        preset=spec.rules.name,
        a=spec.a,
        b=spec.b,
        games=len(records),
        seed=spec.seed,
        random_opening=spec.random_opening,
        a_wins=a_wins,
        b_wins=b_wins,
        draws=draws,
        mean_plies=sum(r.plies for r in records) / len(records) if records else 0.0,
        mean_legal_moves=sum(r.legal_moves for r in records) / positions if positions else 0.0,
        seat_wins=(sum(r.result > 0 for r in records), sum(r.result < 0 for r in records)),
        a_first=side(0),
        a_second=side(1),
        a_results=tuple(r.a_result for r in records),
    )


def play_match(
    rules: Rules,
    a: str,
    b: str,
    *,
    games: int,
    seed: int,
    random_opening: int = 3,
    workers: int = 1,
    engine: str = "cython",
    progress: Callable[[int, int, GameRecord], None] | None = None,
) -> MatchResult:
    """Play ``games`` games of player SPEC ``a`` against SPEC ``b`` under the seed's protocol.

    ``progress(done, games, record)`` is called after each game, in game order. The result is
    the same for any ``workers``.
    """
    if games < 1:
        raise ValueError(f"games={games} must be at least 1")
    if random_opening < 0:
        raise ValueError(f"random_opening={random_opening} must not be negative")
    if workers < 1:
        raise ValueError(f"workers={workers} must be at least 1")
    # Fail here, in the caller's process, on a bad SPEC or a missing engine (not in a worker).
    state_class(engine)
    make_player(a, rules)
    make_player(b, rules)
    spec = _MatchSpec(rules, a, b, int(seed), games, random_opening, engine)
    records: list[GameRecord] = []
    for record in _records(spec, workers):
        records.append(record)
        if progress is not None:
            progress(len(records), games, record)
    return summarize(spec, records)
