"""``hopzero bench reply``: seconds of the engine's reply in ``hopzero serve``, and whether the
server's event loop stays free meanwhile.

The opponent is built as the server builds it for a browser that picks "shipped model" at
``--sims`` simulations (``hopzero.web.opponents.Opponents.build``: the preset's packaged model,
``learner.network_player``), and each reply is computed as the server computes it: by
``hopzero.web.thinking.think`` in chunks, on a worker thread of an asyncio loop
(``run_in_executor``). The positions are mid-game positions of random games (``movegen``'s), one
reply each, after one reply from the start position that loads the model (reported apart as
``first_s``).

Meanwhile a task on the loop sleeps ``TICK_S`` at a time; ``loop_lag_max_ms`` is the longest it
overslept: what a page's request waits at worst while the engine thinks.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, BenchError, Report

__all__ = ["NAME", "SUMMARY", "add_arguments", "bench_reply", "run"]

NAME = "reply"
SUMMARY = "hopzero serve: seconds per engine reply with the shipped model, and the event loop's lag"
#: The loop's ticker period (seconds).
TICK_S = 0.01


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--sims``, ``--positions``."""
    p.add_argument("--sims", type=kit.int_at_least(1), default=800, metavar="S", help="simulations a reply (default 800)")
    p.add_argument("--positions", type=kit.int_at_least(1), default=10, metavar="N",
                   help="mid-game positions, one reply each (default 10)")


async def _replies(player: Any, states: list[Any]) -> tuple[list[float], float]:
    """Each state's reply time, thought on a worker thread as the server does, and the loop's
    longest oversleep meanwhile (seconds)."""
    from hopzero.web.thinking import think

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
    times = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hopzero-search") as pool:
        for state in states:
            t = time.perf_counter()
            await loop.run_in_executor(pool, lambda s=state: think(player, s, progress=lambda _: None))
            times.append(time.perf_counter() - t)
    done.set()
    await tick
    return times, lag


def bench_reply(rules: Rules, *, sims: int, positions: int, seed: int) -> dict[str, Any]:
    """Time ``positions`` replies of the shipped model of ``rules`` at ``sims`` simulations."""
    from ccengine import new_state
    from hopzero.bench.movegen import random_positions
    from hopzero.web.opponents import ChoiceError, Limits, OpponentChoice, Opponents, RunDirs

    try:
        player = Opponents(RunDirs([]), Limits(max_simulations=sims)).build(
            OpponentChoice(kind="mcts", model="shipped", sims=sims), rules, seed)
    except ChoiceError as exc:
        raise BenchError(str(exc)) from None
    states = [new_state(rules, p) for p in random_positions(rules, positions, seed)]
    states = [s for s in states if not s.is_terminal()]
    [first], _ = asyncio.run(_replies(player, [new_state(rules)]))
    times, lag = asyncio.run(_replies(player, states))
    return {
        "preset": rules.name, "player": player.name, "sims": sims, "positions": len(times),
        "first_s": round(first, 4), "mean_s": round(statistics.fmean(times), 4),
        "median_s": round(statistics.median(times), 4), "max_s": round(max(times), 4),
        "loop_lag_max_ms": round(1000 * lag, 2),
    }


def run(args: argparse.Namespace) -> Report:
    """The command."""
    data = bench_reply(args.preset, sims=args.sims, positions=args.positions, seed=args.seed)
    text = (f"{data['player']} on {data['preset']}, {data['positions']} mid-game positions: "
            f"{data['mean_s']:.3f} s mean, {data['median_s']:.3f} s median, {data['max_s']:.3f} s max a reply "
            f"(first, loading the model: {data['first_s']:.3f} s); event loop lag at most "
            f"{data['loop_lag_max_ms']:.1f} ms")
    return Report(data, text)
