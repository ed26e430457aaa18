"""The server's caps (``hopzero serve`` options) and the error of a request beyond them.

Memory is bounded by these numbers, not by the traffic: at most ``max_rooms`` games in memory
(the least recently used room nobody watches goes back to SQLite, from where it loads again when
someone opens it), one copy of each model per process, at most ``max_models`` of them, and no
search tree kept between searches (a search builds its tree and drops it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ChoiceError", "Limits"]


class ChoiceError(ValueError):
    """Something the server does not offer (a model that is not there, too many simulations, a
    run or a game that does not exist): nothing changed."""


@dataclass(frozen=True)
class Limits:
    """The caps of one server."""

    max_simulations: int = 2000
    """Most simulations of one search: an engine seat's, an analysis's."""
    max_depth: int = 4
    """Deepest ``alphabeta`` search."""
    max_searches: int = 2
    """Analyses and hints running at once over all clients; one more is refused with a message,
    never queued. (Engine seats take turns on ``engine_threads``: a room's engine waits its turn.)"""
    engine_threads: int = 1
    """Threads that play the engine seats of every room, one move at a time each."""
    max_rooms: int = 64
    """Games held in memory; beyond it the least recently used one nobody watches is unloaded."""
    max_models: int = 4
    """Networks held in memory (one copy each, shared by every game); beyond it the least
    recently used one is dropped and loads again when a seat needs it."""
    max_watchers: int = 32
    """Open websockets of one room (its players and watchers)."""
    max_body_bytes: int = 16 * 1024
    """Largest request body or websocket message answered; a larger one gets an error."""
    keep_days: float = 30.0
    """Finished games, and games nobody moved in, are deleted after this many days (0: never)."""
