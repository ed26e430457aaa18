"""``hopzero bench learner``: training samples per second of the learner, at each batch size.

Times :meth:`learner.training.Trainer.step` (host-to-device copy, forward, loss, backward,
optimiser step, and the one device-to-host copy of the reported numbers) on random batches of
the shape the replay buffer produces, after a warm-up. The batch size defaults to the learner
config's. KataGo's network-side techniques can be turned on to see their cost:
``--global-pooling N`` (every N-th block a global pooling block), ``--aux-heads`` (the ownership
and score heads with their targets) and ``--weights`` (per-position loss weights, as policy
surprise weighting gives them). ``--cpu-amp off,on`` times float32 and bfloat16 autocast on the
CPU side by side, each batch size in both, and reports the ratio.
"""

from __future__ import annotations

import argparse
import time
import types
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from ccengine.rules import Rules
from hopzero.bench.common import ArgKit, Report, batch_sizes_arg, device_arg

__all__ = ["LEARNER_CONFIGS", "NAME", "SUMMARY", "LearnerTiming", "add_arguments", "bench_learner",
           "learner_config", "run", "synthetic_batch"]

NAME = "learner"
SUMMARY = "the learner: training samples/s at each batch size"

#: The learner configs by name: ``paper`` (= ``paper2``, the MCTS stage), ``paper1`` (the
#: heuristic stage; they differ only in the L2 coefficient, which does not change the speed), ``fast``.
LEARNER_CONFIGS = ("paper", "paper1", "paper2", "fast")


@dataclass(frozen=True)
class LearnerTiming:
    """One batch size: ``steps`` training steps in ``seconds``."""

    batch_size: int
    cpu_amp: str
    amp: bool
    samples_per_s: float
    steps_per_s: float
    ms_per_step: float
    steps: int
    seconds: float


def learner_config(name: str) -> Any:
    """The :class:`learner.training.LearnerConfig` named ``name`` (one of :data:`LEARNER_CONFIGS`)."""
    from learner.training import LearnerConfig

    if name in ("paper", "paper2"):
        return LearnerConfig.paper(2)
    if name == "paper1":
        return LearnerConfig.paper(1)
    if name == "fast":
        return LearnerConfig.fast()
    raise ValueError(f"unknown learner config {name!r}; valid: {', '.join(LEARNER_CONFIGS)}")


def synthetic_batch(net: Any, batch: int, seed: int = 0, *, weights: bool = False) -> types.SimpleNamespace:
    """A batch shaped like the replay buffer's for ``net`` (a :class:`learner.model.NetConfig`):
    0/1 planes, sparse policy targets (about 30 moves with mass, as in mid-game positions),
    value targets that are won or lost games (a share of 1 for one seat, in the mover's frame), and
    the targets of the network's auxiliary heads (20 goal cells); with ``weights``, per-position
    weights around 1."""
    from learner.aux_targets import AuxBatch

    rng = np.random.default_rng(seed)
    planes = rng.integers(0, 2, size=(batch, net.in_planes, net.n, net.n)).astype(np.float32)
    policy = np.zeros((batch, net.policy_size), dtype=np.float32)
    m = min(30, net.policy_size)
    for b in range(batch):
        idx = rng.choice(net.policy_size, size=m, replace=False)
        policy[b, idx] = rng.dirichlet(np.ones(m))
    seats = 2 if net.value_outputs == 1 else net.value_outputs
    value = np.eye(seats, dtype=np.float32)[rng.integers(0, seats, size=batch)]
    out = types.SimpleNamespace(planes=planes, policy=policy, value=value)
    if net.opponent_head:
        out.opponent_policy = policy[rng.permutation(batch)]
    if net.ownership_head or net.score_head:
        ownership = np.full((batch, net.n * net.n), -1, dtype=np.int64)
        ownership[:, : min(20, net.n * net.n)] = rng.integers(0, net.players + 1, size=(batch, min(20, net.n * net.n)))
        out.aux = AuxBatch(ownership=ownership if net.ownership_head else None,
                           score=rng.random((batch, net.players + 1)).astype(np.float32) if net.score_head else None)
    if weights:
        out.weight = rng.uniform(0.5, 1.5, size=batch).astype(np.float32)
    return out


def bench_learner(trainer: Any, *, seconds: float = 3.0, warmup: int = 3, seed: int = 0,
                  weights: bool = False) -> LearnerTiming:
    """Time ``trainer.step`` (a :class:`learner.training.Trainer`) at its config's batch size for
    about ``seconds`` (at least 3 steps) after ``warmup`` steps (``weights``: batches with
    per-position weights)."""
    batch_size = trainer.config.batch_size
    batches = [synthetic_batch(trainer.net_config, batch_size, seed + i, weights=weights) for i in range(4)]
    for i in range(warmup):
        trainer.step(batches[i % len(batches)])
    steps = 0
    t0 = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds or steps < 3:
        trainer.step(batches[steps % len(batches)])  # returns floats: the device is synchronised
        steps += 1
        elapsed = time.perf_counter() - t0
    return LearnerTiming(
        batch_size=batch_size, cpu_amp=trainer.config.cpu_amp, amp=trainer.amp,
        samples_per_s=round(batch_size * steps / elapsed, 1),
        steps_per_s=round(steps / elapsed, 3), ms_per_step=round(1000.0 * elapsed / steps, 3), steps=steps,
        seconds=round(elapsed, 3),
    )


def add_arguments(p: argparse.ArgumentParser, kit: ArgKit) -> None:
    """``--size``, ``--in-planes``, ``--config``, ``--batch``, ``--seconds``, ``--threads``, ``--device``."""
    from learner.model import SIZES

    p.add_argument("--size", choices=sorted(SIZES), default="paper", help="network size (default paper)")
    p.add_argument("--in-planes", type=kit.int_at_least(1), default=7, metavar="N",
                   help="input planes (default 7, the paper encoding)")
    p.add_argument("--config", choices=LEARNER_CONFIGS, default="fast",
                   help="learner config: paper (= paper2), paper1, fast (default fast)")
    p.add_argument("--batch", type=batch_sizes_arg, default=None, metavar="B,B,...",
                   help="batch sizes (default: the config's)")
    p.add_argument("--seconds", type=kit.positive, default=3.0, metavar="SEC", help="seconds per batch size (default 3)")
    p.add_argument("--threads", type=kit.int_at_least(1), default=None, metavar="T",
                   help="torch CPU threads (default: torch's)")
    p.add_argument("--device", type=device_arg, default=None, help="auto, cpu, cuda, cuda:N (default: the config's)")
    p.add_argument("--global-pooling", type=kit.int_at_least(0), default=0, metavar="N",
                   help="every N-th block a global pooling block (KataGo), 0 = none (default 0)")
    p.add_argument("--aux-heads", action="store_true",
                   help="the network with KataGo's ownership and score heads, trained on synthetic targets")
    p.add_argument("--weights", action="store_true",
                   help="batches with per-position loss weights (policy surprise weighting)")
    p.add_argument("--cpu-amp", type=_cpu_amp_modes, default=None, metavar="MODE,MODE",
                   help="learner.cpu_amp settings to time side by side: off, auto, on (default: the config's)")


def _cpu_amp_modes(text: str) -> list[str]:
    from learner.training import CPU_AMP_MODES

    modes = [m.strip() for m in text.split(",")]
    bad = [m for m in modes if m not in CPU_AMP_MODES]
    if bad or len(set(modes)) != len(modes):
        raise argparse.ArgumentTypeError(
            f"expected distinct modes from {', '.join(CPU_AMP_MODES)}, comma-separated; got {text!r}")
    return modes


def run(args: argparse.Namespace) -> Report:
    """The command: a fresh trainer per ``--batch`` size, each timed."""
    import torch

    from learner.model import NetConfig
    from learner.training import Trainer

    rules: Rules = args.preset
    technique = dict(global_pooling=args.global_pooling, ownership_head=args.aux_heads, score_head=args.aux_heads)
    if args.global_pooling:   # the general encoding's last plane is the on-board mask (the paper encoding has none)
        technique["mask_plane"] = args.in_planes - 1 if rules.is_star else -1
    net = NetConfig.for_rules(rules, args.in_planes, args.size, **technique)
    config = learner_config(args.config)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    modes = args.cpu_amp or [config.cpu_amp]
    timings = []
    for batch in args.batch or [config.batch_size]:
        for mode in modes:   # the modes of one batch size back to back, so that they share the machine's state
            trainer = Trainer(net, replace(config, batch_size=batch, cpu_amp=mode), seed=args.seed,
                              device=args.device)
            timings.append(bench_learner(trainer, seconds=args.seconds, seed=args.seed, weights=args.weights))
    data = {
        "preset": rules.name, "net": net.name, "parameters": trainer.model.num_parameters(), "config": config.name,
        "optimizer": config.optimizer, "device": str(trainer.device),
        "amp": any(t.amp for t in timings), "cpu_amp": modes,
        "threads": torch.get_num_threads(), "results": [asdict(t) for t in timings],
        "global_pooling": args.global_pooling, "aux_heads": args.aux_heads, "weights": args.weights,
    }
    head = (f"{rules.name}/{net.name} network ({data['parameters']:,} parameters), learner config {config.name} "
            f"[{config.optimizer}] on {data['device']}, {data['threads']} thread(s):")
    lines = [head]
    lines += [f"  batch {t.batch_size:5d}, cpu_amp {t.cpu_amp:4s} (amp {t.amp!s:5s}): "
              f"{t.samples_per_s:10,.0f} samples/s  {t.steps_per_s:8.2f} steps/s" for t in timings]
    if len(modes) > 1:
        # Each mode's samples a second over the first mode's, per batch size.
        first = {t.batch_size: t.samples_per_s for t in timings if t.cpu_amp == modes[0]}
        data["speedup"] = [{"batch_size": t.batch_size, "cpu_amp": t.cpu_amp,
                            "ratio": round(t.samples_per_s / first[t.batch_size], 3)}
                           for t in timings if t.cpu_amp != modes[0]]
        lines += [f"  batch {r['batch_size']:5d}: cpu_amp {r['cpu_amp']} / {modes[0]} = {r['ratio']:.2f}x"
                  for r in data["speedup"]]
    return Report(data, "\n".join(lines))
