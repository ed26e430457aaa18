"""Learner throughput: ``python -m learner.bench_learner --size paper --config paper --json``.

Times :meth:`learner.training.Trainer.step` (host-to-device copy, forward, loss, backward,
optimiser step, and the one device-to-host copy of the reported numbers) on random batches of
the shape the replay buffer produces, after a warm-up, and prints samples and steps per second.
Kept apart from ``learner.bench`` (network evaluations for self-play) because it takes a learner
config rather than batch lists; ``hopzero bench learner --json`` builds on :func:`bench_learner`.
"""

from __future__ import annotations

import argparse
import json
import time
import types
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from learner.model import SIZES, NetConfig
from learner.training import LearnerConfig, Trainer

__all__ = ["LearnerBenchResult", "bench_learner", "learner_config", "main", "synthetic_batch"]


@dataclass(frozen=True)
class LearnerBenchResult:
    """One timing of training steps."""

    device: str
    batch_size: int
    samples_per_s: float
    steps_per_s: float
    ms_per_step: float
    steps: int
    seconds: float
    amp: bool
    threads: int
    optimizer: str
    config: str
    net: str
    parameters: int


def learner_config(name: str) -> LearnerConfig:
    """``paper`` (= ``paper2``, the MCTS stage), ``paper1`` (heuristic stage) or ``fast``; the
    stages differ only in the L2 coefficient, which does not change the speed."""
    if name in ("paper", "paper2"):
        return LearnerConfig.paper(2)
    if name == "paper1":
        return LearnerConfig.paper(1)
    if name == "fast":
        return LearnerConfig.fast()
    raise ValueError(f"unknown learner config {name!r}; valid: paper, paper1, paper2, fast")


def synthetic_batch(net: NetConfig, batch: int, seed: int = 0) -> types.SimpleNamespace:
    """A batch shaped like the replay buffer's: 0/1 planes, sparse policy targets (about 30
    moves with mass, as in mid-game positions), values of +-1."""
    rng = np.random.default_rng(seed)
    planes = rng.integers(0, 2, size=(batch, net.in_planes, net.n, net.n)).astype(np.float32)
    policy = np.zeros((batch, net.policy_size), dtype=np.float32)
    m = min(30, net.policy_size)
    for b in range(batch):
        idx = rng.choice(net.policy_size, size=m, replace=False)
        policy[b, idx] = rng.dirichlet(np.ones(m))
    value = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=batch)
    return types.SimpleNamespace(planes=planes, policy=policy, value=value)


def bench_learner(
    net: NetConfig, config: LearnerConfig, *, batch_size: int | None = None, seconds: float = 3.0,
    warmup: int = 3, threads: int | None = None, device: str | None = None, seed: int = 0,
) -> LearnerBenchResult:
    """Time ``Trainer.step`` for about ``seconds`` (at least 3 steps) after ``warmup`` steps.

    ``batch_size`` overrides the config's; ``threads`` sets torch's CPU threads process-wide
    (None leaves them); ``device`` overrides ``config.device``.
    """
    if threads is not None:
        torch.set_num_threads(threads)
    if batch_size is not None:
        config = replace(config, batch_size=batch_size)
    trainer = Trainer(net, config, seed=seed, device=device)
    batches = [synthetic_batch(net, config.batch_size, seed + i) for i in range(4)]
    for i in range(warmup):
        trainer.step(batches[i % len(batches)])
    steps = 0
    t0 = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds or steps < 3:
        trainer.step(batches[steps % len(batches)])  # returns floats: the device is synchronised
        steps += 1
        elapsed = time.perf_counter() - t0
    return LearnerBenchResult(
        device=str(trainer.device), batch_size=config.batch_size,
        samples_per_s=round(config.batch_size * steps / elapsed, 1), steps_per_s=round(steps / elapsed, 3),
        ms_per_step=round(1000.0 * elapsed / steps, 3), steps=steps, seconds=round(elapsed, 3),
        amp=trainer.amp, threads=torch.get_num_threads(), optimizer=config.optimizer, config=config.name,
        net=net.name, parameters=trainer.model.num_parameters(),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m learner.bench_learner", description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cc49", help="rules preset (cc49, paper, cc81, small-N-k)")
    ap.add_argument("--size", default="paper", choices=sorted(SIZES), help="network size")
    ap.add_argument("--in-planes", type=int, default=7)
    ap.add_argument("--config", default="fast", help="learner config: paper (= paper2), paper1, fast")
    ap.add_argument("--batch", default=None, help="comma-separated batch sizes (default: the config's)")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--device", default=None, help="auto, cpu, cuda (default: the config's)")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    args = ap.parse_args(argv)
    net = NetConfig.for_rules(args.preset, args.in_planes, args.size)
    config = learner_config(args.config)
    sizes = [None] if args.batch is None else [int(b) for b in args.batch.split(",")]
    for b in sizes:
        r = bench_learner(net, config, batch_size=b, seconds=args.seconds, threads=args.threads,
                          device=args.device)
        if args.json:
            print(json.dumps(asdict(r)), flush=True)
        else:
            print(f"{args.preset}/{r.net} ({r.parameters:,} params) {r.config} [{r.optimizer}] {r.device} "
                  f"threads={r.threads} amp={r.amp} batch={r.batch_size:4d}: {r.samples_per_s:9.0f} samples/s "
                  f"{r.steps_per_s:8.2f} steps/s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
