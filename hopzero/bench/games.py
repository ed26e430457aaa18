"""``hopzero bench games``: games of one player SPEC in every seat, for any number of players.

What the games look like rather than how fast they go: mean length in plies, legal moves per
position, the score each seat collected (the result vector summed over the games: a win counts
1, a shared win its share, a draw 1/N to every seat), the games each seat won or shared, and the
end reasons. Each player's first ``--random-opening`` moves are uniformly random (the seed
paper's evaluation protocol, ``ccengine.game_loop``), so that games differ; game ``g`` draws its
opening from ``SeedSequence([seed, g])`` and seat ``p``'s player from ``SeedSequence([seed, g,
p])``. Two-player presets work the same (their score vectors are ``(1, 0)``, ``(0, 1)`` or
``(0.5, 0.5)``).

``--players SPEC ...`` (one SPEC per seat) plays different players against each other instead:
a match (``evaluator.arena.play_match``, every seat rotation, one opening a set,
seeded from ``--seed``), reported per player (mean score, games won, mean score from each seat)
beside the games' length; docs/BENCHMARKS.md's table of ``greedy`` against ``alphabeta`` on
star3, star4 and star6 comes from it.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from ccengine.game_loop import play_game
from ccengine.players import PlayerSpecError
from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, BenchError, Report
from learner.players import make_player, parse_spec

__all__ = ["NAME", "SUMMARY", "add_arguments", "play_games", "play_mixed", "run"]

NAME = "games"
SUMMARY = "games of one player in every seat (any number of players): length, moves, scores by seat"


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--player``, ``--games``, ``--random-opening``."""
    p.add_argument("--player", default="greedy", metavar="SPEC", help="the player of every seat (default greedy)")
    p.add_argument("--players", nargs="+", default=None, metavar="SPEC",
                   help="one SPEC per seat instead: a match of them in every seat rotation")
    p.add_argument("--games", type=kit.int_at_least(1), default=100, metavar="G", help="games (default 100)")
    p.add_argument("--random-opening", type=kit.int_at_least(0), default=3, metavar="M",
                   help="uniformly random first moves of each player (default 3, the seed's protocol)")


def play_games(rules: Rules, spec: str, *, games: int, seed: int, random_opening: int = 3) -> dict[str, object]:
    """Play ``games`` games of ``spec`` in every seat on the compiled engine; the statistics."""
    players = rules.geometry.players
    plies = positions = legal = 0
    score = np.zeros(players)
    won = np.zeros(players, dtype=np.int64)
    reasons: Counter[str] = Counter()
    start = time.perf_counter()
    parsed = parse_spec(spec)
    seats = [parsed.build(rules) for _ in range(players)]
    for g in range(games):
        for p, player in enumerate(seats):
            player.reset(np.random.SeedSequence([seed, g, p]))
        opening = np.random.default_rng(np.random.SeedSequence([seed, g]))
        game = play_game(rules, seats, opening_rng=opening, random_opening=random_opening)
        positions += game.positions
        legal += game.legal_moves
        plies += game.plies
        score += game.scores
        if min(game.scores) < max(game.scores):  # a draw shares the point but is nobody's win
            won += np.asarray(game.scores) > 0
        reasons[game.state.end_reason] += 1
    return {
        "preset": rules.name,
        "player": spec,
        "players": players,
        "games": games,
        "random_opening": random_opening,
        "mean_plies": round(plies / games, 2),
        "mean_legal_moves": round(legal / positions, 2),
        "score_by_seat": [round(float(x), 3) for x in score],
        "wins_by_seat": [int(x) for x in won],
        "draws": int(sum(n for r, n in reasons.items() if r in ("repetition", "max_plies", "no_move"))),
        "end_reasons": dict(sorted(reasons.items())),
        "seconds": round(time.perf_counter() - start, 2),
    }


def play_mixed(rules: Rules, specs: list[str], *, games: int, seed: int, random_opening: int = 3) -> dict[str, object]:
    """``--players``: a match of ``specs`` (one per seat) in every seat rotation; the statistics."""
    from evaluator.arena import play_match

    start = time.perf_counter()
    m = play_match(rules, *specs, games=games, seed=seed, random_opening=random_opening)
    return {
        "preset": rules.name, "players": list(specs), "games": m.games, "random_opening": random_opening,
        "mean_plies": round(m.mean_plies, 2), "mean_legal_moves": round(m.mean_legal_moves, 2),
        "mean_score": [round(r.mean_score, 3) for r in m.records], "wins": [r.wins for r in m.records],
        "score_by_seat": [[round(x.mean_score, 3) for x in seats] for seats in m.by_seat],
        "seat_scores": [round(x, 3) for x in m.seat_scores], "draws": m.draws,
        "seconds": round(time.perf_counter() - start, 2),
    }


def run(args: argparse.Namespace) -> Report:
    """The command."""
    if args.players is not None:
        return _run_mixed(args)
    try:
        make_player(args.player, args.preset)
    except PlayerSpecError as exc:
        raise BenchError(str(exc)) from None
    d = play_games(args.preset, args.player, games=args.games, seed=args.seed, random_opening=args.random_opening)
    text = "\n".join(
        [
            f"{d['games']} games of {d['player']} in all {d['players']} seats of {d['preset']} "
            f"(first {d['random_opening']} moves of each player random), {d['seconds']} s:",
            f"  mean plies {d['mean_plies']}, legal moves per position {d['mean_legal_moves']}",
            f"  score by seat {d['score_by_seat']}, games won (or shared) by seat {d['wins_by_seat']}",
            f"  draws {d['draws']}; end reasons {d['end_reasons']}",
        ]
    )
    return Report(d, text)


def _run_mixed(args: argparse.Namespace) -> Report:
    if len(args.players) != args.preset.players:
        raise BenchError(f"--players: {args.preset.name} seats {args.preset.players} players, "
                         f"{len(args.players)} SPECs were given")
    try:
        for spec in args.players:
            make_player(spec, args.preset)
    except (PlayerSpecError, ValueError) as exc:
        raise BenchError(str(exc)) from None
    d = play_mixed(args.preset, args.players, games=args.games, seed=args.seed, random_opening=args.random_opening)
    lines = [f"{d['games']} games of {d['preset']}, every seat rotation (first {d['random_opening']} moves of "
             f"each player random), {d['seconds']} s: mean plies {d['mean_plies']}, draws {d['draws']}"]
    for k, spec in enumerate(d["players"]):  # type: ignore[arg-type]
        lines.append(f"  {k} {spec}: mean score {d['mean_score'][k]}, won {d['wins'][k]}, "  # type: ignore[index]
                     f"mean score by seat {d['score_by_seat'][k]}")  # type: ignore[index]
    lines.append(f"  mean score of each seat {d['seat_scores']}")
    return Report(d, "\n".join(lines))
