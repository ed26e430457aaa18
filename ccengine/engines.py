"""Choosing a game engine by name: the compiled one (``cython``) or the pure-Python ``reference``.

Both engines expose the same state interface (see ``ccengine.reference``); everything that plays
games (players, arena, command line) takes an engine name and builds its states here, so that a
missing compiled module is reported in one place with one clear message.
"""

from __future__ import annotations

from typing import Any

from .notation import Position
from .reference import ReferenceState
from .rules import Rules

__all__ = ["ENGINES", "EngineError", "new_state", "state_class"]

#: Engine names accepted by :func:`state_class`; ``cython`` is the default everywhere.
ENGINES: tuple[str, ...] = ("cython", "reference")


class EngineError(ValueError):
    """An unknown engine name, or the compiled engine is not built."""


def state_class(engine: str = "cython") -> Any:
    """The state class of ``engine`` (``cython`` or ``reference``)."""
    if engine == "reference":
        return ReferenceState
    if engine == "cython":
        try:
            from ._core import State  # compiled at install time (setup.py)
        except ImportError as exc:
            raise EngineError(
                f"the cython engine is not built ({exc}); run 'pip install .' "
                "(or 'python setup.py build_ext --inplace' in a checkout), or use engine 'reference'"
            ) from None
        return State
    raise EngineError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")


def new_state(rules: Rules, position: Position | None = None, engine: str = "cython") -> Any:
    """A state of ``rules`` at ``position`` (the start position when None) on ``engine``."""
    cls = state_class(engine)
    if position is None:
        return cls(rules)
    return cls(rules, position.board, position.to_move, position.ply)
