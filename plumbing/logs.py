"""Logging for the long-lived processes: each logs under its own name (hopzero.learner, ...)."""

from __future__ import annotations

import logging

__all__ = ["configure_logging"]


def configure_logging(level: int = logging.INFO) -> None:
    """Send log records to stderr with time and logger name (in a Ray actor: its worker log)."""
    root = logging.getLogger()
    if not any(getattr(h, "_hopzero", False) for h in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        handler._hopzero = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(level)
