"""What every benchmark shares: its report, its error for bad input, the command line's argument
helpers, and a description of the machine."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ArgKit", "BenchError", "Report", "add_backend_argument", "batch_sizes_arg", "device_arg", "int_list_arg",
    "machine",
]


class BenchError(Exception):
    """Bad input found while a benchmark runs (a positions file that does not parse): the command
    line reports it as one line with exit status 2."""


@dataclass(frozen=True)
class Report:
    """What a benchmark prints: ``data`` with ``--json``, else ``text``. ``failure``: a check the
    benchmark makes (both engines agree) failed; printed on stderr, exit status 1."""

    data: dict[str, Any]
    text: str
    failure: str | None = None


@dataclass(frozen=True)
class ArgKit:
    """The command line's argument helpers, handed in by ``hopzero.cli`` so that a benchmark parses
    presets and numbers as every other command does (a benchmark cannot import the CLI, which
    imports it)."""

    add_preset: Callable[[argparse.ArgumentParser], None]
    add_json: Callable[[argparse.ArgumentParser], None]
    #: ``int_at_least(n)``: an argparse type accepting integers >= n.
    int_at_least: Callable[[int], Callable[[str], int]]
    #: An argparse type accepting positive numbers.
    positive: Callable[[str], float]


def machine() -> dict[str, Any]:
    """The machine a figure was measured on (docs/BENCHMARKS.md names it beside every figure)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
    }
    torch = sys.modules.get("torch")  # where loaded (the command line loads it); importing it costs seconds
    if torch is not None:
        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name()
    return info


def device_arg(text: str) -> str:
    """An argparse type for ``--device``: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``, CUDA only where
    there is one."""
    if text not in ("auto", "cpu", "cuda") and not (text.startswith("cuda:") and text[5:].isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a device; valid: auto, cpu, cuda, cuda:N")
    if text.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise argparse.ArgumentTypeError(f"{text!r}: this machine has no CUDA device")
        index = int(text[5:]) if ":" in text else 0
        if index >= torch.cuda.device_count():
            raise argparse.ArgumentTypeError(f"{text!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return text


def add_backend_argument(p: argparse.ArgumentParser) -> None:
    """``--backend``: how the network runs (``learner.backends``)."""
    from learner.backends import BACKENDS

    p.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="network inference: auto (onnx-int8 on CPU, eager on CUDA), eager, compile (slow first "
                        "call), onnx, onnx-int8 (default auto)")


def int_list_arg(minimum: int, what: str) -> Callable[[str], list[int]]:
    """An argparse type: comma-separated integers, each at least ``minimum`` (``what`` names one)."""

    def parse(text: str) -> list[int]:
        try:
            values = [int(x) for x in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
        if any(v < minimum for v in values):
            raise argparse.ArgumentTypeError(f"{text!r}: every {what} must be at least {minimum}")
        return values

    return parse


#: ``--batch``: comma-separated positive integers.
batch_sizes_arg = int_list_arg(1, "batch size")
