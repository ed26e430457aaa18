"""A player's thinking, in chunks the page can show as they come, stoppable at any chunk.

A tree-search player (``mcts``, ``mcts-rollout``: a :class:`ccengine.search_player.SearchPlayer`)
is searched here through the public :class:`ccengine.search.BatchedSearch`: one tree, grown by
``chunk`` simulations at a time, with the player's own evaluator, search settings and input
history, deciding as it does (no noise, the most visited move). After
each chunk ``progress`` gets the root's statistics; ``stop`` is asked between chunks. Other
players (greedy, alpha-beta) just choose their move.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccengine import PASS, Rules
from ccengine.reference import move_path
from ccengine.search import BatchedSearch, SearchResult
from ccengine.search_player import SearchPlayer, game_piece_history

__all__ = ["Thought", "think"]

Move = tuple[int, int]
#: Moves shown with their visit shares.
TOP_MOVES = 8


@dataclass(frozen=True)
class Thought:
    """A player's view of a position: the move it would play and, for a search, its statistics."""

    move: Move
    simulations: int = 0
    value: float | None = None
    """Root value from the side to move's view, in [-1, 1] (None: the player judges nothing)."""
    prior_value: float | None = None
    """The evaluator's own value of the position (the network's; a playout's), before search."""
    top: tuple[dict[str, Any], ...] = ()
    """The most visited moves: ``move`` ``[s, e]``, ``path``, ``share`` of visits, ``prior``, ``q``."""
    stopped: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the win chance ``(value + 1) / 2`` of the side to move."""
        return {
            "move": list(self.move),
            "simulations": self.simulations,
            "value": self.value,
            "win_chance": None if self.value is None else (self.value + 1) / 2,
            "prior_value": self.prior_value,
            "top": list(self.top),
            "stopped": self.stopped,
        }


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _summary(rules: Rules, board: Any, result: SearchResult, prior_value: float | None, stopped: bool) -> Thought:
    total = max(int(result.visits.sum()), 1)
    order = np.argsort(-result.visits, kind="stable")[:TOP_MOVES]
    top = []
    for i in order:
        s, e = int(result.moves[i, 0]), int(result.moves[i, 1])
        if s < 0 or result.visits[i] == 0:
            continue
        top.append({"move": [s, e], "path": [int(c) for c in move_path(rules, board, (s, e))],
                    "share": float(result.visits[i]) / total, "prior": float(result.prior[i]),
                    "q": _finite(float(result.q[i]))})
    move = (int(result.move[0]), int(result.move[1]))
    return Thought(move=PASS if move[0] < 0 else move, simulations=int(result.simulations),
                   value=_finite(result.root_value), prior_value=prior_value, top=tuple(top), stopped=stopped)


def think(
    player: Any,
    state: Any,
    *,
    simulations: int | None = None,
    chunk: int = 32,
    progress: Callable[[Thought], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Thought:
    """``player``'s thinking about ``state`` (not over; ``state`` is not changed).

    A search player searches ``simulations`` (its own count by default) in chunks, calling
    ``progress`` after each and ending early when ``stop()`` is true; any other player returns
    its chosen move.
    """
    if not isinstance(player, SearchPlayer):
        return Thought(move=tuple(player.select(state)))  # type: ignore[arg-type]
    rules = player.rules
    total = simulations or player.simulations
    if state.legal_moves() == [PASS]:
        return Thought(move=PASS)
    config = player.config.replace(num_simulations=total)  # the tree is sized for the whole search
    search = BatchedSearch(rules, 1, config, history=player.history)
    history = game_piece_history(rules, state, player.history)
    search.set_root(0, state, history, rng=np.random.default_rng(int(player.rng.integers(2**63))))
    board = tuple(state.board)
    done, prior_value, stopped = 0, None, False
    result = None
    while done < total:
        # the first simulation alone values the root: the evaluator's own verdict, before search
        step = 1 if done == 0 else min(chunk, total - done)
        result = search.think(0, player.evaluator, step)
        done += step
        if prior_value is None:
            prior_value = _finite(result.root_value)
        if done < total and stop is not None and stop():
            stopped = True
            break
        if progress is not None and done < total:
            progress(_summary(rules, board, result, prior_value, False))
    assert result is not None
    return _summary(rules, board, result, prior_value, stopped)
