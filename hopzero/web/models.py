"""One copy of each network per process, loaded off the event loop, shared by every game.

A seat that plays a model and the analysis of a game both ask :class:`ModelLibrary` for the
model's evaluator. The first ask loads it on a worker thread (reading and checking the file,
building the inference session take a second or two, and the event loop answers other requests
meanwhile); asks that come while it loads wait for the same load; later asks get the same
object. At most ``capacity`` models stay loaded, the least recently used dropped first.

The evaluator is shared by searches that run on different threads at once, and a network
evaluator keeps buffers between calls, so :class:`SharedEvaluator` runs one call at a time
behind a lock, with one evaluation cache per model in front (a position that one game's search
asked for is answered from memory for every other game).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ccengine.eval_cache import EvaluationCache
from ccengine.rules import Rules

from .limits import ChoiceError

__all__ = ["CACHE_POSITIONS", "ModelLibrary", "SharedEvaluator"]

#: Positions each model's evaluation cache keeps (a few hundred bytes each: ~10 MB).
CACHE_POSITIONS = 16_384


class SharedEvaluator:
    """A network evaluator with its cache, safe to call from several search threads (one call
    at a time). ``history`` and ``c_puct`` are the network's, as its file records them."""

    needs_states: ClassVar[bool] = False

    def __init__(self, inner: Any, label: str) -> None:
        self.label = label
        self.history = int(inner.encoding.history)
        self.c_puct: float | None = inner.c_puct
        self._cache = EvaluationCache(inner, capacity=CACHE_POSITIONS)
        self._lock = threading.Lock()

    def evaluate(
        self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            priors, values = self._cache.evaluate(pieces, to_move, legal, counts)
            return priors.copy(), values.copy()  # the next call may reuse the inner buffers


def _load(rules: Rules, source: str) -> tuple[Path, Any]:
    """Resolve ``source`` (``shipped`` or a run directory) and load its network (worker thread)."""
    from learner.model_files import ModelNotFoundError, resolve_model_source
    from learner.network_evaluator import load_network_evaluator
    from plumbing.run_files import PromotionError

    try:
        path = resolve_model_source(rules, source)
        evaluator = load_network_evaluator(rules, path)
    except (ModelNotFoundError, PromotionError, OSError, ValueError, KeyError) as exc:
        raise ChoiceError(f"the model cannot be loaded: {exc}") from None
    if evaluator.algo == "dqn":
        raise ChoiceError("the model is a DQN network (no trained value head): it cannot search")
    return path, evaluator


class ModelLibrary:
    """The loaded networks of one server, by preset and file."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._models: OrderedDict[tuple[str, str], SharedEvaluator] = OrderedDict()
        self._loading: dict[tuple[str, str], asyncio.Future[SharedEvaluator]] = {}
        #: Loads done since the start (each a file read once).
        self.loads = 0

    def loaded(self) -> list[str]:
        """The labels of the models in memory, least recently used first."""
        return [m.label for m in self._models.values()]

    async def evaluator(self, rules: Rules, source: str, label: str) -> SharedEvaluator:
        """The shared evaluator of ``source`` (``shipped`` or a run directory's path) for
        ``rules``, loaded on a worker thread the first time. A run's best model that changed
        since is a new file, so a new entry; the old one ages out."""
        from learner.model_files import resolve_model_source
        from plumbing.run_files import PromotionError

        if source == "shipped":
            where = "shipped"
        else:  # the run's current best file, found off the loop (reading best.json checks a digest)
            try:
                where = str(await asyncio.to_thread(resolve_model_source, rules, source))
            except (PromotionError, OSError, ValueError) as exc:
                raise ChoiceError(f"the model cannot be loaded: {exc}") from None
        key = (rules.name, where)
        if key in self._models:
            self._models.move_to_end(key)
            return self._models[key]
        pending = self._loading.get(key)
        if pending is None:
            pending = asyncio.get_running_loop().create_future()
            self._loading[key] = pending
            try:
                _, inner = await asyncio.to_thread(_load, rules, source)
                shared = SharedEvaluator(inner, label)
                self.loads += 1
                self._models[key] = shared
                while len(self._models) > self.capacity:
                    self._models.popitem(last=False)
                pending.set_result(shared)
            except asyncio.CancelledError:
                pending.cancel()
                raise
            except Exception as exc:
                pending.set_exception(exc)
                pending.exception()  # retrieved: no "never retrieved" warning when nobody else waits
                raise
            finally:
                del self._loading[key]
        return await asyncio.shield(pending)
