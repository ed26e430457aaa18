"""``hopzero bench reply``: seconds of an engine seat's reply in ``hopzero serve``, per preset and
named level, and whether the server's event loop stays free meanwhile.

The engine is built as the server builds it for a seat (``hopzero.web.engines.Engines``: the
choice resolved to its level's simulations or depth, the model loaded once through the server's
``ModelLibrary``), and each reply is computed as the server computes it: by
``hopzero.web.thinking.think`` in chunks, on a worker thread of an asyncio loop
(``run_in_executor``). The positions come from games of ``greedy-stochastic`` players, taken
between a tenth and nine tenths of each game (mid-game: pieces in the middle of the board, where
moves and hop chains are most numerous). One reply from the start position first loads the model
(``first_s``, apart).

Meanwhile a task on the loop sleeps ``TICK_S`` at a time; ``loop_lag_max_ms`` is the longest it
overslept: what a page's request waits at worst while the engine thinks.

Each reply is timed twice: on the wall clock (``mean_s``, ``max_s``: what a person waits) and in
the CPU time of the thread that thinks (``cpu_mean_s``, ``cpu_max_s``). The search runs on one
thread, so on an idle machine the two agree; on a shared machine the CPU time is what the reply
costs, whatever else runs.

``--presets`` and ``--levels`` take lists; every pair is one entry of ``results``. With one pair,
its figures are also the report's own keys.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, BenchError, Report

__all__ = ["NAME", "SUMMARY", "add_arguments", "bench_reply", "game_positions", "run"]

NAME = "reply"
SUMMARY = "hopzero serve: seconds per engine reply at each named level, and the event loop's lag"
#: The loop's ticker period (seconds).
TICK_S = 0.01
_KINDS = ("model", "alphabeta", "rollout", "greedy", "random")


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--presets``, ``--kind``, ``--levels`` (or ``--sims``), ``--positions``."""
    p.add_argument("--presets", default=None, metavar="P,P",
                   help="presets, comma-separated (default: --preset's)")
    p.add_argument("--kind", choices=_KINDS, default="model",
                   help="the engine (default model: hopzero's shipped model of each preset)")
    p.add_argument("--levels", default="beginner,club,strong,max", metavar="L,L",
                   help="named levels, comma-separated (default beginner,club,strong,max)")
    p.add_argument("--sims", type=kit.int_at_least(1), default=None, metavar="N",
                   help="a raw number (simulations, or depth for alphabeta) instead of the levels")
    p.add_argument("--positions", type=kit.int_at_least(1), default=10, metavar="N",
                   help="mid-game positions, one reply each (default 10)")


def game_positions(rules: Rules, count: int, seed: int) -> list[Any]:
    """``count`` states from games of ``greedy-stochastic`` players, between a tenth and nine
    tenths of each game (one to three a game), reproducible from ``seed``."""
    from ccengine import new_state
    from learner.players import make_player

    rng = np.random.default_rng(seed)
    out: list[Any] = []
    game = 0
    while len(out) < count:
        players = [make_player("greedy-stochastic", rules, seed * 1000 + game * 10 + p) for p in range(rules.players)]
        state = new_state(rules)
        history = []
        while not state.is_terminal() and state.ply < rules.max_plies:
            history.append(state.copy())
            state.play(players[state.to_move].select(state))
        n = len(history)
        picks = sorted(set(int(x) for x in rng.integers(n // 10, max(n // 10 + 1, 9 * n // 10), size=3)))
        out += [history[i] for i in picks if not history[i].is_terminal()][: count - len(out)]
        game += 1
    return out


def _timed_think(thinker: Any, state: Any) -> float:
    """Think about ``state`` (on the calling worker thread); the thread's CPU seconds."""
    from hopzero.web.thinking import think

    start = time.thread_time()
    think(thinker, state, progress=lambda _: None)
    return time.thread_time() - start


async def _replies(thinker: Any, states: list[Any]) -> tuple[list[float], list[float], float]:
    """Each state's reply time and CPU time, thought on a worker thread as the server does, and
    the loop's longest oversleep meanwhile (seconds)."""
    loop = asyncio.get_running_loop()
    lag = 0.0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal lag
        while not done.is_set():
            t = time.perf_counter()
            await asyncio.sleep(TICK_S)
            lag = max(lag, time.perf_counter() - t - TICK_S)

    tick = asyncio.create_task(ticker())
    times, cpu = [], []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hopzero-engine") as pool:
        for state in states:
            t = time.perf_counter()
            cpu.append(await loop.run_in_executor(pool, _timed_think, thinker, state))
            times.append(time.perf_counter() - t)
    done.set()
    await tick
    return times, cpu, lag


async def _one(engines: Any, rules: Rules, choice: Any, states: list[Any], seed: int) -> dict[str, Any]:
    from ccengine import new_state
    from hopzero.web.limits import ChoiceError

    try:
        engine = engines.resolve(choice, rules)
        thinker = await engines.thinker(engine, rules, seed)
    except ChoiceError as exc:
        if choice.kind == "model":
            raise BenchError(f"no shipped model for {rules.name} (choose --kind alphabeta, rollout, greedy or random)") from None
        raise BenchError(str(exc)) from None
    [first], _, _ = await _replies(thinker, [new_state(rules)])
    times, cpu, lag = await _replies(thinker, states)
    return {
        "preset": rules.name, "kind": engine.kind, "level": engine.level, "number": engine.number,
        "player": engine.spec, "sims": engine.number if engine.kind in ("model", "run", "rollout") else None,
        "positions": len(times), "first_s": round(first, 4),
        "mean_s": round(statistics.fmean(times), 4), "median_s": round(statistics.median(times), 4),
        "max_s": round(max(times), 4), "cpu_mean_s": round(statistics.fmean(cpu), 4),
        "cpu_max_s": round(max(cpu), 4), "loop_lag_max_ms": round(1000 * lag, 2),
        "load_average": round(os.getloadavg()[0], 2),
    }


def bench_reply(presets: list[Rules], *, kind: str, levels: list[str], number: int | None, positions: int,
                seed: int) -> dict[str, Any]:
    """Time ``positions`` replies of ``kind`` at each level (or at ``number``) on each preset."""
    from hopzero.web.engines import EngineChoice, Engines
    from hopzero.web.limits import Limits
    from hopzero.web.models import ModelLibrary
    from hopzero.web.runs import RunDirs

    limits = Limits(max_simulations=1_000_000, max_depth=12)
    engines = Engines(RunDirs([]), limits, ModelLibrary(len(presets)))
    choices = [EngineChoice(kind=kind, number=number)] if number is not None else [
        EngineChoice(kind=kind, level=level) for level in levels]  # type: ignore[arg-type]

    async def all_of_them() -> list[dict[str, Any]]:
        out = []
        for rules in presets:
            states = game_positions(rules, positions, seed)
            for choice in choices:
                out.append(await _one(engines, rules, choice, states, seed))
        return out

    results = asyncio.run(all_of_them())
    return {"results": results, **(results[0] if len(results) == 1 else {})}


def _presets(args: argparse.Namespace) -> list[Rules]:
    from ccengine import preset
    from ccengine.rules import RulesError

    if args.presets is None:
        return [args.preset]
    try:
        return [preset(name.strip()) for name in args.presets.split(",")]
    except RulesError as exc:
        raise BenchError(f"--presets: {exc}") from None


def _levels(text: str) -> list[str]:
    from hopzero.web.engines import LEVEL_NAMES

    levels = [x.strip() for x in text.split(",")]
    bad = [x for x in levels if x not in LEVEL_NAMES]
    if bad:
        raise BenchError(f"--levels: {', '.join(bad)}: the levels are {', '.join(LEVEL_NAMES)}")
    return levels


def run(args: argparse.Namespace) -> Report:
    """The command."""
    data = bench_reply(_presets(args), kind=args.kind, levels=_levels(args.levels), number=args.sims,
                       positions=args.positions, seed=args.seed)
    lines = [f"{r['player']} on {r['preset']}{' (' + r['level'] + ')' if r['level'] else ''}, {r['positions']} "
             f"mid-game positions: {r['mean_s']:.3f} s mean, {r['median_s']:.3f} s median, {r['max_s']:.3f} s max "
             f"a reply (CPU {r['cpu_mean_s']:.3f} s mean, {r['cpu_max_s']:.3f} s max; first: {r['first_s']:.3f} s); "
             f"event loop lag at most {r['loop_lag_max_ms']:.1f} ms"
             for r in data["results"]]
    return Report(data, "\n".join(lines))
