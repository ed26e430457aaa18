"""Network evaluations per second: ``python -m learner.bench --preset cc49 --size paper --batch 1,8,32``.

Times :meth:`learner.inference.Inference.evaluate` (forward pass plus legal-move masking, numpy in
and out) on random planes with ``moves`` legal moves per position, after a warm-up, on one CPU
thread by default (the self-play actor's setting). ``hopzero bench`` builds on :func:`bench`.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from learner.inference import Inference
from learner.model import SIZES, NetConfig, PolicyValueNet

__all__ = ["BenchResult", "bench", "main"]


@dataclass(frozen=True)
class BenchResult:
    """One timing: ``evals_per_s`` positions evaluated per second at ``batch`` positions a call."""

    batch: int
    calls: int
    seconds: float
    evals_per_s: float
    ms_per_call: float
    device: str
    threads: int
    parameters: int
    config: str


def bench(
    config: NetConfig,
    *,
    batch: int,
    seconds: float = 2.0,
    threads: int | None = 1,
    device: str = "cpu",
    moves: int = 40,
    warmup: int = 3,
    seed: int = 0,
    compile: bool = False,
) -> BenchResult:
    """Time ``evaluate`` at ``batch`` for about ``seconds``; ``threads`` sets torch's CPU threads
    process-wide (None leaves them)."""
    torch.manual_seed(seed)
    inf = Inference(PolicyValueNet(config), device=device, threads=threads, max_batch=batch,
                    compile=compile)
    rng = np.random.default_rng(seed)
    planes = rng.integers(0, 2, size=(batch, config.in_planes, config.n, config.n)).astype(np.float32)
    m = min(moves, config.policy_size)
    legal = np.stack([rng.choice(config.policy_size, size=m, replace=False) for _ in range(batch)]).astype(np.int32)
    counts = np.full(batch, m, dtype=np.int32)
    for _ in range(warmup):
        inf.evaluate(planes, legal, counts)
    calls = 0
    t0 = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds or calls < 3:
        inf.evaluate(planes, legal, counts)
        calls += 1
        elapsed = time.perf_counter() - t0
    return BenchResult(
        batch=batch,
        calls=calls,
        seconds=elapsed,
        evals_per_s=batch * calls / elapsed,
        ms_per_call=1000.0 * elapsed / calls,
        device=str(inf.device),
        threads=torch.get_num_threads(),
        parameters=inf.model.num_parameters(),
        config=config.name,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m learner.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cc49", help="rules preset (cc49, paper, cc81, small-N-k)")
    ap.add_argument("--size", default="paper", choices=sorted(SIZES))
    ap.add_argument("--in-planes", type=int, default=7)
    ap.add_argument("--batch", default="1,8,32,64,128,256", help="comma-separated batch sizes")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", action="store_true", help="torch.compile the network (slow first call)")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    args = ap.parse_args(argv)
    cfg = NetConfig.for_rules(args.preset, args.in_planes, args.size)
    for b in (int(x) for x in args.batch.split(",")):
        r = bench(cfg, batch=b, seconds=args.seconds, threads=args.threads, device=args.device,
                  compile=args.compile)
        if args.json:
            print(json.dumps(asdict(r)), flush=True)
        else:
            print(f"{args.preset}/{r.config} ({r.parameters:,} params) {r.device} threads={r.threads} "
                  f"batch={b:4d}: {r.evals_per_s:10.0f} evals/s  {r.ms_per_call:8.3f} ms/call", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
