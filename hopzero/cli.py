"""The ``hopzero`` command line: one small function per sub-command, argparse sub-parsers.

Sub-commands (``--json`` prints one JSON object on stdout; other tools read these shapes):

- ``perft``: move-tree leaf counts, ``{"preset", "perft": [n1..nD]}`` (+ ``"divide"``).
- ``match``: a match between two player SPECs under the seed's protocol (``evaluator.arena``).
- ``move``: the move a player SPEC chooses in a position, ``{"move": [s, e]}``.
- ``bench WHAT``: a speed benchmark, one module each in ``hopzero.bench`` (``hopzero bench --help``).
- ``train``: the whole training system (``hopzero.train``).
- ``play``: a person against a player in the terminal (``hopzero.play``).
- ``engine``: the CCP engine protocol on stdin/stdout (``hopzero.ccp``, docs/PROTOCOL.md).
- ``dashboard build|render``: the Grafana dashboard JSON, or a PNG of its panels from Prometheus
  (``hopzero.dashboard``).
- ``serve``: play, analyse and watch runs in a browser (``hopzero.web``, docs/WEB.md).

Adding a command: write ``_add_NAME(subparsers)`` that builds its parser and sets
``func=_cmd_NAME``, and list it in ``_COMMANDS``. A mistake in the arguments (unknown preset or
player, malformed position, illegal move, bad number) exits with status 2 and one line on stderr
that says what is wrong and what is valid, never a traceback. Every number is read by
``ccengine.notation.parse_int`` (ASCII digits, within a range: ``_int_arg(minimum, maximum)``;
the bounds are the constants below) or ``parse_positive_float``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

# A Ctrl-C stops every command from its first instant, also one started with SIGINT ignored (a
# `&` in a script): Python's own handler, set before the slow imports below (torch, Ray).
signal.signal(signal.SIGINT, signal.default_int_handler)

from ccengine.engines import ENGINES, EngineError, new_state
from ccengine.notation import NotationError, parse_int, parse_move, parse_position, parse_positive_float
from ccengine.players import PlayerSpecError, make_player
from ccengine.reference import IllegalMoveError
from ccengine.reference import perft as reference_perft
from ccengine.rules import Rules, RulesError, preset
from hopzero import bench
from hopzero.ccp import DEFAULT_MAX_MOVETIME_MS, DEFAULT_MAX_NODES, MOVETIME_CEILING_MS, NODES_CEILING
from learner import dqn_player, network_player  # noqa: F401 - register the dqn and mcts SPECs

__all__ = ["CliError", "build_parser", "main"]

EXIT_USAGE = 2


class CliError(Exception):
    """A user mistake, reported as one line on stderr with exit status 2."""


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean "the arguments are wrong", not "hopzero has a bug"."""
    return (CliError, RulesError, NotationError, IllegalMoveError, PlayerSpecError, EngineError)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (argparse prints the usage block by default)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(EXIT_USAGE)


# ---------------------------------------------------------------------------------------------
# Argument types (argparse turns ArgumentTypeError into its one-line error)
# ---------------------------------------------------------------------------------------------


def _preset_arg(name: str) -> Rules:
    try:
        return preset(name)
    except RulesError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: The default upper bound of an integer argument: what a C ``int`` holds, so no count reaches
#: the compiled engine or search as an overflow.
INT_ARG_MAX = 2**31 - 1
#: Seeds: what every numpy generator accepts (the legacy ones stop at 2**32 - 1).
SEED_MAX = 2**32 - 1
#: perft's tree grows about 30-fold a ply on cc49: depth 6 already takes minutes.
PERFT_MAX_DEPTH = 8
#: A match: games, processes, games in flight, random opening plies.
MATCH_MAX_GAMES = 1_000_000
MAX_WORKERS = 256
MAX_PARALLEL = 4096
MAX_RANDOM_OPENING = 1000
#: Every count of a benchmark (games, simulations, steps, positions, threads).
BENCH_INT_MAX = 100_000


def _int_arg(minimum: int, maximum: int = INT_ARG_MAX) -> Callable[[str], int]:
    """An argparse type: an integer in ``minimum..maximum``, ASCII digits only."""

    def parse(text: str) -> int:
        try:
            return parse_int(text, "", minimum=minimum, maximum=maximum)
        except NotationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = f"integer in {minimum}..{maximum}"
    return parse


def _seed_arg(text: str) -> int:
    """An argparse type for ``--seed``: ``0..SEED_MAX``."""
    return _int_arg(0, SEED_MAX)(text)


def _float_arg(text: str, maximum: float = 1e6) -> float:
    """An argparse type: a positive finite number (``nan``, ``inf`` and signs refused)."""
    try:
        return parse_positive_float(text, "", maximum=maximum)
    except NotationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_preset(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--preset",
        type=_preset_arg,
        default=preset("cc49"),
        metavar="P",
        help="game rules: cc49 (default), paper, cc81, small-N-k (N 4..6, k 1, 3, 6), "
             "star2 (the 121-hole star, CCERL-2P10-v2), star3, star4, star6 (the star for 3, 4 or 6 players)",
    )


def _add_engine(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=ENGINES, default="cython", help="game engine (default: cython)")


def _add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _add_position(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument(
        "--position",
        metavar="POS",
        required=required,
        help="position text, e.g. '..oo/...o/x.../xx.. x 0' (default: the start)" if not required else "position text",
    )
    p.add_argument(
        "--moves",
        metavar="S-E,...",
        default="",
        help="moves to play from the position first, e.g. '36-29,12-19' ('pass' for a pass)",
    )


# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------


def _emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    print(json.dumps(data) if args.json else text)


def _state_from_args(args: argparse.Namespace, engine: str) -> Any:
    """The state given by ``--preset``, ``--position`` and ``--moves``."""
    rules: Rules = args.preset
    position = parse_position(rules, args.position) if args.position else None
    state = new_state(rules, position, engine)
    for item in filter(None, (m.strip() for m in args.moves.split(","))):
        move = parse_move(rules, item)
        if state.is_terminal():
            raise CliError(f"move {item!r}: the game is already over (result {state.result()})")
        legal = state.legal_moves()
        if move not in legal:
            shown = ", ".join(f"{s}-{e}" for s, e in legal[:12]) + (", ..." if len(legal) > 12 else "")
            raise CliError(f"move {item!r} is not legal at ply {state.ply}; legal: {shown}")
        state.play(move)
    return state


def _perft(state: Any, depth: int) -> int:
    fn = getattr(state, "perft", None)
    return int(fn(depth)) if fn is not None else reference_perft(state, depth)


def _divide(state: Any, depth: int) -> list[tuple[tuple[int, int], int]]:
    fn = getattr(state, "divide", None)
    if fn is not None:
        return [((int(s), int(e)), int(n)) for (s, e), n in fn(depth)]
    out = []
    for move in state.legal_moves():
        state.play(move)
        out.append((move, _perft(state, depth - 1)))
        state.undo()
    return out


# ---------------------------------------------------------------------------------------------
# perft
# ---------------------------------------------------------------------------------------------


def _add_perft(sub: Any) -> None:
    p = sub.add_parser("perft", help="count the leaves of the legal-move tree (move generator check)")
    _add_preset(p)
    _add_position(p)
    p.add_argument("--depth", type=_int_arg(1, PERFT_MAX_DEPTH), required=True, metavar="D",
                   help=f"plies (1..{PERFT_MAX_DEPTH})")
    p.add_argument("--divide", action="store_true", help="also the count below each first move at depth D")
    _add_engine(p)
    _add_json(p)
    p.set_defaults(func=_cmd_perft)


def _cmd_perft(args: argparse.Namespace) -> int:
    state = _state_from_args(args, args.engine)
    counts = [_perft(state, d) for d in range(1, args.depth + 1)]
    data: dict[str, Any] = {"preset": args.preset.name, "perft": counts}
    lines = [f"perft({d}) = {n}" for d, n in enumerate(counts, 1)]
    if args.divide:
        divide = _divide(state, args.depth)
        data["divide"] = [[s, e, n] for (s, e), n in divide]
        lines += [f"  {s}-{e}: {n}" for (s, e), n in divide]
    _emit(args, data, "\n".join(lines))
    return 0


# ---------------------------------------------------------------------------------------------
# match
# ---------------------------------------------------------------------------------------------


def _add_match(sub: Any) -> None:
    p = sub.add_parser("match", help="play a match between two players (seed protocol), or N on star3/4/6")
    _add_preset(p)
    p.add_argument(
        "--a", metavar="SPEC",
        help="player A, e.g. greedy, random, alphabeta:depth=3, mcts:model=PATH,sims=S, dqn:model=PATH"
    )
    p.add_argument("--b", metavar="SPEC", help="player B")
    p.add_argument("--players", nargs="+", metavar="SPEC", default=None,
                   help="one SPEC per seat of the preset (instead of --a/--b; star3: three), every seat rotation "
                        "played")
    p.add_argument("--games", type=_int_arg(1, MATCH_MAX_GAMES), default=100, metavar="N", help="games (default 100)")
    p.add_argument("--seed", type=_seed_arg, default=0, metavar="S", help="match seed (default 0)")
    p.add_argument(
        "--random-opening", type=_int_arg(0, MAX_RANDOM_OPENING), default=3, metavar="K",
        help="random first moves per side (default 3)",
    )
    p.add_argument("--workers", type=_int_arg(1, MAX_WORKERS), default=1, metavar="W",
                   help=f"processes, at most {MAX_WORKERS} (same result for any W)")
    p.add_argument(
        "--parallel", type=_int_arg(1, MAX_PARALLEL), default=1, metavar="P",
        help="games in flight in one process, mcts searches batched (default 1: one game at a time)",
    )
    p.add_argument("--out", metavar="FILE", default=None,
                   help="append the result as one JSON line to FILE (the format `hopzero serve --results` reads)")
    _add_engine(p)
    _add_json(p)
    p.set_defaults(func=_cmd_match)


class _Progress:
    """A progress line on stderr: rewritten in place on a terminal, every 10% otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.last = 0.0
        self.score = [0, 0, 0]  # A wins, B wins, draws

    def __call__(self, done: int, total: int, a_result: int) -> None:
        self.score[0 if a_result > 0 else 1 if a_result < 0 else 2] += 1
        if not self.enabled:
            return
        now = time.perf_counter()
        step = max(1, total // 10)
        if self.tty and (now - self.last < 0.2 and done < total):
            return
        if not self.tty and done % step and done < total:
            return
        self.last = now
        a, b, d = self.score
        line = f"game {done}/{total}: A {a}  B {b}  draws {d}  ({done / max(now - self.start, 1e-9):.1f} games/s)"
        sys.stderr.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
        if self.tty and done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _cmd_match(args: argparse.Namespace) -> int:
    from evaluator.arena import play_match  # deferred: perft and move need none of it

    if args.parallel > 1 and (args.workers > 1 or args.engine != "cython"):
        raise CliError("--parallel plays in one process with the cython engine: drop --workers/--engine")
    seats = args.preset.players
    if args.players is not None and (args.a is not None or args.b is not None):
        raise CliError("give the players as --players SPEC ... or as --a SPEC --b SPEC, not both")
    if args.players is None and (args.a is None or args.b is None):
        raise CliError(f"give the players: --players with {seats} SPECs" if seats != 2 else
                       "give both players: --a SPEC --b SPEC (or --players SPEC SPEC)")
    if args.players is not None and len(args.players) != seats:
        raise CliError(f"--players: {args.preset.name} seats {seats} players, {len(args.players)} SPECs were given")
    if args.players is None and seats != 2:
        raise CliError(f"--preset {args.preset.name} seats {seats} players: give them with --players "
                       f"({seats} SPECs), not --a/--b")
    if args.out is not None and not Path(args.out).resolve().parent.is_dir():
        raise CliError(f"--out {args.out}: its directory does not exist")  # found before the match, not after
    if seats != 2:
        return _multi_match(args)
    if args.players is not None:
        args.a, args.b = args.players
    progress = _Progress(enabled=not args.json)
    done = 0

    def on_game(pair: int, game_in_pair: int, a_result: int) -> None:
        nonlocal done
        done += 1
        progress(done, args.games, a_result)

    start = time.perf_counter()
    result = play_match(
        args.preset,
        args.a,
        args.b,
        games=args.games,
        seed=args.seed,
        random_opening=args.random_opening,
        parallel=args.parallel,
        workers=args.workers,
        engine=args.engine,
        on_game=on_game,
    )
    elapsed = time.perf_counter() - start
    data = result.to_dict()
    data.update(engine=args.engine, workers=args.workers, parallel=args.parallel, elapsed_s=round(elapsed, 3))
    if args.out is not None:
        from evaluator.results import append_result, result_line
        from learner.records import versions_now

        append_result(args.out, result_line(result, versions_now()))
    _emit(args, data, _match_text(result, elapsed))
    return 0


def _multi_match(args: argparse.Namespace) -> int:
    """``hopzero match --players`` on a preset of N > 2 players."""
    from evaluator.arena import play_multi_match

    done = 0
    enabled = not args.json
    step = max(1, args.games // 10)

    def on_game(set_index: int, rotation: int, scores: tuple[float, ...]) -> None:
        nonlocal done
        done += 1
        if enabled and (done % step == 0 or done == args.games):
            sys.stderr.write(f"game {done}/{args.games}\n")
            sys.stderr.flush()

    start = time.perf_counter()
    result = play_multi_match(args.preset, args.players, games=args.games, seed=args.seed,
                              random_opening=args.random_opening, parallel=args.parallel, workers=args.workers,
                              engine=args.engine, on_game=on_game)
    elapsed = time.perf_counter() - start
    data = result.to_dict()
    data.update(engine=args.engine, workers=args.workers, parallel=args.parallel, elapsed_s=round(elapsed, 3))
    if args.out is not None:
        from evaluator.results import append_result, multi_result_lines
        from learner.records import versions_now

        for line in multi_result_lines(result, versions_now()):
            append_result(args.out, line)
    _emit(args, data, _multi_match_text(result, elapsed))
    return 0


def _multi_match_text(r: Any, elapsed: float) -> str:
    n = len(r.players)
    width = max(len(name) for name in r.players)
    lines = [f"{r.games} games on {r.preset}, seed {r.seed}, {r.random_opening} random opening moves a player, "
             f"every seat rotation (fair share {1 / n:.3f})"]
    for k, (name, rec) in enumerate(zip(r.players, r.records)):
        seats = "  ".join(f"seat {s}: {x.mean_score:.3f}" for s, x in enumerate(r.by_seat[k]))
        lines.append(f"  {k} {name:<{width}}  score {rec.mean_score:.3f}  wins {rec.wins:5d} "
                     f"({100 * rec.wins / max(r.games, 1):5.1f}%)   {seats}")
    lines.append(f"  draws {r.draws}; mean score by seat: " + ", ".join(f"{x:.3f}" for x in r.seat_scores))
    lines.append(f"  mean plies {r.mean_plies:.1f}, mean legal moves per position {r.mean_legal_moves:.1f}")
    lines.append(f"  {elapsed:.1f} s ({r.games / max(elapsed, 1e-9):.1f} games/s)")
    return "\n".join(lines)


def _match_text(r: Any, elapsed: float) -> str:
    def pct(n: int) -> str:
        return f"{100 * n / r.games:5.1f}%"

    width = max(len(r.a), len(r.b))
    return "\n".join(
        [
            f"{r.games} games on {r.preset}, seed {r.seed}, {r.random_opening} random opening moves a side, "
            "sides alternating",
            f"  A {r.a:<{width}}  wins {r.a_wins:5d} ({pct(r.a_wins)})   score {r.a_score:.3f}",
            f"  B {r.b:<{width}}  wins {r.b_wins:5d} ({pct(r.b_wins)})",
            f"    {'draws':<{width}}       {r.draws:5d} ({pct(r.draws)})",
            f"  A moving first:  {r.a_first.wins} won, {r.a_first.losses} lost, {r.a_first.draws} drawn",
            f"  A moving second: {r.a_second.wins} won, {r.a_second.losses} lost, {r.a_second.draws} drawn",
            f"  first mover won {r.seat_wins[0]}, second mover won {r.seat_wins[1]}",
            f"  mean plies {r.mean_plies:.1f}, mean legal moves per position {r.mean_legal_moves:.1f}",
            f"  {elapsed:.1f} s ({r.games / max(elapsed, 1e-9):.1f} games/s)",
        ]
    )


# ---------------------------------------------------------------------------------------------
# move
# ---------------------------------------------------------------------------------------------


def _add_move(sub: Any) -> None:
    p = sub.add_parser("move", help="the move a player chooses in a position")
    _add_preset(p)
    _add_position(p, required=True)
    p.add_argument("--player", required=True, metavar="SPEC", help="player SPEC, e.g. greedy")
    p.add_argument("--seed", type=_seed_arg, default=0, metavar="S", help="the player's seed (default 0)")
    _add_engine(p)
    _add_json(p)
    p.set_defaults(func=_cmd_move)


def _cmd_move(args: argparse.Namespace) -> int:
    player = make_player(args.player, args.preset, args.seed)  # a bad SPEC fails before any work
    state = _state_from_args(args, args.engine)
    if state.is_terminal():
        raise CliError(f"the game is over in this position (result {state.result()}); there is no move to choose")
    s, e = player.select(state)
    _emit(args, {"move": [int(s), int(e)]}, "pass" if (s, e) == (-1, -1) else f"{s}-{e}")
    return 0


# ---------------------------------------------------------------------------------------------
# bench
# ---------------------------------------------------------------------------------------------


def _add_bench(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmarks: " + ", ".join(bench.BENCHMARKS),
        description="Speed benchmarks, one per WHAT (hopzero/bench/); --json prints one JSON object.",
    )
    what = p.add_subparsers(dest="what", metavar="WHAT", parser_class=_Parser)
    what.required = True
    kit = bench.ArgKit(add_preset=_add_preset, add_json=_add_json, int_at_least=_bench_int_arg, positive=_float_arg)
    bench.add_parsers(what, kit)
    p.set_defaults(func=_cmd_bench)


def _bench_int_arg(minimum: int) -> Callable[[str], int]:
    return _int_arg(minimum, BENCH_INT_MAX)


def _cmd_bench(args: argparse.Namespace) -> int:
    try:
        report = bench.run(args)
    except bench.BenchError as exc:
        raise CliError(str(exc)) from None
    _emit(args, report.data, report.text)
    if report.failure:
        sys.stderr.write(f"hopzero bench {args.what}: error: {report.failure}\n")
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# train (the whole system)
# ---------------------------------------------------------------------------------------------


def _add_train(sub: Any) -> None:
    from hopzero.config import CONFIG_NAMES

    p = sub.add_parser("train", help="train by self-play (Ray actors, replay buffer, learner, 55%% gate)")
    p.add_argument("--config", choices=CONFIG_NAMES, default="fast",
                   help="training configuration: demo (minutes), fast (ours, default), paper (Table 1), "
                        "star2 (the star), star3 (the star, three players), star6 (six players), dqn (the paper's Deep Q-learning "
                        "baseline)")
    p.add_argument("--preset", metavar="P", default=None, help="the game (default: the config's; fast/demo: cc49)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="change a config field, e.g. --set learner.lr=0.01 (repeatable)")
    p.add_argument("--ray-address", metavar="ADDR", default=None, help="join this Ray cluster (default: local Ray)")
    p.add_argument("--redis-url", metavar="URL", default=None,
                   help="use this Redis as the replay buffer (implies --set replay.backend=redis)")
    p.add_argument("--seed", type=_int_arg(0), default=None, metavar="S", help="seed (default: the config's, 0)")
    p.add_argument("--run-dir", metavar="DIR", default=None,
                   help="run directory (default runs/CONFIG-PRESET); an existing one is resumed")
    p.add_argument("--init-model", metavar="MODEL", default=None,
                   help="start a new run from this network (a network file, a run directory's best model, "
                        "or 'shipped') instead of stage 1 or random weights")
    p.add_argument("--json", action="store_true", help="print the final summary as JSON")
    p.set_defaults(func=_cmd_train)


def _cmd_train(args: argparse.Namespace) -> int:
    import signal

    # The first Ctrl-C stops the run at any stage, even in a process started with SIGINT ignored
    # (a `&` in a script): loading the config imports torch, which takes seconds.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from hopzero.config import ConfigError, load_config
    from hopzero.train import TrainingFailed, train

    overrides = list(args.overrides)
    if args.redis_url:
        overrides.append("replay.backend=redis")
    try:
        config = load_config(args.config, preset_name=args.preset, overrides=overrides, seed=args.seed)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    run_dir = args.run_dir or os.path.join("runs", f"{config.name}-{config.preset}")
    try:
        summary = train(config, run_dir=run_dir, ray_address=args.ray_address, redis_url=args.redis_url,
                        init_model=args.init_model, out=sys.stderr if args.json else sys.stdout)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    except TrainingFailed as exc:  # a component kept failing: the run stopped, not the user's typing
        sys.stderr.write(f"hopzero train: error: {exc}\n")
        return 1
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "text"}))
    return 0


# ---------------------------------------------------------------------------------------------
# play (a person against a player, in the terminal)
# ---------------------------------------------------------------------------------------------


def _add_play(sub: Any) -> None:
    p = sub.add_parser("play", help="play against a player in the terminal")
    _add_preset(p)
    p.add_argument("--player", default="greedy", metavar="SPEC", help="your opponent (default greedy)")
    p.add_argument("--side", choices=("x", "o", "0", "1", "2", "3", "4", "5"), default="x",
                   help="x (player 0) moves first, from the bottom (the star: from the top), o is player 1; "
                   "on the star of 3, 4 or 6 players, a player number (default x)")
    p.add_argument("--seed", type=_seed_arg, default=0, metavar="S", help="the opponent's seed (default 0)")
    p.add_argument("--color", action="store_true", help="colour the board (default: only on a terminal)")
    p.set_defaults(func=_cmd_play)


def _cmd_play(args: argparse.Namespace) -> int:
    from ccengine.render import use_color
    from hopzero.play import play_terminal

    side = "xo".index(args.side) if args.side in ("x", "o") else int(args.side)
    if side >= args.preset.players:
        raise CliError(f"--side {args.side}: the {args.preset.name} game seats players 0..{args.preset.players - 1}")
    make_player(args.player, args.preset, args.seed)  # a bad SPEC fails before the board is drawn
    play_terminal(
        args.preset,
        args.player,
        human_side=side,
        seed=args.seed,
        out=sys.stdout,
        color=args.color or use_color(sys.stdout),
    )
    return 0


# ---------------------------------------------------------------------------------------------
# engine (CCP protocol over stdin/stdout)
# ---------------------------------------------------------------------------------------------


def _add_ccp(sub: Any) -> None:
    p = sub.add_parser("engine", help="speak the CCP engine protocol on stdin/stdout (docs/PROTOCOL.md)")
    _add_preset(p)
    p.add_argument("--player", default="greedy", metavar="SPEC", help="the player that thinks (default greedy)")
    p.add_argument("--seed", type=_seed_arg, default=0, metavar="S", help="the player's seed (default 0)")
    p.add_argument("--max-nodes", type=_int_arg(1, NODES_CEILING), default=DEFAULT_MAX_NODES, metavar="N",
                   help=f"cap on 'go nodes' (default {DEFAULT_MAX_NODES})")
    p.add_argument("--max-movetime-ms", type=_int_arg(1, MOVETIME_CEILING_MS), default=DEFAULT_MAX_MOVETIME_MS,
                   metavar="MS", help=f"cap on 'go movetime' in milliseconds (default {DEFAULT_MAX_MOVETIME_MS})")
    p.set_defaults(func=_cmd_ccp)


def _cmd_ccp(args: argparse.Namespace) -> int:
    from hopzero.ccp import Limits, serve

    limits = Limits(max_nodes=args.max_nodes, max_movetime_ms=args.max_movetime_ms)
    try:
        return serve(args.preset, args.player, args.seed, sys.stdin.buffer, sys.stdout, limits)
    except BrokenPipeError:  # the referee closed our output: nobody is left to answer
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0


# ---------------------------------------------------------------------------------------------
# dashboard (Grafana JSON; a PNG of its panels from Prometheus)
# ---------------------------------------------------------------------------------------------


def _add_dashboard(sub: Any) -> None:
    p = sub.add_parser("dashboard", help="the Grafana dashboard: build its JSON, or render its panels to a PNG")
    what = p.add_subparsers(dest="what", metavar="WHAT", parser_class=_Parser)
    what.required = True
    b = what.add_parser("build", help="print the dashboard JSON (deploy/grafana/dashboards/hopzero.json)")
    b.add_argument("--out", metavar="FILE", help="write it to FILE instead of stdout")
    b.set_defaults(func=_cmd_dashboard_build)
    r = what.add_parser("render", help="draw the dashboard's panels from Prometheus' data into a PNG")
    r.add_argument("--prometheus", metavar="URL", default="http://127.0.0.1:9090",
                   help="Prometheus' address (default http://127.0.0.1:9090)")
    r.add_argument("--out", metavar="FILE", default="dashboard.png", help="the PNG (default dashboard.png)")
    r.add_argument("--minutes", type=_float_arg, default=60.0, metavar="M", help="time range up to now (default 60)")
    r.set_defaults(func=_cmd_dashboard_render)


def _cmd_dashboard_build(args: argparse.Namespace) -> int:
    from hopzero.dashboard import dashboard_json

    text = dashboard_json()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_dashboard_render(args: argparse.Namespace) -> int:
    import urllib.error

    from hopzero.dashboard import render

    end = time.time()
    try:
        print(render(args.prometheus, args.out, start=end - 60 * args.minutes, end=end))
    except urllib.error.URLError as exc:
        raise CliError(f"cannot query Prometheus at {args.prometheus}: {exc.reason}") from None
    return 0


# ---------------------------------------------------------------------------------------------
# serve (the browser interface)
# ---------------------------------------------------------------------------------------------

#: Caps of ``hopzero serve``: simulations of one search, searches at once, games in memory.
SERVE_MAX_SIMULATIONS = 100_000
SERVE_MAX_SEARCHES = 64
SERVE_MAX_ROOMS = 10_000


def _keep_days_arg(text: str) -> float:
    """``--keep-days``: 0 (keep forever) or a positive number of days."""
    return 0.0 if text == "0" else _float_arg(text, maximum=36_500)


def _add_serve(sub: Any) -> None:
    p = sub.add_parser("serve", help="play (2-6 seats, people and engines, rooms by link), analyse, watch runs "
                                     "in a browser (docs/WEB.md)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 opens it to the network)")
    p.add_argument("--port", type=_int_arg(0, 65535), default=8000, metavar="PORT",
                   help="port (default 8000; 0 picks a free one)")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="where games are kept (SQLite; default $XDG_DATA_HOME/hopzero or ~/.local/share/hopzero)")
    p.add_argument("--keep-days", type=_keep_days_arg, default=30.0, metavar="D",
                   help="finished games, and games nobody moved in, are deleted after D days (default 30; 0: never)")
    p.add_argument("--allow-host", dest="allow_hosts", action="append", default=[], metavar="NAME",
                   help="a host name the server answers to besides localhost and IP addresses (repeatable; "
                        "for --host 0.0.0.0 reached by name)")
    p.add_argument("--run-dir", dest="run_dirs", action="append", default=[], metavar="DIR",
                   help="a training run directory to watch and play against (repeatable)")
    p.add_argument("--results", action="append", default=[], metavar="PATH",
                   help="a match results file (`hopzero match --out`) or a tournament's --out directory for the "
                        "Tables view (repeatable)")
    p.add_argument("--max-sims", type=_int_arg(1, SERVE_MAX_SIMULATIONS), default=2000, metavar="N",
                   help="most simulations of one search (default 2000)")
    p.add_argument("--max-searches", type=_int_arg(1, SERVE_MAX_SEARCHES), default=2, metavar="N",
                   help="analyses running at once over all clients; one more is refused (default 2)")
    p.add_argument("--engine-threads", type=_int_arg(1, SERVE_MAX_SEARCHES), default=1, metavar="N",
                   help="threads playing the engine seats of every room (default 1)")
    p.add_argument("--max-rooms", type=_int_arg(1, SERVE_MAX_ROOMS), default=64, metavar="N",
                   help="games held in memory; others wait in the database (default 64)")
    p.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    from hopzero.web.app import default_data_dir, serve
    from hopzero.web.limits import ChoiceError, Limits
    from hopzero.web.store import StoreError

    limits = Limits(max_simulations=args.max_sims, max_searches=args.max_searches, engine_threads=args.engine_threads,
                    max_rooms=args.max_rooms, keep_days=args.keep_days)
    try:
        return serve(args.host, args.port, data_dir=args.data or default_data_dir(), limits=limits, out=sys.stdout,
                     run_dirs=args.run_dirs, results=args.results, allowed_hosts=args.allow_hosts)
    except (ChoiceError, StoreError) as exc:
        raise CliError(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# tournament
# ---------------------------------------------------------------------------------------------


def _add_tournament(sub: Any) -> None:
    p = sub.add_parser("tournament", help="a round robin between players, rated on one ladder (resumable)")
    _add_preset(p)
    p.add_argument("--players", nargs="+", required=True, metavar="SPEC",
                   help="two or more player SPECs (random anchors the ladder at 0, as CCERL does)")
    p.add_argument("--games", type=_int_arg(2, MATCH_MAX_GAMES), default=40, metavar="N",
                   help="games per pair, even: colour-swapped pairs (default 40); N players (star3/4/6): per "
                        "group of N, a multiple of N (every seat rotation)")
    p.add_argument("--seed", type=_seed_arg, default=0, metavar="S", help="tournament seed (default 0)")
    p.add_argument("--random-opening", type=_int_arg(0, MAX_RANDOM_OPENING), default=3, metavar="K",
                   help="random first moves per side (default 3)")
    p.add_argument("--parallel", type=_int_arg(1, MAX_PARALLEL), default=1, metavar="P",
                   help="games in flight in one process, mcts searches batched (default 1)")
    p.add_argument("--workers", type=_int_arg(1, MAX_WORKERS), default=1, metavar="W",
                   help=f"processes, at most {MAX_WORKERS} (same result for any W)")
    p.add_argument("--reference", action="append", default=[], metavar="LABEL=W-D-L",
                   help="a published record against greedy to place on the ladder, no games played (repeat; "
                        "the seed paper's agent: 'seed paper=271-1-28')")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="where games.jsonl (appended as games finish: run again to resume) and ladder.json, "
                        "ladder.md, ladder.png go (default tournament-PRESET-SEED)")
    _add_json(p)
    p.set_defaults(func=_cmd_tournament)


def _cmd_tournament(args: argparse.Namespace) -> int:
    from evaluator.tournament import Tournament, TournamentError, write_outputs

    out = Path(args.out or f"tournament-{args.preset.name}-{args.seed}")
    try:
        tournament = Tournament(args.preset, args.players, games=args.games, seed=args.seed,
                                path=out / "games.jsonl", random_opening=args.random_opening,
                                parallel=args.parallel, workers=args.workers, references=args.reference)
        total = len(tournament.groups()) * args.games
        played = sum(len(v) for v in tournament.load().values())
    except TournamentError as exc:
        raise CliError(str(exc)) from None
    if played and not args.json:
        sys.stderr.write(f"resuming {out / 'games.jsonl'}: {played} of {total} games already played\n")
    start = time.perf_counter()

    def progress(*game: Any) -> None:
        nonlocal played
        played += 1
        if not args.json and (played % max(1, total // 20) == 0 or played == total):
            rate = played / max(time.perf_counter() - start, 1e-9)
            who = " vs ".join(game[0] if len(game) == 3 else game[:2])  # (group, ...) or (a, b, ...)
            sys.stderr.write(f"game {played}/{total} ({who}), {rate:.1f} games/s\n")

    result = tournament.run(on_game=progress)
    files = write_outputs(result, out, random_opening=args.random_opening)
    _emit(args, {**result.to_dict(), "files": [str(f) for f in files]},
          result.text() + "\n" + "wrote " + ", ".join(str(f) for f in files))
    return 0


# ---------------------------------------------------------------------------------------------
# td-train
# ---------------------------------------------------------------------------------------------


def _add_td_train(sub: Any) -> None:
    p = sub.add_parser("td-train", help="learn a linear evaluation by TD(lambda) against greedy (Li 2016)")
    _add_preset(p)
    p.add_argument("--episodes", type=_int_arg(1, 1_000_000), default=800, metavar="N",
                   help="games against the opponent (default 800, the report's)")
    p.add_argument("--alpha", type=float, default=0.02, metavar="A", help="step size (default 0.02)")
    p.add_argument("--lam", type=float, default=0.7, metavar="L", help="trace decay lambda (default 0.7)")
    p.add_argument("--epsilon", type=float, default=0.0, metavar="E", help="random-move share (default 0)")
    p.add_argument("--opponent", default="greedy", metavar="SPEC", help="who it learns against (default greedy)")
    p.add_argument("--seed", type=_seed_arg, default=0, metavar="S", help="seed (default 0)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="where weights.json (for alphabeta:eval=linear,weights=DIR/weights.json), curve.jsonl and "
                        "curve.png go")
    _add_json(p)
    p.set_defaults(func=_cmd_td_train)


def _cmd_td_train(args: argparse.Namespace) -> int:
    from ccengine.alphabeta import weights_document
    from hopzero.plots import write_td_curve
    from learner.records import versions_now
    from learner.run_files import atomic_write_text
    from learner.td_learning import TDConfig, train_td

    try:
        config = TDConfig(episodes=args.episodes, alpha=args.alpha, lam=args.lam, epsilon=args.epsilon,
                          opponent=args.opponent)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    make_player(args.opponent, args.preset)  # a bad SPEC fails before any game
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()

    def progress(episode: int, result: int) -> None:
        if not args.json and (episode + 1) % max(1, args.episodes // 10) == 0:
            sys.stderr.write(f"episode {episode + 1}/{args.episodes}\n")

    result = train_td(args.preset, config, seed=args.seed, on_episode=progress)
    trained = {"method": "TD(lambda) on the positions after the learner's moves", **dataclasses.asdict(config),
               "seed": args.seed, "seconds": round(time.perf_counter() - start, 2)}
    doc = weights_document(args.preset, result.weights, trained, versions_now())
    atomic_write_text(out / "weights.json", json.dumps(doc, indent=1) + "\n")
    curve = result.curve()
    atomic_write_text(out / "curve.jsonl", "".join(
        json.dumps({"episode": i + 1, "result": r, "last100": round(c, 4)}) + "\n"
        for i, (r, c) in enumerate(zip(result.results, curve))))
    write_td_curve(out / "curve.png", curve, args.preset.name, config.opponent)
    data = {"out": str(out), "weights": result.weights, "last100": curve[-1], "episodes": args.episodes,
            "seconds": trained["seconds"]}
    _emit(args, data, f"{args.episodes} episodes in {trained['seconds']} s; score over the last 100: "
                      f"{100 * curve[-1]:.1f}% (one-ply play); wrote {out / 'weights.json'}, curve.jsonl, curve.png; "
                      f"play it as alphabeta:depth=3,eval=linear,weights={out / 'weights.json'}")
    return 0


# ---------------------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------------------


def _add_export(sub: Any) -> None:
    p = sub.add_parser("export", help="write a model in another format (ONNX) for use outside hopzero")
    p.add_argument("--onnx", action="store_true", required=True,
                   help="write ONNX (the one format so far), with the input description in its metadata")
    p.add_argument("model", metavar="MODEL", help="a network file, a learner checkpoint, a run directory (its best "
                                                  "model) or 'shipped' (with --preset)")
    p.add_argument("out", metavar="OUT", help="the file to write")
    p.add_argument("--preset", type=_preset_arg, default=None, metavar="P",
                   help="the game the network plays (default: the one its file records)")
    _add_json(p)
    p.set_defaults(func=_cmd_export)


def _cmd_export(args: argparse.Namespace) -> int:
    from learner.model_files import resolve_model_source
    from learner.onnx_backend import export_onnx

    if args.model == "shipped" and args.preset is None:
        raise CliError("'shipped' names a preset's model: give --preset")
    try:
        source = resolve_model_source(args.preset, args.model)
        meta = export_onnx(source, args.out, args.preset)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    data = {"out": args.out, "source": str(source), "metadata": meta}
    _emit(args, data, f"wrote {args.out}: the {meta['preset']} network of {source} ({meta['encoding']} encoding, "
                      f"history {meta['history']}) as ONNX")
    return 0


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------

_COMMANDS: tuple[Callable[[Any], None], ...] = (
    _add_perft, _add_match, _add_move, _add_bench, _add_train, _add_play, _add_ccp, _add_dashboard, _add_serve,
    _add_tournament, _add_td_train, _add_export,
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser (exposed for tests and for documentation)."""
    parser = _Parser(prog="hopzero", description="AlphaZero-style Chinese Checkers (see README.md)")
    from hopzero import __version__

    parser.add_argument("--version", action="version", version=f"hopzero {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for add in _COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (0 ok, 1 failed check, 2 bad arguments)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"hopzero {args.command}" + (f" {args.what}" if getattr(args, "what", None) else "")
    try:
        return int(args.func(args))
    except _user_errors() as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        return EXIT_USAGE
    except OSError as exc:  # a file named in the arguments (positions, model) cannot be read
        sys.stderr.write(f"{prog}: error: {exc.strerror or exc}: {exc.filename or ''}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
