"""Pictures of a run: win rate against greedy, gate scores and Elo over time (PNG)."""

from __future__ import annotations

from pathlib import Path

from evaluator.gating import GateConfig
from hopzero.rundir import RunDir

__all__ = ["greedy_curve", "promotion_times", "write_curves", "write_plots", "write_td_curve"]


def write_plots(rundir: RunDir) -> list[Path]:
    """Write ``plots/winrate.png`` and ``plots/elo.png`` from evaluations.jsonl; returns the files."""
    evaluations = rundir.read_jsonl("evaluations.jsonl")
    if not evaluations:
        return []
    plt = _pyplot()
    out_dir = rundir.path / "plots"
    out_dir.mkdir(exist_ok=True)
    written = []

    for e, minutes in zip(evaluations, _minutes_since_start(rundir, evaluations)):
        e["minutes"] = minutes
    greedy = [e for e in evaluations if e.get("kind") == "greedy"]
    gates = [e for e in evaluations if e.get("kind") == "gate"]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    if greedy:
        ax.plot([e["minutes"] for e in greedy], [100 * e["score"] for e in greedy], "o-", label="best vs greedy")
    if gates:
        ax.plot([e["minutes"] for e in gates], [100 * e["score"] for e in gates], "s", alpha=0.6,
                label="candidate vs best (gate)")
        threshold = 100 * _gate_threshold(rundir)
        ax.axhline(threshold, color="grey", linestyle=":", label=f"{threshold:g}% gate")
    ax.set_xlabel("minutes since the run started")
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(f"{rundir.path.name}: win rates")
    fig.tight_layout()
    path = out_dir / "winrate.png"
    fig.savefig(path)
    plt.close(fig)
    written.append(path)

    elo = [e for e in greedy if "elo" in e]
    if elo:
        fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
        ax.plot([e["minutes"] for e in elo], [e["elo"] for e in elo], "o-")
        ax.axhline(0, color="grey", linestyle=":", label="greedy = 0")
        ax.set_xlabel("minutes since the run started")
        ax.set_ylabel("Elo of the best model")
        ax.grid(alpha=0.3)
        ax.set_title(f"{rundir.path.name}: Elo (greedy = 0)")
        fig.tight_layout()
        path = out_dir / "elo.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written


def greedy_curve(rundir: RunDir) -> list[tuple[float, int, float]]:
    """The run's own measurements of its best model against greedy: (minutes since the run
    started, model version, score), in order."""
    greedy = [e for e in rundir.read_jsonl("evaluations.jsonl") if e.get("kind") == "greedy"]
    if not greedy:
        return []
    minutes = _minutes_since_start(rundir, greedy)
    return [(m, int(e["version"]), float(e["score"])) for m, e in zip(minutes, greedy)]


def promotion_times(rundir: RunDir) -> list[tuple[float, int, Path]]:
    """The run's best models (promotions.jsonl, the first one included): (minutes since the run
    started, version, model file), in order. ``ValueError`` names a damaged record."""
    from datetime import datetime

    rows = []
    for k, record in enumerate(rundir.read_jsonl("promotions.jsonl")):
        try:
            wall = datetime.fromisoformat(record["promoted_at"]).timestamp()
            rows.append((wall, int(record["version"]), rundir.path / record["path"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{rundir.path / 'promotions.jsonl'}: record {k + 1} is damaged ({exc!r})") from None
    if not rows:
        return []
    t0 = _run_start(rundir, min(wall for wall, _, _ in rows))
    return [((wall - t0) / 60, version, path) for wall, version, path in rows]


def write_curves(curves: dict[str, list[tuple[float, int, float]]], path: Path, title: str,
                 ylabel: str = "best model vs greedy, the run's own measurement (%)") -> Path:
    """Several runs' curves in one picture (``hopzero curves``), one line a run: (minutes,
    version, score) points, by default :func:`greedy_curve`'s."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for name, curve in curves.items():
        ax.plot([t for t, _, _ in curve], [100 * s for _, _, s in curve], "o-", label=name)
    ax.set_xlabel("minutes since the run started")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _pyplot():
    """matplotlib's pyplot on the Agg backend: files only, no display needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _minutes_since_start(rundir: RunDir, evaluations: list[dict]) -> list[float]:
    """Each evaluation's time (its ``wall``) in minutes since the run started."""
    t0 = _run_start(rundir, min(e.get("wall", 0.0) for e in evaluations))
    return [(e.get("wall", t0) - t0) / 60 for e in evaluations]


def _gate_threshold(rundir: RunDir) -> float:
    """The run's gate threshold (its config.yaml), the default gate's without one."""
    config = rundir.config()
    gate = config.evaluation.gate if config is not None else GateConfig()
    return float(gate.threshold_exact)


def _run_start(rundir: RunDir, fallback: float) -> float:
    """The run's start (run.json, UTC) as a Unix time; ``fallback`` when unknown or later."""
    import calendar
    import json
    import time

    try:
        started = json.loads((rundir.path / "run.json").read_text())["started"]
        t = float(calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ")))
    except (OSError, KeyError, ValueError):
        return fallback
    return min(t, fallback)


def write_td_curve(path: Path, curve: list[float], preset: str, opponent: str) -> None:
    """The learning curve of ``hopzero td-train``: the score over the last 100 episodes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(range(1, len(curve) + 1), [100 * c for c in curve])
    ax.set_xlabel("episode")
    ax.set_ylabel(f"score against {opponent}, last 100 episodes (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{preset}: TD(lambda) linear evaluation, one-ply play while learning")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
