"""A hostile pickle for the tests that check files are read without unpickling code."""

from __future__ import annotations

EXPLOITED: list[str] = []
"""Grows if an :class:`Exploit` was ever unpickled in this process."""


def _exploit() -> str:
    EXPLOITED.append("ran")
    return "pwned"


class Exploit:
    """A pickled object that would run code when unpickled."""

    def __reduce__(self):
        return (_exploit, ())
