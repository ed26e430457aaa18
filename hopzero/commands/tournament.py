"""``hopzero tournament``: a round robin between players, rated on one ladder, resumable
(``evaluator.tournament``)."""

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
    add_json,
    add_preset,
    add_seating,
    emit,
    int_arg,
    seed_arg,
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("tournament", help="a round robin between players, rated on one ladder (resumable)")
    add_preset(p)
    p.add_argument("--players", nargs="+", required=True, metavar="SPEC",
                   help="two or more player SPECs (random anchors the ladder at 0, as CCERL does)")
    p.add_argument("--games", type=int_arg(2, MATCH_MAX_GAMES), default=40, metavar="N",
                   help="games per group of players (for two: per pair), whole sets of the seating: a multiple of "
                        "the preset's seats for rotations, of their factorial for permutations (default 40)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="tournament seed (default 0)")
    p.add_argument("--random-opening", type=int_arg(0, MAX_RANDOM_OPENING), default=3, metavar="K",
                   help="random first moves per side (default 3)")
    p.add_argument("--parallel", type=int_arg(1, MAX_PARALLEL), default=1, metavar="P",
                   help="games in flight in one process, mcts searches batched (default 1)")
    p.add_argument("--workers", type=int_arg(1, MAX_WORKERS), default=1, metavar="W",
                   help=f"processes, at most {MAX_WORKERS} (same result for any W)")
    add_seating(p)
    p.add_argument("--reference", action="append", default=[], metavar="LABEL=W-D-L",
                   help="a published record against greedy to place on the ladder, no games played (repeat; "
                        "the seed paper's agent: 'seed paper=271-1-28')")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="where games.jsonl (appended as games finish: run again to resume) and ladder.json, "
                        "ladder.md, ladder.png go (default tournament-PRESET-SEED)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evaluator.tournament import Tournament, TournamentError, write_outputs

    out = Path(args.out or f"tournament-{args.preset.name}-{args.seed}")
    try:
        tournament = Tournament(args.preset, args.players, games=args.games, seed=args.seed,
                                path=out / "games.jsonl", random_opening=args.random_opening,
                                parallel=args.parallel, workers=args.workers, references=args.reference,
                                seating=args.seating)
        total = len(tournament.groups()) * args.games
        played = sum(len(v) for v in tournament.load().values())
    except TournamentError as exc:
        raise CliError(str(exc)) from None
    if played and not args.json:
        sys.stderr.write(f"resuming {out / 'games.jsonl'}: {played} of {total} games already played\n")
    start = time.perf_counter()

    def progress(group: tuple[str, ...], index: int, scores: tuple[float, ...]) -> None:
        nonlocal played
        played += 1
        if not args.json and (played % max(1, total // 20) == 0 or played == total):
            rate = played / max(time.perf_counter() - start, 1e-9)
            sys.stderr.write(f"game {played}/{total} ({' vs '.join(group)}), {rate:.1f} games/s\n")

    result = tournament.run(on_game=progress)
    files = write_outputs(result, out, random_opening=args.random_opening)
    emit(args, {**result.to_dict(), "files": [str(f) for f in files]},
          result.text() + "\n" + "wrote " + ", ".join(str(f) for f in files))
    return 0
