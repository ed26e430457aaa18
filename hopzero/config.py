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

from ccengine.rules import Rules, RulesError, preset
from ccengine.search import SearchConfig
from evaluator.gating import GateConfig
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
class NetworkConfig:
    """Which network plays: ``learner.model`` sizes and ``ccengine.encoding`` inputs."""

    size: str = "fast"
    """``paper`` (the seed's 9 bottleneck blocks, 247,386 parameters on 49 cells), ``fast``
    (4 narrower blocks, padded stem: our default) or ``tiny`` (tests)."""
    encoding: str = "general"
    """``paper`` (the seed's 7 planes) or ``general`` (side-to-move view, piece-ID planes)."""
    history: int = 3
    """States of history in the input (paper: 3)."""


@dataclass(frozen=True, kw_only=True)
class SelfPlayConfig:
    """The self-play actors (stage 2 of the paper)."""

    actors: int = 0
    """Number of actors; 0 = as many as Ray's CPUs allow after the learner and evaluator."""
    actor_cpus: float = 1.0
    """Ray CPUs each actor asks for (fractional on a small box so everything is scheduled)."""
    games_per_actor: int = 32
    """Concurrent games per actor, searched in one batch (paper: 1 game per process)."""
    resign_threshold: float = 0.0
    """Resign when the root value stays below ``-resign_threshold`` (0 = never; paper: never)."""
    resign_playout_fraction: float = 0.1
    """Share of games that never resign, to measure how often resigning would be wrong."""
    rules: dict[str, Any] = field(default_factory=dict)
    """Rule options changed for the training games only (stage 1 and self-play), on top of the
    game's: e.g. ``adjudicate: distance`` scores a game cut off at ``max_plies`` by the rows each
    side advanced instead of as a draw, so that self-play learns to race (the paper's soft move
    limit). Evaluation (gate, greedy, Elo) always plays the game's own rules."""


@dataclass(frozen=True, kw_only=True)
class StageOneConfig:
    """The paper's stage 1: supervised pretraining on greedy self-play (section 3.5)."""

    enabled: bool = True
    """Off = tabula rasa (then use the rules' ``progress_limit`` and distance adjudication)."""
    games: int = 15_000
    """Greedy self-play games in total (paper: "15,000 new games per iteration"; we read it as
    the total of one generation pass, see docs/TRAINING.md)."""
    start_mix: tuple[int, int, int] = (5, 3, 2)
    """Random starting positions : random initial moves : normal starts (paper: 5:3:2)."""
    random_moves: int = 3
    """Random initial moves per side in the "random initial moves" games (paper: 3)."""
    keep_fraction: float = 0.04
    """Share of positions kept, to break correlations (paper: 3-5%)."""
    steps: int = 3000
    """Learner steps on stage-1 data before self-play starts."""


@dataclass(frozen=True, kw_only=True)
class ReplayConfig:
    """The replay buffer (learner/replay.py, docs/REPLAY.md)."""

    backend: str = "memory"
    """``memory`` (in-process, held by a Ray actor: the embedded default) or ``redis``."""
    redis_url: str = ""
    """``redis://host:port/db``; empty with backend ``redis`` starts a local ``redis-server``."""
    window_positions: int = 200_000
    """Sliding window, in positions (paper: the last episode's ~7,000 examples)."""
    min_positions: int = 2_000
    """Warm-up: no training until the window holds this many positions."""
    samples_per_insert: float = 8.0
    """Positions sampled per position inserted (Reverb's ratio limiter)."""
    error_buffer: int = 8192
    """Slack of the ratio limiter, in samples."""
    value_target: str = "z"
    """``z`` (game outcome; paper) or ``zq`` (mean of outcome and root value)."""
    augment: bool = True
    """Random reflection of each sample (paper: the data set doubled by reflection)."""


@dataclass(frozen=True, kw_only=True)
class EvaluationConfig:
    """The evaluator: gating candidate against best, win rate against greedy, Elo."""

    gate: GateConfig = field(default_factory=GateConfig)
    """The 55% gate (evaluator/gating.py)."""
    simulations: int = 175
    """Simulations per move in evaluation games (paper: 175 in play, 180 in its tests)."""
    parallel_games: int = 32
    """Games searched together in one batch."""
    greedy_games: int = 100
    """Games against ``greedy`` after each promotion (paper protocol; paper: 300 at the end)."""
    candidate_every_steps: int = 500
    """Learner steps between candidates sent to the gate."""


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
