"""``hopzero bench replay``: how many self-play games one Redis takes, and what they cost it.

On loopback, against a ``redis-server`` this command starts on a free port (``LocalRedis``, once
without and once with the append-only file, ``appendfsync everysec``):

1. a pool of real game records is played first by the self-play actor's worker
   (:class:`~actors.selfplay.SelfPlayWorker`) with the preset's shipped model (``--pool`` games,
   ``--sims`` simulations per move), so the records have the size and shape of deployed self-play;
2. ``--writers`` processes each open the run's writer as an actor does (``ReplayLink.writer()``,
   a :class:`~learner.replay.RedisReplay`) and add the pool's records round-robin, as fast as
   they can, the way the actor service sends them (``add`` each record, then ``send``);
3. at the same time this process follows the buffer as the learner does (a
   :class:`~learner.replay.WindowMirror` on ``ReplayLink.reader()``) and draws training batches
   from its window as fast as it can;
4. Redis' own ``INFO cpu`` (``used_cpu_sys + used_cpu_user``, every thread of the server) before
   and after gives its CPU seconds. The reader, starved of CPU beside the writers, reads only a
   part of the games, so once the writers have stopped a fresh reader reads up to 4,096 records
   of the stream alone: that gives Redis' CPU per game read, and the rest of the CPU of the
   writing phase is its CPU per game written. A game costs Redis one write and one read.

Each server setting runs once per ``--send-batch`` value: the writers' ``send_batch`` (1: one
round trip per game, as before batching; 8: ``ReplayConfig``'s default), side by side.

The writers, the reader and Redis share the machine's cores, so the accepted rate measures the
machine; what one Redis can take, its capacity, is ``1 / (Redis CPU seconds per game)`` (Redis
executes commands on one core). The headroom is that capacity over what ``--actors`` actors
produce at ``--actor-games-per-s`` each.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, BenchError, Report, batch_sizes_arg

__all__ = ["ACTOR_GAMES_PER_S", "NAME", "SUMMARY", "ReplayPhase", "add_arguments", "bench_phase", "record_pool",
           "run"]

NAME = "replay"
SUMMARY = "the Redis replay buffer: games/s accepted from many writers, Redis CPU per game, learner sampling"

#: Games per second of one self-play actor on cc49 (one core, the shipped model's ``fast`` size,
#: 175 simulations per move): docs/BENCHMARKS.md "Self-play and heuristic actors", the top of
#: ``hopzero bench actor``'s 8,200-9,200 simulations/s, over 175 simulations x 52.5 searched
#: positions per game (the shipped model's self-play games): 9,200 / 9,188 = 1.0.
ACTOR_GAMES_PER_S = 1.0

_RUN_ID = "bench-replay"
_PREFIX = "hopzero:bench-replay"


@dataclass(frozen=True)
class ReplayPhase:
    """One server (``aof``: append-only file on) under ``writers`` writers for ``wall_s`` seconds.

    ``send_batch``: records per round trip of the writers;
    ``games_per_s``: records Redis accepted per second (its stream's ``entries-added``);
    ``redis_cpu_s_per_game``: Redis CPU (user + system, all its threads) to write and read one
    game, the sum of ``redis_write_cpu_s_per_game`` and ``redis_read_cpu_s_per_game``;
    ``redis_capacity_games_per_s``: ``1 / redis_cpu_s_per_game``, what one Redis core takes;
    ``headroom``: capacity over the actors' production; ``accepted_headroom``: the accepted rate
    (limited by this machine's cores, shared with the writers) over the same;
    ``memory_bytes_per_game``: ``MEMORY USAGE`` of the stream over its length;
    ``learner_*``: the reader's batches and samples drawn, records and positions taken in, and
    records trimmed before it read them (``learner_missed``), per second where named so;
    ``learner_ms_per_batch``: the time one ``sample`` took (the rest went to taking games in).
    """

    aof: bool
    send_batch: int
    writers: int
    wall_s: float
    games: int
    games_per_s: float
    positions_per_s: float
    redis_cpu_s: float
    redis_cpu_s_per_game: float
    redis_write_cpu_s_per_game: float
    redis_read_cpu_s_per_game: float
    redis_capacity_games_per_s: float
    headroom: float
    accepted_headroom: float
    memory_bytes_per_game: float
    stream_length: int
    learner_batches_per_s: float
    learner_samples_per_s: float
    learner_ms_per_batch: float
    learner_records_per_s: float
    learner_positions_per_s: float
    learner_missed: int


def record_pool(rules: Rules, *, games: int, sims: int, seed: int) -> tuple[list[Any], Any]:
    """``games`` records of self-play with the preset's shipped model, and the model's input
    encoding (the learner's): the actor's worker plays ``games`` games at once (``sims``
    simulations per move) until that many have finished."""
    from actors.selfplay import SelfPlayWorker
    from ccengine.search import SearchConfig
    from learner.model import NetConfig
    from learner.model_files import ModelNotFoundError, read_model_file, shipped_model_path

    try:
        state, meta = read_model_file(shipped_model_path(rules))
    except ModelNotFoundError as exc:
        raise BenchError(f"{exc} (the record pool is played by the shipped model)") from None
    worker = SelfPlayWorker(
        rules, games=games, search=SearchConfig(num_simulations=sims), net_config=NetConfig.from_dict(state["config"]),
        encoding=meta.get("encoding", "general"), history=meta.get("history", 3), run_id=_RUN_ID,
        config_hash="bench", actor="bench", seed=seed,
    )
    worker.set_weights(1, {k: v.numpy() for k, v in state["state_dict"].items()})
    records: list[Any] = []
    while len(records) < games:
        records += worker.step()
    return records[:games], worker.encoding


def _link(url: str, send_batch: int) -> Any:
    from learner.replay import ReplayConfig, ReplayLink

    return ReplayLink("redis", _RUN_ID, redis_url=url, key_prefix=_PREFIX, send_batch=send_batch,
                      send_delay_s=ReplayConfig().send_delay_s)


def _write(url: str, send_batch: int, records: list[Any], first: int, barrier: Any, seconds: float) -> None:
    """One writer process: add records round-robin from ``first`` for ``seconds`` after the barrier."""
    writer = _link(url, send_batch).writer()
    barrier.wait()
    deadline = time.monotonic() + seconds
    i = first
    while time.monotonic() < deadline:
        writer.add(records[i % len(records)])  # as actors/service.py sends a step's records
        writer.send()
        i += 1


def _read_cpu_per_record(client: Any, link: Any, most: int = 4096) -> float:
    """Redis CPU seconds per record that a fresh reader (the learner's polls of 512) reads alone."""
    reader = link.reader()
    _, cpu0, _ = _redis_counters(client)
    read = 0
    while read < most:
        before = reader.records_read
        reader.poll(512)
        if reader.records_read == before:
            break
        read = reader.records_read
    _, cpu1, _ = _redis_counters(client)
    return (cpu1 - cpu0) / max(1, read)


def _redis_counters(client: Any) -> tuple[float, float, int]:
    """(now, Redis CPU seconds so far, records ever added to the stream)."""
    from redis.exceptions import ResponseError

    cpu = client.info("cpu")
    try:
        added = int(client.xinfo_stream(f"{_PREFIX}:games")["entries-added"])
    except ResponseError:  # no stream yet
        added = 0
    return time.perf_counter(), float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]), added


def bench_phase(
    records: list[Any],
    encoding: Any,
    *,
    aof: bool,
    send_batch: int,
    writers: int,
    seconds: float,
    batch_size: int,
    window_positions: int,
    actors: int,
    actor_games_per_s: float,
    seed: int,
) -> ReplayPhase:
    """Start a fresh ``redis-server``, run ``writers`` writer processes and a learner-like reader
    for ``seconds``, stop the server; see :class:`ReplayPhase`. ``encoding``: the learner's input."""
    from hopzero.redis_server import LocalRedis
    from learner.replay import WindowMirror
    from learner.replay.redis_stream import connect

    positions = float(np.mean([r.num_positions for r in records]))
    rng = np.random.default_rng(seed)
    # fork: the writers inherit the records (nothing is pickled); a context, not a global setting
    ctx = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="hopzero-bench-replay-") as tmp:
        server = LocalRedis(tmp, persistent=aof)
        url = server.start()
        procs: list[Any] = []
        try:
            client = connect(url)
            link = _link(url, send_batch)
            mirror = WindowMirror(link.reader(), encoding, window_positions=window_positions)
            barrier = ctx.Barrier(writers + 1)
            step = max(1, len(records) // writers)
            procs = [ctx.Process(target=_write, args=(url, send_batch, records, w * step, barrier, seconds), daemon=True)
                     for w in range(writers)]
            for p in procs:
                p.start()
            barrier.wait(timeout=60)
            t0, cpu0, added0 = _redis_counters(client)
            deadline = time.monotonic() + seconds
            batches = inserted = 0
            sampling_s = 0.0
            while time.monotonic() < deadline:
                inserted += mirror.poll(max_records=512)
                if mirror.size >= batch_size:
                    ts = time.perf_counter()
                    mirror.sample(batch_size, rng)
                    sampling_s += time.perf_counter() - ts
                    batches += 1
                else:
                    time.sleep(0.001)
            for p in procs:
                p.join(timeout=30)
            t1, cpu1, added1 = _redis_counters(client)
            records_read = mirror.records
            length = int(client.xlen(f"{_PREFIX}:games"))
            memory = int(client.memory_usage(f"{_PREFIX}:games", samples=0) or 0)
            missed = int(mirror.reader.stats().get("missed", 0)) if mirror.reader is not None else 0
            read_cpu = _read_cpu_per_record(client, link)
            client.close()
        finally:
            for p in procs:
                if p.is_alive():
                    p.terminate()
            server.stop()
    wall = t1 - t0
    games = added1 - added0
    write_cpu = max(0.0, cpu1 - cpu0 - read_cpu * records_read) / max(1, games)
    cpu_per_game = write_cpu + read_cpu
    capacity = 1.0 / cpu_per_game if cpu_per_game > 0 else 0.0
    demand = actors * actor_games_per_s
    return ReplayPhase(
        aof=aof, send_batch=send_batch, writers=writers, wall_s=round(wall, 3), games=games, games_per_s=round(games / wall, 1),
        positions_per_s=round(games * positions / wall, 1), redis_cpu_s=round(cpu1 - cpu0, 3),
        redis_cpu_s_per_game=round(cpu_per_game, 8), redis_write_cpu_s_per_game=round(write_cpu, 8),
        redis_read_cpu_s_per_game=round(read_cpu, 8), redis_capacity_games_per_s=round(capacity, 1),
        headroom=round(capacity / demand, 2), accepted_headroom=round(games / wall / demand, 2),
        memory_bytes_per_game=round(memory / max(1, length), 1), stream_length=length,
        learner_batches_per_s=round(batches / wall, 2), learner_samples_per_s=round(batches * batch_size / wall, 1),
        learner_ms_per_batch=round(1000 * sampling_s / max(1, batches), 3),
        learner_records_per_s=round(records_read / wall, 1), learner_positions_per_s=round(inserted / wall, 1),
        learner_missed=missed,
    )


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--writers``, ``--seconds``, ``--aof``, ``--send-batch``, ``--pool``, ``--sims``, ``--batch``, ``--window``,
    ``--actors``, ``--actor-games-per-s``."""
    p.add_argument("--writers", type=kit.int_at_least(1), default=8, metavar="W",
                   help="writer processes (default 8)")
    p.add_argument("--seconds", type=kit.positive, default=20.0, metavar="SEC",
                   help="seconds of writing per server (default 20)")
    p.add_argument("--aof", choices=("off", "on", "both"), default="both",
                   help="append-only file of the server: off, on (everysec), both: one run each (default both)")
    p.add_argument("--send-batch", type=batch_sizes_arg, default=[1, 8], metavar="N,N,...",
                   help="records per round trip of the writers, one run each (default 1,8: before and after batching)")
    p.add_argument("--pool", type=kit.int_at_least(1), default=16, metavar="N",
                   help="self-play games played first, the records the writers send (default 16)")
    p.add_argument("--sims", type=kit.int_at_least(1), default=175, metavar="S",
                   help="simulations per move of those games (default 175)")
    p.add_argument("--batch", type=kit.int_at_least(1), default=256, metavar="B",
                   help="the learner's batch size (default 256)")
    p.add_argument("--window", type=kit.int_at_least(1), default=200_000, metavar="P",
                   help="the learner's window, positions (default 200000, replay.window_positions)")
    p.add_argument("--actors", type=kit.int_at_least(1), default=1000, metavar="A",
                   help="actors the headroom is computed against (default 1000)")
    p.add_argument("--actor-games-per-s", type=kit.positive, default=None, metavar="G",
                   help=f"games/s of one actor (cc49's default {ACTOR_GAMES_PER_S}: docs/BENCHMARKS.md; "
                        "other presets must give it)")


def run(args: argparse.Namespace) -> Report:
    """The command: the record pool, then one phase per server setting."""
    from learner.records import encode_record

    rules: Rules = args.preset
    if max(args.send_batch) > 64:
        raise BenchError(f"--send-batch {max(args.send_batch)}: at most 64 records per round trip")
    actor_rate = args.actor_games_per_s
    if actor_rate is None and rules.name != "cc49":
        raise BenchError(f"give --actor-games-per-s for preset {rules.name!r}: the default ({ACTOR_GAMES_PER_S}) "
                         "is cc49's actor")
    source = ("--actor-games-per-s" if actor_rate is not None else "docs/BENCHMARKS.md (hopzero bench actor, cc49, "
              "9,200 simulations/s per core, 175 simulations x 52.5 positions per game)")
    actor_rate = actor_rate or ACTOR_GAMES_PER_S
    t0 = time.perf_counter()
    records, encoding = record_pool(rules, games=args.pool, sims=args.sims, seed=args.seed)
    pool_s = time.perf_counter() - t0
    sizes = [len(encode_record(r)) for r in records]
    phases = [
        bench_phase(records, encoding, aof=aof, send_batch=send_batch, writers=args.writers, seconds=args.seconds,
                    batch_size=args.batch, window_positions=args.window, actors=args.actors,
                    actor_games_per_s=actor_rate, seed=args.seed)
        for aof in {"off": (False,), "on": (True,), "both": (False, True)}[args.aof]
        for send_batch in args.send_batch
    ]
    data = {
        "preset": rules.name, "writers": args.writers, "seconds": args.seconds, "batch_size": args.batch,
        "pool_games": len(records), "pool_sims": args.sims, "pool_s": round(pool_s, 2),
        "positions_per_game": round(float(np.mean([r.num_positions for r in records])), 2),
        "record_bytes_mean": round(float(np.mean(sizes)), 1),
        "actors": args.actors, "actor_games_per_s": actor_rate, "actor_games_per_s_source": source,
        "runs": [asdict(ph) for ph in phases],
    }
    lines = [(f"{rules.name}: {len(records)} self-play records of the shipped model, {data['positions_per_game']:.1f} "
              f"positions and {data['record_bytes_mean']:,.0f} bytes each; {args.writers} writers, {args.seconds:g} s")]
    for ph in phases:
        lines.append(
            f"  AOF {'on' if ph.aof else 'off'}, {ph.send_batch:2d} per send: {ph.games_per_s:,.0f} games/s accepted "
            f"({ph.positions_per_s:,.0f} positions/s), Redis {1e6 * ph.redis_cpu_s_per_game:.1f} us CPU per game = capacity "
            f"{ph.redis_capacity_games_per_s:,.0f} games/s, headroom {ph.headroom:.1f}x against {args.actors} actors "
            f"(accepted: {ph.accepted_headroom:.1f}x); {ph.memory_bytes_per_game:,.0f} bytes per game; learner "
            f"{ph.learner_samples_per_s:,.0f} samples/s, {ph.learner_records_per_s:,.0f} records/s in"
        )
    return Report(data, "\n".join(lines))
