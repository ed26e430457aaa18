"""An engine's thinking about one position, in chunks the page can show as they come, stoppable.

A tree search (:class:`Searcher`: a network or playouts, its simulations and settings) is grown
here through the public :class:`ccengine.search.BatchedSearch`, ``chunk`` simulations at a time,
deciding as a match player does (no noise, the most visited move). Its tree is built for the
search and dropped after it: nothing is kept between two searches, so memory does not grow with
the games. After each chunk ``progress`` gets the root's statistics; ``stop`` is asked between
chunks. A player that does not search (greedy, alpha-beta, random) just chooses its move.

The statistics (:class:`Thought`) hold every seat's expected share of the result (the win chance
of each seat, summing to 1, for any number of seats), the most visited moves with their hop
paths, and each one's principal variation: the line the search expects after it, following the
most visited reply at each node of the tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccengine import PASS, Rules
from ccengine.players import Player
from ccengine.reference import move_path
from ccengine.search import BatchedSearch, Evaluator, SearchConfig, SearchResult
from ccengine.search_player import game_piece_history

__all__ = ["PV_PLIES", "TOP_MOVES", "Searcher", "Thinker", "Thought", "think"]

Move = tuple[int, int]
#: Moves listed with their statistics.
TOP_MOVES = 6
#: Plies of each top move's principal variation (the move itself included).
PV_PLIES = 8


@dataclass(frozen=True)
class Searcher:
    """A tree search: ``evaluator`` (shared: a network, or playouts), ``simulations`` a move, the
    exploration constant, the evaluator's input history, a seed for its tie-breaks."""

    rules: Rules
    evaluator: Evaluator
    simulations: int
    c_puct: float
    history: int
    seed: int


#: What thinks: a search, or any player (its move only).
Thinker = Searcher | Player


@dataclass(frozen=True)
class Thought:
    """An engine's view of a position: the move it would play and, for a search, its statistics."""

    move: Move
    mover: int
    simulations: int = 0
    shares: tuple[float, ...] | None = None
    """Every seat's expected share of the result (sums to 1); None: the player judges nothing."""
    prior_shares: tuple[float, ...] | None = None
    """The evaluator's own shares before search (the network's; a playout's)."""
    top: tuple[dict[str, Any], ...] = ()
    """The most visited moves: ``move`` ``[s, e]``, ``path``, ``share`` of the visits, ``prior``,
    ``win`` (the mover's expected share after it), ``pv`` (hop paths of the line it starts)."""
    stopped: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "move": list(self.move), "mover": self.mover, "simulations": self.simulations,
            "shares": None if self.shares is None else [round(x, 4) for x in self.shares],
            "prior_shares": None if self.prior_shares is None else [round(x, 4) for x in self.prior_shares],
            "top": list(self.top), "stopped": self.stopped,
        }


def _shares(result: SearchResult) -> tuple[float, ...] | None:
    vector = result.root_shares
    if vector is None or not np.all(np.isfinite(vector)):
        return None
    total = float(np.sum(vector))
    return tuple(float(x) / total for x in vector) if total > 0 else None


def _pv(search: BatchedSearch, rules: Rules, state: Any, first: Move) -> list[list[int]]:
    """Hop paths of the line from ``first``: at each node the most visited reply."""
    line = [first]
    while len(line) < PV_PLIES:
        edges = search.forest.node_edges(0, line)
        if edges is None:
            break
        moves, visits = edges[0], edges[1]
        if len(visits) == 0 or int(visits.max()) == 0:
            break
        i = int(np.argmax(visits))
        line.append((int(moves[i, 0]), int(moves[i, 1])))
    paths = []
    walk = state.copy()
    for move in line:
        paths.append([] if move == PASS else [int(c) for c in move_path(rules, walk.board, move)])
        walk.play(move)
        if walk.is_terminal():
            break
    return paths


def _summary(search: BatchedSearch, rules: Rules, state: Any, result: SearchResult,
             prior_shares: tuple[float, ...] | None, stopped: bool) -> Thought:
    total = max(int(result.visits.sum()), 1)
    order = np.argsort(-result.visits, kind="stable")[:TOP_MOVES]
    top = []
    for i in order:
        s, e = int(result.moves[i, 0]), int(result.moves[i, 1])
        if s < 0 or result.visits[i] == 0:
            continue
        q = float(result.q[i])
        pv = _pv(search, rules, state, (s, e))
        top.append({"move": [s, e], "path": pv[0], "share": round(float(result.visits[i]) / total, 4),
                    "prior": round(float(result.prior[i]), 4),
                    "win": None if math.isnan(q) else round((q + 1) / 2, 4), "pv": pv})
    move = (int(result.move[0]), int(result.move[1]))
    return Thought(move=PASS if move[0] < 0 else move, mover=int(state.to_move),
                   simulations=int(result.simulations), shares=_shares(result), prior_shares=prior_shares,
                   top=tuple(top), stopped=stopped)


def think(
    thinker: Thinker,
    state: Any,
    *,
    simulations: int | None = None,
    chunk: int = 32,
    progress: Callable[[Thought], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Thought:
    """``thinker``'s thinking about ``state`` (a game going on; ``state`` is not changed).

    A :class:`Searcher` searches ``simulations`` (its own count by default) in chunks, calling
    ``progress`` after each and ending early when ``stop()`` is true; any other player returns
    its chosen move.
    """
    mover = int(state.to_move)
    if not isinstance(thinker, Searcher):
        return Thought(move=tuple(thinker.select(state)), mover=mover)  # type: ignore[arg-type]
    if state.legal_moves() == [PASS]:
        return Thought(move=PASS, mover=mover)
    rules, total = thinker.rules, simulations or thinker.simulations
    config = SearchConfig(num_simulations=total, c_puct=thinker.c_puct).for_evaluation()  # sized for the whole search
    search = BatchedSearch(rules, 1, config, history=thinker.history)
    history = game_piece_history(rules, state, thinker.history)
    search.set_root(0, state, history, rng=np.random.default_rng(thinker.seed))
    done, prior_shares, stopped = 0, None, False
    result = None
    while done < total:
        # the first simulation alone values the root: the evaluator's own verdict, before search
        step = 1 if done == 0 else min(chunk, total - done)
        result = search.think(0, thinker.evaluator, step)
        done += step
        if prior_shares is None:
            prior_shares = _shares(result)
        if done < total and stop is not None and stop():
            stopped = True
            break
        if progress is not None and done < total:
            progress(_summary(search, rules, state, result, prior_shares, False))
    assert result is not None
    return _summary(search, rules, state, result, prior_shares, stopped)
