"""The run directory: config, checkpoints, best model, metrics, plots.

    RUN_DIR/
      config.yaml         the whole TrainConfig (what a resumed run must agree with)
      run.json            run id, preset, config name and hash, versions, start time, and the
                          network a run started from (--init-model), if any
      checkpoints/        learner checkpoints (newest few; atomic)
      models/             networks promoted to best (model-<version>.pt, network files)
      best.json           the current best model (atomic pointer; plumbing/run_files.py)
      promotions.jsonl    every promotion
      evaluations.jsonl   every gating match and every match against greedy
      games.jsonl         the newest games of those matches, to replay (evaluator/game_log.py)
      metrics.jsonl       the driver's progress snapshots
      elo.json            the Elo ladder
      plots/              win rate and Elo over time (PNG)
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from hopzero.config import ConfigError, TrainConfig
from plumbing.run_files import append_jsonl, read_jsonl

__all__ = ["RunDir"]


class RunDir:
    """Creates or reopens a run directory and appends its JSONL logs."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @property
    def exists(self) -> bool:
        """Whether a run was started here before (it has a run.json)."""
        return (self.path / "run.json").is_file()

    def start(
        self, config: TrainConfig, versions: dict[str, str], initial_model: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Create the directory for a new run, or check that ``config`` matches the old one.

        Returns the run's identity (``run.json``). Resuming with a different game or network is
        refused: the checkpoints would not fit; other settings may change between sessions.
        ``initial_model``: where a new run's first network came from (``hopzero.initial_model``).
        """
        for sub in ("checkpoints", "models", "plots"):
            (self.path / sub).mkdir(parents=True, exist_ok=True)
        if self.exists:
            info = json.loads((self.path / "run.json").read_text())
            old = TrainConfig.from_dict(yaml.safe_load((self.path / "config.yaml").read_text()))
            for field in ("preset", "rules", "network"):
                if getattr(old, field) != getattr(config, field):
                    raise ConfigError(
                        f"run directory {self.path} holds a run with {field}={_show(getattr(old, field))}; "
                        f"this config has {_show(getattr(config, field))}: use another --run-dir"
                    )
            info["resumed"] = info.get("resumed", 0) + 1
        else:
            info = {
                "run_id": f"{config.preset}-{uuid.uuid4().hex[:12]}",
                "preset": config.preset,
                "config": config.name,
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "resumed": 0,
            }
            if initial_model is not None:
                info["initial_model"] = initial_model
        info.update(config_hash=config.hash(), versions=versions)
        self._write_atomic("run.json", json.dumps(info, indent=2))
        self._write_atomic("config.yaml", yaml.safe_dump(config.to_dict(), sort_keys=False))
        return info

    def config(self) -> TrainConfig | None:
        """The run's configuration (config.yaml), None before a run was started here."""
        path = self.path / "config.yaml"
        if not path.is_file():
            return None
        return TrainConfig.from_dict(yaml.safe_load(path.read_text()))

    def append(self, name: str, record: dict[str, Any]) -> None:
        """Append one JSON line to ``name`` (metrics.jsonl, evaluations.jsonl)."""
        append_jsonl(self.path / name, record)

    def read_jsonl(self, name: str) -> list[dict[str, Any]]:
        """The records of a JSONL log (a torn last line is skipped)."""
        return read_jsonl(self.path / name)

    def _write_atomic(self, name: str, text: str) -> None:
        tmp = self.path / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path / name)


def _show(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True) if isinstance(value, dict) else repr(value)
