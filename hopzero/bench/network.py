"""``hopzero bench network``: network evaluations per second, at each of a list of batch sizes.

Times :meth:`learner.inference.Inference.evaluate` (forward pass plus legal-move masking, numpy
in and out) of an untrained network on random planes with ``--moves`` legal moves per position,
after a warm-up, on one CPU thread by default (the self-play actor's setting).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from typing import Any

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, Report, add_backend_argument, batch_sizes_arg, device_arg

__all__ = ["NAME", "SUMMARY", "NetworkTiming", "add_arguments", "bench_network", "run"]

NAME = "network"
SUMMARY = "network inference: evaluations/s at each batch size"


@dataclass(frozen=True)
class NetworkTiming:
    """One batch size: ``evals_per_s`` positions evaluated per second at ``batch`` positions a call."""

    batch: int
    calls: int
    seconds: float
    evals_per_s: float
    ms_per_call: float


def bench_network(
    inference: Any, *, batch: int, seconds: float = 2.0, moves: int = 40, warmup: int = 3, seed: int = 0
) -> NetworkTiming:
    """Time ``inference.evaluate`` (a :class:`learner.inference.Inference`) on batches of ``batch``
    random positions for about ``seconds`` (at least 3 calls) after ``warmup`` calls."""
    import time

    import numpy as np

    config = inference.config
    rng = np.random.default_rng(seed)
    planes = rng.integers(0, 2, size=(batch, config.in_planes, config.n, config.n)).astype(np.float32)
    m = min(moves, config.policy_size)
    legal = np.stack([rng.choice(config.policy_size, size=m, replace=False) for _ in range(batch)]).astype(np.int32)
    counts = np.full(batch, m, dtype=np.int32)
    for _ in range(warmup):
        inference.evaluate(planes, legal, counts)
    calls = 0
    t0 = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds or calls < 3:
        inference.evaluate(planes, legal, counts)  # returns numpy: the device is synchronised
        calls += 1
        elapsed = time.perf_counter() - t0
    return NetworkTiming(
        batch=batch, calls=calls, seconds=round(elapsed, 3), evals_per_s=round(batch * calls / elapsed, 1),
        ms_per_call=round(1000.0 * elapsed / calls, 4),
    )


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--size``, ``--in-planes``, ``--batch``, ``--seconds``, ``--moves``, ``--threads``,
    ``--device``, ``--backend``."""
    from learner.model import SIZES

    p.add_argument("--size", choices=sorted(SIZES), default="paper", help="network size (default paper)")
    p.add_argument("--in-planes", type=kit.int_at_least(1), default=7, metavar="N",
                   help="input planes (default 7, the paper encoding)")
    p.add_argument("--batch", type=batch_sizes_arg, default=[1, 8, 32, 64, 128, 256], metavar="B,B,...",
                   help="batch sizes (default 1,8,32,64,128,256)")
    p.add_argument("--seconds", type=kit.positive, default=2.0, metavar="SEC", help="seconds per batch size (default 2)")
    p.add_argument("--moves", type=kit.int_at_least(1), default=40, metavar="M",
                   help="legal moves per position (default 40)")
    p.add_argument("--threads", type=kit.int_at_least(1), default=1, metavar="T", help="torch CPU threads (default 1)")
    p.add_argument("--device", type=device_arg, default="cpu", help="auto, cpu, cuda, cuda:N (default cpu)")
    add_backend_argument(p)


def run(args: argparse.Namespace) -> Report:
    """The command: one network, timed at each ``--batch`` size."""
    import numpy as np
    import torch

    from learner.inference import Inference
    from learner.model import NetConfig, PolicyValueNet

    rules: Rules = args.preset
    config = NetConfig.for_rules(rules, args.in_planes, args.size)
    torch.manual_seed(args.seed)
    # The untrained network sees random 0/1 planes: onnx-int8 sets its ranges on the same kind.
    calibration = np.random.default_rng(args.seed).integers(0, 2, size=(256, args.in_planes, config.n, config.n))
    inference = Inference(PolicyValueNet(config), device=args.device, threads=args.threads,
                          max_batch=max(args.batch), backend=args.backend, calibration=calibration.astype(np.float32))
    timings = [bench_network(inference, batch=b, seconds=args.seconds, moves=args.moves, seed=args.seed)
               for b in args.batch]
    data = {
        "preset": rules.name, "size": args.size, "in_planes": args.in_planes,
        "parameters": inference.model.num_parameters(), "device": str(inference.device),
        "threads": torch.get_num_threads(), "half": inference.half, "backend": inference.backend, "moves": args.moves,
        "results": [asdict(t) for t in timings],
    }
    head = f"{rules.name}/{args.size} network ({data['parameters']:,} parameters) on {data['device']}, {data['threads']} thread(s):"
    lines = [head]
    lines += [f"  batch {t.batch:5d}: {t.evals_per_s:12,.0f} evaluations/s  {t.ms_per_call:9.3f} ms/call"
              for t in timings]
    return Report(data, "\n".join(lines))
