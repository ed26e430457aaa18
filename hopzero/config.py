"""The training configuration: one frozen tree composed from per-component configs.

Two names select a run: the game (``--preset``: a RULES.md preset) and the training
configuration (``--config``: ``paper`` = the seed's Table 1 on the ``paper`` game, ``fast`` = our
best settings and the default, ``demo`` = minutes on a laptop). The configurations are YAML files
beside this module (``configs/NAME.yaml``) holding only what differs from the defaults written
here; ``--set section.key=value`` changes any field. Every level is strict: an unknown key is an
error that names the valid ones. The whole tree, with its hash, travels inside every checkpoint
and every game record.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from actors.config import SelfPlayConfig, StageOneConfig
from ccengine.rules import Rules, RulesError, preset
from ccengine.search import SearchConfig
from evaluator.config import EvaluationConfig
from learner.model import NetworkConfig
from learner.replay.config import ReplayConfig
from learner.training import LearnerConfig

__all__ = [
    "CONFIG_NAMES",
    "ConfigError",
    "EvaluationConfig",
    "NetworkConfig",
    "ReplayConfig",
    "RunConfig",
    "SelfPlayConfig",
    "StageOneConfig",
    "TrainConfig",
    "load_config",
]

CONFIG_NAMES: tuple[str, ...] = ("demo", "fast", "paper")


class ConfigError(ValueError):
    """An unknown configuration name or key, or a value of the wrong kind."""


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """How long and how loudly."""

    minutes: float = 120.0
    """Wall-clock budget; 0 = until Ctrl-C."""
    max_learner_steps: int = 0
    """Stop after this many learner steps (0 = no limit)."""
    progress_every_s: float = 10.0
    """Seconds between progress lines."""


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """The whole run: the game, every component, and the seed."""

    name: str = "fast"
    """The configuration this tree came from (``demo``, ``fast``, ``paper``)."""
    preset: str = "cc49"
    """The game (RULES.md preset)."""
    rules: dict[str, Any] = field(default_factory=dict)
    """Rule options changed on top of the preset (e.g. ``progress_limit: 100``)."""
    seed: int = 0
    network: NetworkConfig = field(default_factory=NetworkConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    stage1: StageOneConfig = field(default_factory=StageOneConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def game_rules(self) -> Rules:
        """The rules of the game this run plays."""
        try:
            return preset(self.preset).replace(**self.rules) if self.rules else preset(self.preset)
        except RulesError as exc:
            raise ConfigError(str(exc)) from None

    def training_rules(self) -> Rules:
        """The rules of the training games: the game's, with ``selfplay.rules`` on top."""
        rules = self.game_rules()
        try:
            return rules.replace(**self.selfplay.rules) if self.selfplay.rules else rules
        except RulesError as exc:
            raise ConfigError(f"selfplay.rules: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The whole tree as plain JSON-ready data."""
        return _jsonable(dataclasses.asdict(self))

    def hash(self) -> str:
        """A short stable hash of the whole tree (carried by records and checkpoints)."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build the tree from plain data, strictly (what a checkpoint carries)."""
        return _build(cls, data, "")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "numerator") and not isinstance(value, (int, float, bool)):
        return str(value)  # Fraction thresholds keep their exact value as "11/20"
    return value


def _build(cls: type, data: Any, path: str) -> Any:
    """Instantiate dataclass ``cls`` from ``data``, recursing into nested dataclasses."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path or 'config'} must be a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = path or "the top level"
        raise ConfigError(f"unknown key(s) {unknown} in {where}; valid: {sorted(fields)}")
    defaults = cls()
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        current = getattr(defaults, name)
        key = f"{path}.{name}" if path else name
        if dataclasses.is_dataclass(current):
            merged = {**_shallow(current), **value} if isinstance(value, dict) else value
            kwargs[name] = _build(type(current), merged, key)
        elif isinstance(current, tuple) and isinstance(value, list):
            kwargs[name] = tuple(value)
        else:
            kwargs[name] = _coerce(current, value, key)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{path or 'config'}: {exc}") from None


def _shallow(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _coerce(default: Any, value: Any, key: str) -> Any:
    """Check a leaf value against the kind of its default (ints may stand for floats)."""
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{key} must be true or false, got {value!r}")
    elif isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key} must be an integer, got {value!r}")
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key} must be a number, got {value!r}")
        value = float(value)
    elif isinstance(default, str) and not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {value!r}")
    return value


def _set(tree: dict[str, Any], assignment: str) -> None:
    """Apply ``a.b.c=value`` (value parsed as YAML) to a nested dict."""
    key, eq, text = assignment.partition("=")
    if not eq or not key.strip():
        raise ConfigError(f"--set {assignment!r} must be key=value, e.g. learner.lr=0.01")
    try:
        value = yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {assignment!r}: the value is not valid YAML ({exc})") from None
    node = tree
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {assignment!r}: {part} is not a section")
    node[parts[-1]] = value


def named_config_data(name: str) -> dict[str, Any]:
    """The YAML of a named configuration as plain data."""
    if name not in CONFIG_NAMES:
        raise ConfigError(f"unknown config {name!r}; valid: {', '.join(CONFIG_NAMES)}")
    text = resources.files("hopzero").joinpath("configs", f"{name}.yaml").read_text()
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"configs/{name}.yaml must hold a mapping")
    return data


def load_config(
    name: str = "fast",
    *,
    preset_name: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    seed: int | None = None,
) -> TrainConfig:
    """The named configuration, on ``preset_name`` when given, with ``--set`` overrides applied."""
    data = named_config_data(name)
    data["name"] = name
    if preset_name is not None:
        data["preset"] = preset_name
    if seed is not None:
        data["seed"] = seed
    for assignment in overrides:
        _set(data, assignment)
    config = TrainConfig.from_dict(data)
    config.training_rules()  # validate the game now, not an hour into the run
    return config
