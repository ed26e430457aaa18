"""``hopzero bench rooms``: the memory of ``hopzero serve`` holding many games with a model.

The server's own parts (``hopzero.web.server.Server``: the hall of rooms, the model library, the
engine and evaluation threads, the SQLite store in ``--data``) run in this process, as
``hopzero serve`` runs them. ``--games`` rooms are made, every seat an engine playing the preset's
shipped model at its Beginner level, and each is watched (as by an open page) until it has played
``--plies`` moves and its analysis engine has evaluated a position; then the room is left, and
the next ones go on. At the end all the rooms are in memory, and the process's resident memory
(``VmRSS``) and its peak (``VmHWM``) are reported with what was done.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, BenchError, Report

__all__ = ["NAME", "SUMMARY", "add_arguments", "bench_rooms", "run"]

NAME = "rooms"
SUMMARY = "hopzero serve: resident memory with many games played by the shipped model"
#: Rooms watched at once (pages open together).
AT_ONCE = 8


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--games``, ``--plies``, ``--data``. (``--seed`` is every benchmark's: the rooms' ids come
    from it, and the engines seed their moves from the ids, as in the server.)"""
    p.add_argument("--games", type=kit.int_at_least(1), default=64, metavar="N", help="rooms (default 64)")
    p.add_argument("--plies", type=kit.int_at_least(1), default=12, metavar="K",
                   help="moves each room plays before it is left (default 12)")
    p.add_argument("--data", default=None, metavar="DIR", help="the games database's directory (default: a temporary one)")


def _memory_mb() -> tuple[float, float]:
    """Resident memory now and at its peak, in MiB (``/proc/self/status``)."""
    values = {}
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


async def _play(rules: Rules, games: int, plies: int, data_dir: Path, seed: int) -> dict[str, Any]:
    from hopzero.web.engines import EngineChoice
    from hopzero.web.hall import Watcher
    from hopzero.web.limits import ChoiceError, Limits
    from hopzero.web.rooms import RoomSettings
    from hopzero.web.seats import ENGINE, Seat
    from hopzero.web.server import Server

    numbers = itertools.count()
    server = Server.build(data_dir=data_dir, limits=Limits(max_rooms=games), run_dirs=[], results=[], allowed_hosts=[],
                          room_ids=lambda: f"bench-{seed}-{next(numbers)}")
    hall = server.hall
    hall.start()
    try:
        engine = server.engines.resolve(EngineChoice(kind="model", level="beginner"), rules)
    except ChoiceError as exc:
        raise BenchError(str(exc)) from None
    start = time.perf_counter()
    rooms = []

    async def watch() -> None:
        seats = [Seat(kind=ENGINE, engine=engine) for _ in range(rules.players)]
        room, _, _ = hall.create(rules, seats, RoomSettings(pace_ms=0), [], None, None)
        rooms.append(room)
        watcher = Watcher()
        drain = asyncio.create_task(_drain(watcher))
        hall.watch(room, watcher)
        while room.game.plies < plies and not room.game.over or not room.evals:
            await asyncio.sleep(0.02)
        hall.unwatch(room, watcher)
        watcher.send(None)
        await drain

    for first in range(0, games, AT_ONCE):
        await asyncio.gather(*(watch() for _ in range(first, min(games, first + AT_ONCE))))
    seconds = time.perf_counter() - start
    rss, peak = _memory_mb()
    out = {
        "preset": rules.name, "games": games, "player": engine.spec, "plies_played": sum(r.game.plies for r in rooms),
        "evaluations": sum(len(r.evals) for r in rooms), "rooms_in_memory": len(hall.rooms),
        "models_loaded": server.library.loads, "stored": server.store.counts(), "seconds": round(seconds, 2),
        "rss_mb": round(rss, 1), "peak_rss_mb": round(peak, 1),
    }
    await server.close()
    return out


async def _drain(watcher: Any) -> None:
    while await watcher.queue.get() is not None:
        pass


def bench_rooms(rules: Rules, *, games: int, plies: int, data_dir: str | None, seed: int = 0) -> dict[str, Any]:
    """Play ``games`` rooms ``plies`` moves each and measure the process's memory; ``seed`` names
    the rooms, and so seeds their engines."""
    rss_before, _ = _memory_mb()
    with tempfile.TemporaryDirectory(prefix="hopzero-bench-rooms-") as tmp:
        out = asyncio.run(_play(rules, games, plies, Path(data_dir or tmp), seed))
    return {**out, "rss_start_mb": round(rss_before, 1)}


def run(args: argparse.Namespace) -> Report:
    """The command."""
    data = bench_rooms(args.preset, games=args.games, plies=args.plies, data_dir=args.data, seed=args.seed)
    text = (f"{data['games']} {data['preset']} rooms of {data['player']} seats, {data['plies_played']} moves and "
            f"{data['evaluations']} evaluations in {data['seconds']} s: {data['rss_mb']} MiB resident "
            f"(peak {data['peak_rss_mb']} MiB, {data['rss_start_mb']} MiB before the server), "
            f"{data['models_loaded']} model loaded, {data['rooms_in_memory']} rooms in memory")
    return Report(data, text)
