"""A bounded cache of leaf evaluations in front of any evaluator, shared by the games of one search.

The batched search asks its evaluator for the priors and value of each leaf, and a network gives
the same answer each time it is asked about the same leaf. Where leaves come back, the answer is
kept. They do come back for the network player (``mcts:model=...``): each move's search starts a
new tree, whose positions two plies on were mostly searched by the move before (about 26% of an
800-simulation search's leaves on cc49), and a match's parallel games share their openings. In
self-play the tree is kept from move to move, and with history in the network's input a leaf
almost never recurs (0.1-0.4%), so the actors run without a cache unless configured
(``selfplay.eval_cache``).

The key is everything the network's input depends on: the leaf's piece cells for every plane of
history the search hands out (``pieces[b]``, the ``H`` most recent positions, -1 where missing)
and the player to move. The legal moves, and so the layout of the priors, are a function of the
newest of those positions and the player to move, so they need no place in the key.

Bounded: at most ``capacity`` positions, the least recently used dropped first. An entry holds
the priors of the legal moves (4 bytes each) and the value, about 300-700 bytes with the key.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import ClassVar

import numpy as np

from .search import Evaluator

__all__ = ["DEFAULT_CAPACITY", "EvaluationCache"]

#: Positions kept by default: tens of megabytes at most, a few seconds of one actor's evaluations.
DEFAULT_CAPACITY = 65_536


class EvaluationCache:
    """``evaluate(pieces, to_move, legal, counts)`` answered from the cache where it can, by
    ``inner`` (one batched call for the rest) where it cannot.

    ``inner``: a deterministic evaluator (a network; not random rollouts, which ask for states).
    ``capacity``: the most positions kept (at least 1).
    """

    needs_states: ClassVar[bool] = False

    def __init__(self, inner: Evaluator, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity={capacity} must be at least 1")
        if getattr(inner, "needs_states", False):
            raise ValueError("an evaluator that needs the engine states (rollouts) is random: it cannot be cached")
        self.inner = inner
        self.capacity = int(capacity)
        self._entries: OrderedDict[bytes, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        #: Positions asked for, and of those answered from the cache, since construction.
        self.lookups = 0
        self.hits = 0

    @property
    def hit_rate(self) -> float:
        """Share of the positions asked for that the cache answered (0 before the first)."""
        return self.hits / self.lookups if self.lookups else 0.0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every position (after new weights: the old answers are the old network's)."""
        self._entries.clear()

    def evaluate(
        self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Priors over each row's legal moves and values, as ``inner`` gives them."""
        b, m = legal.shape
        pieces = np.ascontiguousarray(pieces)
        row = pieces[0].nbytes if b else 0
        raw = pieces.tobytes()
        movers = np.asarray(to_move, dtype=np.int8).tobytes()
        keys = [raw[i * row:(i + 1) * row] + movers[i:i + 1] for i in range(b)]

        entries = self._entries
        hits: list[tuple[int, tuple[np.ndarray, np.ndarray]]] = []
        missed: list[int] = []
        for i, key in enumerate(keys):
            found = entries.get(key)
            if found is None:
                missed.append(i)
            else:
                entries.move_to_end(key)
                hits.append((i, found))
        self.lookups += b
        self.hits += len(hits)

        if missed or not hits:
            if len(missed) == b:
                new_priors, new_values = self.inner.evaluate(pieces, to_move, legal, counts)
            else:
                idx = np.asarray(missed)
                new_priors, new_values = self.inner.evaluate(pieces[idx], to_move[idx], legal[idx], counts[idx])
            new_priors = np.asarray(new_priors, dtype=np.float32)
            new_values = np.asarray(new_values, dtype=np.float32)
            value_shape = new_values.shape[1:]
        else:
            value_shape = hits[0][1][1].shape
        # A value is what the inner evaluator gives: a scalar (two players), or a vector (max-n).
        priors = np.zeros((b, m), dtype=np.float32)
        values = np.zeros((b, *value_shape), dtype=np.float32)
        for i, (p, v) in hits:
            priors[i, :len(p)] = p
            values[i] = v
        for j, i in enumerate(missed):
            c = int(counts[i])
            priors[i, :c] = new_priors[j, :c]
            values[i] = new_values[j]
            entries[keys[i]] = (new_priors[j, :c].copy(), new_values[j].copy())
        while len(entries) > self.capacity:
            entries.popitem(last=False)
        return priors, values
