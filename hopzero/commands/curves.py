"""``hopzero curves``: several training runs' best models over time, side by side: the runs' own
measurements against greedy, or (``--against SPEC``) each best model refereed by a match against
one fixed player, the measure that still moves once greedy is beaten in every game."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .args import MATCH_MAX_GAMES, MAX_PARALLEL, CliError, add_json, emit, int_arg, seed_arg


def add_parser(sub: Any) -> None:
    p = sub.add_parser("curves", help="plot several runs' best models over time, in one picture")
    p.add_argument("runs", metavar="RUN_DIR", nargs="+", help="run directories (hopzero train --run-dir)")
    p.add_argument("--out", metavar="FILE", required=True, help="the PNG to write")
    p.add_argument("--title", default=None, help="the picture's title")
    p.add_argument("--against", metavar="SPEC", default=None,
                   help="referee each run's best models in a match against this player (a hopzero match SPEC, "
                        "e.g. alphabeta:depth=3; it takes every other seat) instead of reading the runs' own "
                        "measurements against greedy")
    p.add_argument("--sims", type=int_arg(1, 100_000), default=64, metavar="S",
                   help="with --against: the best models' simulations per move (default 64)")
    p.add_argument("--games", type=int_arg(1, MATCH_MAX_GAMES), default=200, metavar="N",
                   help="with --against: games a model (default 200)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="with --against: match seed (default 0)")
    p.add_argument("--parallel", type=int_arg(1, MAX_PARALLEL), default=50, metavar="P",
                   help="with --against: games in flight, searches batched (default 50)")
    p.add_argument("--at", metavar="MINUTES", type=_minutes_list, default=None,
                   help="with --against: the best model at these minutes since each run started, e.g. 10,20,30 "
                        "(default: every promotion)")
    add_json(p)
    p.set_defaults(func=run)


def _minutes_list(text: str) -> list[float]:
    """``--at``: comma-separated minutes, each a number >= 0, in increasing order."""
    try:
        minutes = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of minutes, e.g. 10,20,30") from None
    if any(not 0 <= m < float("inf") for m in minutes) or minutes != sorted(set(minutes)):
        raise argparse.ArgumentTypeError(f"{text!r}: the minutes must be numbers >= 0, increasing")
    return minutes


def run(args: argparse.Namespace) -> int:
    from hopzero.rundir import RunDir

    paths = [Path(name) for name in args.runs]
    for path in paths:
        if not (path / "run.json").is_file():
            raise CliError(f"{path}: not a run directory (no run.json)")
    if len({path.name for path in paths}) < len(paths):
        raise CliError("two run directories share a name: the picture labels each run by its directory's name")
    rundirs = [RunDir(path) for path in paths]
    if args.against is None:
        if args.at is not None:
            raise CliError("--at picks the models --against referees: give --against SPEC too")
        return _own_measurements(args, rundirs)
    return _refereed(args, rundirs)


def _own_measurements(args: argparse.Namespace, rundirs: list[Any]) -> int:
    """The runs' own measurements of their best models against greedy (evaluations.jsonl)."""
    from hopzero.plots import greedy_curve, write_curves

    curves = {rundir.path.name: greedy_curve(rundir) for rundir in rundirs}
    write_curves(curves, Path(args.out), args.title or "best model against greedy")
    data = {"out": args.out, "runs": {name: [{"minutes": round(t, 2), "version": v, "score": s} for t, v, s in curve]
                                      for name, curve in curves.items()}}
    lines = [f"wrote {args.out}"] + [
        f"  {name}: " + (", ".join(f"{t:.1f} min {100 * s:.0f}%" for t, _, s in curve) or "no measurement yet")
        for name, curve in curves.items()]
    emit(args, data, "\n".join(lines))
    return 0


def _refereed(args: argparse.Namespace, rundirs: list[Any]) -> int:
    """Each run's best models (every promotion, or the best at each ``--at`` minute) in a match
    against ``--against``; a model file that several points name (the same best model at two
    minutes) plays once. Everything is checked before the first game."""
    from evaluator.arena import play_match
    from hopzero.plots import promotion_times, write_curves
    from learner.players import parse_spec
    from plumbing.run_files import sha256_file

    parse_spec(args.against)
    plans, rules = {}, None
    for rundir in rundirs:
        config = rundir.config()
        if config is None:
            raise CliError(f"{rundir.path}: no config.yaml, so the game it trained is unknown")
        game = config.game_rules()
        if rules is not None and game != rules:
            raise CliError(f"{rundir.path}: plays another game than {rundirs[0].path}: one picture is one game")
        rules = game
        try:
            promotions = promotion_times(rundir)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        if not promotions:
            raise CliError(f"{rundir.path}: no best model recorded yet (promotions.jsonl)")
        if args.at is None:
            plan = promotions
        else:
            plan = [(m, *_best_at(promotions, m)) for m in args.at if promotions[0][0] <= m]
        for _, version, model in plan:
            if not model.is_file():
                raise CliError(f"{rundir.path}: the file of v{version} is missing ({model})")
            parse_spec(_model_spec(model, args.sims))
        plans[rundir.path.name] = plan
    results: dict[str, dict[str, Any]] = {}
    curves: dict[str, list[tuple[float, int, float]]] = {}
    data: dict[str, Any] = {"out": args.out, "against": args.against, "sims": args.sims, "games": args.games,
                            "seed": args.seed, "runs": {}}
    for name, plan in plans.items():
        curves[name], data["runs"][name] = [], []
        for minutes, version, model in plan:
            key = sha256_file(model)
            if key not in results:
                match = play_match(rules, _model_spec(model, args.sims), *[args.against] * (rules.players - 1),
                                   games=args.games, seed=args.seed, parallel=args.parallel)
                mine = match.records[0]
                results[key] = {"score": mine.mean_score, "wins": mine.wins, "draws": mine.draws,
                                "losses": match.games - mine.wins - mine.draws, "games": match.games}
                if not args.json:
                    sys.stderr.write(f"  {name} v{version}: score {100 * mine.mean_score:.2f}% over {match.games} "
                                     f"games\n")
            curves[name].append((minutes, version, results[key]["score"]))
            data["runs"][name].append({"minutes": round(minutes, 2), "version": version, **results[key]})
    title = args.title or f"best model at {args.sims} simulations against {args.against}"
    write_curves(curves, Path(args.out), title, ylabel=f"score against {args.against}, {args.games} games (%)")
    lines = [f"wrote {args.out}"] + [
        f"  {name}: " + ", ".join(f"{t:.1f} min v{v} {100 * s:.1f}%" for t, v, s in curve)
        for name, curve in curves.items()]
    emit(args, data, "\n".join(lines))
    return 0


def _best_at(promotions: list[tuple[float, int, Path]], minutes: float) -> tuple[int, Path]:
    """The version and file of the run's best model at ``minutes`` (its last promotion by then)."""
    return [(version, model) for t, version, model in promotions if t <= minutes][-1]


def _model_spec(model: Path, sims: int) -> str:
    """The SPEC that plays a run's model file in a match."""
    return f"mcts:model={model},sims={sims}"
