"""The names of the ways a network can run for self-play and evaluation (no torch import here: the
command line offers them as choices before it loads torch)."""

from __future__ import annotations

__all__ = ["BACKENDS", "backend_option", "resolve_backend"]

#: ``auto`` is ``onnx`` on CPU and ``eager`` on CUDA (the fastest of each, docs/BENCHMARKS.md
#: "Inference backends"); ``eager`` is plain PyTorch; ``compile`` wraps it in ``torch.compile``;
#: ``onnx`` exports it to ONNX Runtime (``learner.onnx_backend``).
BACKENDS = ("auto", "eager", "compile", "onnx")


def resolve_backend(backend: str, device_type: str) -> str:
    """``backend`` with ``auto`` resolved for a device of type ``device_type`` (``cpu``, ``cuda``);
    a name not in :data:`BACKENDS` is an error."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown inference backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "onnx" if device_type == "cpu" else "eager"
    return backend


def backend_option(text: str) -> str:
    """The parser of a ``backend=`` SPEC option."""
    if text not in BACKENDS:
        raise ValueError(f"unknown inference backend {text!r}")
    return text


backend_option.__name__ = f"a backend ({', '.join(BACKENDS)})"
