"""Metrics of every component, for Prometheus (names and meanings: docs/METRICS.md).

Inside Ray actors the metrics are ``ray.util.metrics`` objects: Ray's metrics agent exports them
on each node with a ``ray_`` prefix, counters with a ``_total`` suffix, and one series per worker
(``ray_hopzero_learner_steps_total``, ``ray_hopzero_gate_score``; see :func:`exported_name`).
Outside Ray (a plain process) they are ``prometheus_client`` objects of the same names, one
per name in a process, shared by every ``Metrics`` there. The ``Metrics`` facade hides which;
where a metric cannot be created it records nothing, so training never depends on monitoring.

Ray's agent forgets a gauge that its worker has not reported for two report intervals (20 s by
default), even while the worker lives: a value set once (the gate score, set after each gating
match) would vanish from Prometheus. So ``Metrics`` sets every gauge again every
``refresh_s`` seconds from a daemon thread; when the process dies its gauges age out, as they should.
The last values are the process's, not one facade's: a stopped component's facade (a learner of
an earlier run in the same process) re-sets the latest value anyone set, never its own stale one.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

__all__ = ["METRICS", "Metrics", "exported_name", "markdown_table"]

log = logging.getLogger(__name__)

#: (name, tags) -> (metric object, backend, value): every gauge's last value in this process.
_LAST_GAUGES: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[Any, str, float]] = {}
_LAST_GAUGES_LOCK = threading.Lock()

#: name -> (kind, description, tag keys). The single source of truth for docs/METRICS.md.
METRICS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # self-play actors
    "hopzero_selfplay_games": ("counter", "Self-play games finished", ("actor", "stage")),
    "hopzero_selfplay_positions": ("counter", "Positions in finished self-play games", ("actor", "stage")),
    "hopzero_selfplay_simulations": ("counter", "Tree-search simulations run", ("actor",)),
    "hopzero_selfplay_sims_per_second": ("gauge", "Simulations per second of the actor", ("actor",)),
    "hopzero_selfplay_model_version": ("gauge", "Model version the actor plays with", ("actor",)),
    "hopzero_selfplay_eval_cache_hit_rate": (
        "gauge", "Share of the actor's leaf evaluations answered by its evaluation cache", ("actor",)
    ),
    # replay buffer, as the learner sees it
    "hopzero_replay_window_positions": ("gauge", "Positions in the learner's replay window", ()),
    "hopzero_replay_window_capacity": ("gauge", "Positions the learner's replay window holds when full", ()),
    "hopzero_replay_inserted": ("counter", "Positions inserted into the learner's window", ()),
    "hopzero_replay_sampled": ("counter", "Positions sampled for training", ()),
    "hopzero_replay_skipped_records": (
        "counter", "Records kept from the learner, by kind: malformed, foreign, future (schema), stale", ("kind",)
    ),
    "hopzero_replay_unreachable_seconds": (
        "gauge", "How long the learner has not reached the replay buffer's Redis (0 while it does)", ()
    ),
    # learner
    "hopzero_learner_steps": ("counter", "Learner optimisation steps", ()),
    "hopzero_learner_loss": (
        "gauge",
        "Loss terms of the last step (`total`, `value`, `policy`, `l2`; `opponent`, `ownership`, `score` with "
        "those heads; "
        "a DQN run: `total`, `huber`, `l2`)",
        ("term",),
    ),
    "hopzero_learner_lr": ("gauge", "Learning rate", ()),
    "hopzero_learner_steps_per_second": ("gauge", "Learner steps per second", ()),
    # evaluator
    "hopzero_gate_score": ("gauge", "Score of the last candidate against the best (wins + draws/2)", ()),
    "hopzero_gate_games": ("counter", "Gating games played", ()),
    "hopzero_promotions": ("counter", "Promotions of a candidate to best", ()),
    "hopzero_best_version": ("gauge", "Version of the best model", ()),
    "hopzero_winrate_vs_greedy": ("gauge", "Score of the best model against greedy (paper protocol)", ()),
    "hopzero_elo": ("gauge", "Elo of the best model, greedy = 0", ()),
}


#: The prometheus_client objects of this process, by name, shared by every ``Metrics`` in it.
_PROMETHEUS: dict[str, Any] = {}


def exported_name(name: str) -> str:
    """The name Prometheus scrapes for ``name`` recorded in a Ray actor (checked against a live
    Ray 2.60 agent by tests/test_deploy_observe.py): ``ray_`` + name, ``_total`` for a counter."""
    kind = METRICS[name][0]
    return f"ray_{name}_total" if kind == "counter" else f"ray_{name}"


def markdown_table() -> str:
    """The table of docs/METRICS.md (``python -m plumbing.metrics`` prints it; a test compares)."""
    lines = ["| name | scraped as | kind | tags | meaning |", "|---|---|---|---|---|"]
    for name, (kind, description, tags) in METRICS.items():
        tag_text = ", ".join(f"`{t}`" for t in tags) or "-"
        lines.append(f"| `{name}` | `{exported_name(name)}` | {kind} | {tag_text} | {description} |")
    return "\n".join(lines) + "\n"


class Metrics:
    """Counters and gauges by name; ``inc``/``set`` with tag values. Safe when unmonitored."""

    def __init__(self, backend: str = "auto", refresh_s: float = 5.0) -> None:
        self._objects: dict[str, Any] = {}
        self.backend = self._choose(backend)
        self.refresh_s = refresh_s
        self._refresher: threading.Thread | None = None

    @staticmethod
    def _choose(backend: str) -> str:
        if backend != "auto":
            return backend
        try:
            import ray

            if ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE:
                return "ray"
        except Exception:  # noqa: BLE001 - no Ray, or not inside a worker
            pass
        return "prometheus"

    def _get(self, name: str) -> Any:
        obj = self._objects.get(name)
        if obj is not None or self.backend == "none":
            return obj
        kind, description, tags = METRICS[name]
        try:
            if self.backend == "ray":
                from ray.util import metrics as rm

                cls = rm.Counter if kind == "counter" else rm.Gauge
                obj = cls(name, description=description, tag_keys=tags)
            else:
                import prometheus_client as pc

                cls = pc.Counter if kind == "counter" else pc.Gauge
                # one object a name in a process: prometheus_client refuses a second registration
                obj = _PROMETHEUS.get(name) or _PROMETHEUS.setdefault(name, cls(name, description, labelnames=tags))
        except Exception as exc:  # noqa: BLE001 - monitoring must never stop training
            log.warning("metric %s unavailable: %s", name, exc)
            self.backend = "none"
            return None
        self._objects[name] = obj
        return obj

    def inc(self, name: str, value: float = 1.0, **tags: str) -> None:
        """Add ``value`` to a counter."""
        obj = self._get(name)
        if obj is None or value <= 0:
            return
        if self.backend == "ray":
            obj.inc(value, tags=tags or None)
        else:
            (obj.labels(**tags) if tags else obj).inc(value)

    def set(self, name: str, value: float, **tags: str) -> None:
        """Set a gauge; it is set again every ``refresh_s`` seconds until changed."""
        obj = self._get(name)
        if obj is None:
            return
        with _LAST_GAUGES_LOCK:
            _LAST_GAUGES[(name, tuple(sorted(tags.items())))] = (obj, self.backend, float(value))
            _set_gauge(obj, self.backend, float(value), tags)
            if self._refresher is None and self.refresh_s > 0:
                self._refresher = threading.Thread(target=self._refresh_loop, name="metrics-refresh", daemon=True)
                self._refresher.start()

    def refresh(self) -> None:
        """Set every gauge of the process again to its last value (what the daemon thread does
        periodically)."""
        with _LAST_GAUGES_LOCK:
            for (_, tags), (obj, backend, value) in _LAST_GAUGES.items():
                _set_gauge(obj, backend, value, dict(tags))

    def _refresh_loop(self) -> None:
        while True:  # a daemon thread: it lives as long as the process
            time.sleep(self.refresh_s)
            try:
                self.refresh()
            except Exception as exc:  # noqa: BLE001 - monitoring must never stop training
                log.warning("metrics refresh failed: %s", exc)


def _set_gauge(obj: Any, backend: str, value: float, tags: dict[str, str]) -> None:
    if backend == "ray":
        obj.set(value, tags=tags or None)
    else:
        (obj.labels(**tags) if tags else obj).set(value)


if __name__ == "__main__":
    print(markdown_table(), end="")
