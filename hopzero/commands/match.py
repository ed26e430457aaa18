"""``hopzero match``: a match between two to six players under the seed paper's protocol
(``evaluator.arena``), its result as text or JSON, optionally appended to a results file."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from .args import (
    MATCH_MAX_GAMES,
    MAX_PARALLEL,
    MAX_RANDOM_OPENING,
    MAX_WORKERS,
    CliError,
    add_engine,
    add_json,
    add_preset,
    add_seating,
    emit,
    int_arg,
    seed_arg,
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("match", help="play a match between two to six players (the seed paper's protocol)")
    add_preset(p)
    p.add_argument(
        "--a", metavar="SPEC",
        help="player A, e.g. greedy, random, alphabeta:depth=3, mcts:model=PATH,sims=S, dqn:model=PATH"
    )
    p.add_argument("--b", metavar="SPEC", help="player B")
    p.add_argument("--players", nargs="+", metavar="SPEC", default=None,
                   help="one SPEC per seat of the preset (star3: three), every seat rotation played; for two "
                        "players also --a/--b")
    p.add_argument("--games", type=int_arg(1, MATCH_MAX_GAMES), default=100, metavar="N", help="games (default 100)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="match seed (default 0)")
    p.add_argument(
        "--random-opening", type=int_arg(0, MAX_RANDOM_OPENING), default=3, metavar="K",
        help="random first moves per side (default 3)",
    )
    add_seating(p)
    p.add_argument("--workers", type=int_arg(1, MAX_WORKERS), default=1, metavar="W",
                   help=f"processes, at most {MAX_WORKERS} (same result for any W)")
    p.add_argument(
        "--parallel", type=int_arg(1, MAX_PARALLEL), default=1, metavar="P",
        help="games in flight in one process, mcts searches batched (default 1: one game at a time)",
    )
    p.add_argument("--out", metavar="FILE", default=None,
                   help="append the result as one JSON line to FILE (the format `hopzero serve --results` reads)")
    add_engine(p)
    add_json(p)
    p.set_defaults(func=run)


class _Progress:
    """A progress line on stderr: rewritten in place on a terminal, every 10% otherwise; the games
    each player won so far (alone or sharing the win), and the draws."""

    def __init__(self, players: int, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.last = 0.0
        self.won = [0] * players
        self.draws = 0
        self.done = 0

    def __call__(self, set_index: int, rotation: int, scores: tuple[float, ...]) -> None:
        self.done += 1
        best = max(scores)
        if min(scores) == best:
            self.draws += 1
        else:
            for k, x in enumerate(scores):
                self.won[k] += x == best
        if self.enabled:
            self._show()

    def _show(self) -> None:
        now = time.perf_counter()
        done, total = self.done, self.total
        step = max(1, total // 10)
        if self.tty and (now - self.last < 0.2 and done < total):
            return
        if not self.tty and done % step and done < total:
            return
        self.last = now
        won = "  ".join(f"{'ABCDEF'[k]} {w}" for k, w in enumerate(self.won))
        line = f"game {done}/{total}: {won}  draws {self.draws}  ({done / max(now - self.start, 1e-9):.1f} games/s)"
        sys.stderr.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
        if self.tty and done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _players(args: argparse.Namespace) -> list[str]:
    """The match's players: ``--players``, or ``--a``/``--b`` for a game of two."""
    seats = args.preset.players
    if args.players is not None and (args.a is not None or args.b is not None):
        raise CliError("give the players as --players SPEC ... or as --a SPEC --b SPEC, not both")
    if args.players is None:
        if args.a is None or args.b is None:
            raise CliError(f"give the players: --players with {seats} SPECs (--a SPEC --b SPEC for a game of two)")
        players = [args.a, args.b]
    else:
        players = list(args.players)
    if len(players) != seats:
        given = "--a/--b" if args.players is None else "--players"
        raise CliError(f"{given}: {args.preset.name} seats {seats} players, {len(players)} SPECs were given")
    return players


def run(args: argparse.Namespace) -> int:
    from evaluator.arena import play_match  # deferred: perft and move need none of it

    if args.parallel > 1 and (args.workers > 1 or args.engine != "cython"):
        raise CliError("--parallel plays in one process with the cython engine: drop --workers/--engine")
    players = _players(args)
    if args.out is not None and not Path(args.out).resolve().parent.is_dir():
        raise CliError(f"--out {args.out}: its directory does not exist")  # found before the match, not after
    progress = _Progress(len(players), args.games, enabled=not args.json)
    start = time.perf_counter()
    result = play_match(
        args.preset, *players, games=args.games, seed=args.seed, random_opening=args.random_opening,
        parallel=args.parallel, workers=args.workers, engine=args.engine, on_game=progress, seating=args.seating,
    )
    elapsed = time.perf_counter() - start
    data = result.to_dict()
    data.update(engine=args.engine, workers=args.workers, parallel=args.parallel, elapsed_s=round(elapsed, 3))
    if args.out is not None:
        from evaluator.results import append_result, result_lines
        from learner.records import versions_now

        append_result(args.out, *result_lines(result, versions_now()))
    emit(args, data, _text(result, elapsed))
    return 0


def _text(r: Any, elapsed: float) -> str:
    """The match as text: each player's score, wins and score from each seat; for two players
    also A's record moving first and second (the seed protocol's view); how A's games ended."""
    n = len(r.players)
    width = max(len(name) for name in r.players)
    seating = "every seat rotation" if r.seating == "rotations" else "every seat order"
    lines = [f"{r.games} games on {r.preset}, seed {r.seed}, {r.random_opening} random opening moves a player, "
             f"{seating} (fair share {1 / n:.3f})"]
    for k, (name, rec) in enumerate(zip(r.players, r.records)):
        seats = "  ".join(f"seat {s}: {x.mean_score:.3f}" for s, x in enumerate(r.by_seat[k]))
        lines.append(f"  {'ABCDEF'[k]} {name:<{width}}  score {rec.mean_score:.3f}  wins {rec.wins:5d} "
                     f"({100 * rec.wins / max(r.games, 1):5.1f}%)   {seats}")
    lines.append(f"  draws {r.draws}; mean score by seat: " + ", ".join(f"{x:.3f}" for x in r.seat_scores))
    if n == 2:  # the seed protocol's view of a match of two
        first, second = r.a_record(0), r.a_record(1)
        lines.append(f"  A moving first:  {first.wins} won, {first.losses} lost, {first.draws} drawn")
        lines.append(f"  A moving second: {second.wins} won, {second.losses} lost, {second.draws} drawn")
    ends = r.endings(0)
    lines.append("  how A's games ended: " + "; ".join(
        f"{outcome} " + ", ".join(f"{reason} {count}" for reason, count in sorted(ends[outcome].items()))
        for outcome in ("won", "drawn", "lost") if ends[outcome]))
    lines.append(f"  mean plies {r.mean_plies:.1f}, mean legal moves per position {r.mean_legal_moves:.1f}")
    lines.append(f"  {elapsed:.1f} s ({r.games / max(elapsed, 1e-9):.1f} games/s)")
    return "\n".join(lines)
