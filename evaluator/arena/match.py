"""The one match runner: :func:`play_match` plays every match of hopzero (``hopzero match``, the
evaluator's gate and its games against greedy, tournaments) for any number of players."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from ccengine.engines import new_state, state_class
from ccengine.notation import Position
from ccengine.rules import Rules

from .results import MatchResult, summarize
from .runner import Scheduler, Side, Sides
from .schedule import set_seatings
from .workers import WorkerMatch, play_on_workers

__all__ = ["check_match_options", "play_match"]


def check_match_options(*, games: int, random_opening: int, parallel: int, workers: int,
                        engine: str = "cython") -> None:
    """The options every match checks before it plays (``ValueError`` naming the problem)."""
    if games < 1:
        raise ValueError(f"games={games} must be at least 1")
    if random_opening < 0:
        raise ValueError(f"random_opening={random_opening} must not be negative")
    if parallel < 1:
        raise ValueError(f"parallel={parallel} must be at least 1")
    if workers < 1:
        raise ValueError(f"workers={workers} must be at least 1")
    if workers > 1 and parallel > 1:
        raise ValueError(f"parallel={parallel} and workers={workers}: games run in flight in one process, or "
                         "one at a time on several, not both")
    state_class(engine)  # an unknown or missing engine fails here


def play_match(
    rules: Rules,
    *players: Side,
    games: int,
    seed: int,
    random_opening: int = 3,
    parallel: int = 1,
    workers: int = 1,
    engine: str = "cython",
    on_game: Callable[[int, int, tuple[float, ...]], Any] | None = None,
    should_stop: Callable[[], bool] | None = None,
    skip: Collection[int] = (),
    keep_moves: bool = False,
    start_positions: Sequence[Position] = (),
    seating: str = "rotations",
) -> MatchResult:
    """Play ``games`` games of ``players`` (one per seat of ``rules``: A, B, ..., each a SPEC or a
    player) under the seed paper's protocol: every seat rotation (or every order) in turn, the
    games of a set sharing a random opening, reproducible from ``seed``
    (``evaluator.arena.schedule``), up to ``parallel`` games at once with each search player's
    waiting games searched in one batch (``evaluator.arena.runner``).

    ``on_game(set, rotation, scores)`` fires as each game finishes, ``scores`` the result vector
    by player (match order): what ``evaluator.gating.Gate.record`` takes with the candidate as A.
    ``should_stop()`` is asked after each finished game; True ends the match at once (the games in
    flight are abandoned) and the result covers the finished games only. ``workers``: play on that
    many processes instead, one game at a time in each (SPEC players only, ``parallel=1``); the
    result is the same for any ``workers``. ``skip``: game indices not to play (a resumed
    tournament's finished games); the others are the games they would have been. ``keep_moves``:
    each game in ``played`` keeps its moves (the evaluator replays them). ``start_positions``: set
    ``s``'s games start from ``start_positions[s % len(start_positions)]`` instead of the start
    position (built endgames, ``evaluator.endgames``); each is checked for ``rules`` first.
    ``seating``: how a set seats the players, ``rotations`` (N games) or ``permutations`` (N!),
    ``evaluator.arena.schedule``.

    One player object may hold several seats only if it searches (a batchable ``SearchPlayer``:
    the evaluator's best network as N-1 copies); a player that chooses per position is passed as a
    SPEC for that.
    """
    if len(players) != rules.players:
        raise ValueError(f"the {rules.name} rules seat {rules.players} players; {len(players)} were given")
    check_match_options(games=games, random_opening=random_opening, parallel=parallel, workers=workers, engine=engine)
    set_seatings(rules.players, seating)  # an unknown seating fails here
    for k, position in enumerate(start_positions):
        if new_state(rules, position, engine=engine).is_terminal():  # malformed ones raise here
            raise ValueError(f"start position {k} is already over")
    skipped = set(skip)
    indices = [i for i in range(games) if i not in skipped]
    if not indices:
        names = tuple(p.strip() if isinstance(p, str) else str(p.name) for p in players)
        return summarize(rules, names, int(seed), random_opening, [], seating)
    parallel = min(parallel, len(indices))
    sides = tuple(Sides(p, rules, parallel=parallel, engine=engine) for p in players)
    names = tuple(side.name for side in sides)
    for k, p in enumerate(players):
        if not isinstance(p, str) and sides[k].search is None and any(q is p for q in players[:k]):
            raise ValueError(f"player {names[k]!r} chooses per position: one object cannot hold two seats "
                             "(pass its SPEC)")
    if workers > 1 and len(indices) > 1:
        if not all(isinstance(p, str) for p in players):
            raise ValueError("workers > 1 plays in other processes: pass every player as a SPEC")
        job = WorkerMatch(rules, tuple(players), int(seed), games, random_opening, engine,  # type: ignore[arg-type]
                          keep_moves, tuple(start_positions), seating)
        played = play_on_workers(job, workers, indices, on_game, should_stop)
    else:
        scheduler = Scheduler(rules, sides, games=games, seed=int(seed), random_opening=random_opening,
                              parallel=parallel, engine=engine, keep_moves=keep_moves,
                              start_positions=start_positions, seating=seating)
        played = scheduler.run(indices, on_game=on_game, should_stop=should_stop)
    return summarize(rules, names, int(seed), random_opening, played, seating)
