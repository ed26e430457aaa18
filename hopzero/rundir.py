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
            info = self.info()
            old = self.config()
            if old is None:
                raise ConfigError(f"{self.path / 'config.yaml'} is missing: {_DAMAGED}")
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
        self.write_info(info)
        self._write_atomic("config.yaml", yaml.safe_dump(config.to_dict(), sort_keys=False))
        return info

    def write_info(self, info: dict[str, Any]) -> None:
        """Replace ``run.json`` (atomically)."""
        self._write_atomic("run.json", json.dumps(info, indent=2))

    def info(self) -> dict[str, Any]:
        """The run's identity (``run.json``); :class:`ConfigError` in one line when it is damaged."""
        path = self.path / "run.json"
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"{path} is damaged ({_why(exc)}): {_DAMAGED}") from None
        if not isinstance(info, dict) or not isinstance(info.get("run_id"), str):
            raise ConfigError(f"{path} is damaged (no run_id): {_DAMAGED}")
        return info

    def config(self) -> TrainConfig | None:
        """The run's configuration (config.yaml), None before a run was started here;
        :class:`ConfigError` in one line when it is damaged or holds a value this hopzero refuses."""
        path = self.path / "config.yaml"
        if not path.is_file():
            return None
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path} is damaged ({_why(exc)}): {_DAMAGED}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path} is damaged (not a mapping): {_DAMAGED}")
        return TrainConfig.from_dict(data)

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


#: What a person does about a damaged run.json or config.yaml.
_DAMAGED = ("restore it from a backup, or start a new --run-dir (this run's models/*.pt still play as model=FILE "
            "and start a new run with --init-model FILE)")


def _why(exc: BaseException) -> str:
    """An exception's message on one short line."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


def _show(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True) if isinstance(value, dict) else repr(value)
