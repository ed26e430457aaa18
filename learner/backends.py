"""The names of the ways a network can run for self-play and evaluation (no torch import here: the
command line offers them as choices before it loads torch)."""

from __future__ import annotations

__all__ = ["BACKENDS", "ONNX_BACKENDS", "backend_option", "resolve_backend"]

#: ``auto`` is ``onnx-int8`` on CPU and ``eager`` on CUDA (the fastest of each, docs/BENCHMARKS.md
#: "Inference backends"); ``eager`` is plain PyTorch; ``compile`` wraps it in ``torch.compile``;
#: ``onnx`` exports it to ONNX Runtime (``learner.onnx_backend``); ``onnx-int8`` runs that graph
#: with 8-bit weights and activations (CPU only; close to float32, not equal to it, and as strong
#: at equal simulations).
BACKENDS = ("auto", "eager", "compile", "onnx", "onnx-int8")

#: The backends that run an ONNX Runtime session.
ONNX_BACKENDS = ("onnx", "onnx-int8")


def resolve_backend(backend: str, device_type: str) -> str:
    """``backend`` with ``auto`` resolved for a device of type ``device_type`` (``cpu``, ``cuda``);
    a name not in :data:`BACKENDS` is an error."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown inference backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "onnx-int8" if device_type == "cpu" else "eager"
    if backend == "onnx-int8" and device_type != "cpu":
        raise ValueError(f"the onnx-int8 backend runs on the CPU only, not on {device_type}")
    return backend


def backend_option(text: str) -> str:
    """The parser of a ``backend=`` SPEC option."""
    if text not in BACKENDS:
        raise ValueError(f"unknown inference backend {text!r}")
    return text


backend_option.__name__ = f"a backend ({', '.join(BACKENDS)})"
