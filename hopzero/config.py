"""The training configuration: one frozen tree composed from per-component configs.

Two names select a run: the game (``--preset``: a preset of docs/RULES.md) and the training
configuration (``--config``: ``paper`` = the seed's Table 1 on the ``paper`` game, ``fast`` = our
best settings and the default, ``demo`` = minutes on a laptop, ``star2`` = ``fast`` sized for the
121-hole star, ``star3`` and ``star4`` = ``star2`` for three and four players, ``star6`` =
``star3`` for six players with the race plan as stage 1's teacher, ``dqn`` = the seed paper's Deep
Q-learning baseline on the same system, ``algo: dqn``). The configurations are YAML files beside
this module (``configs/NAME.yaml``) holding only what differs from the defaults written here or
from the configuration they name as their ``base``; ``--set section.key=value`` changes any field. Every level is strict: an unknown key is an
error that names the valid ones, and every value is checked against the type, range or choices
its section declares (``plumbing.fields``); an error names the field's dotted path
(``network.history: must be an integer in [1, 16], got -2``). The whole tree, with its hash,
travels inside every checkpoint and every game record.
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
from plumbing.fields import FieldError, build_config, check_fields, checked
from ccengine.rules import Rules, RulesError, preset
from ccengine.search import SearchConfig
from evaluator.config import EvaluationConfig
from learner.dqn import DQNConfig
from learner.model import NetworkConfig
from learner.replay.config import ReplayConfig
from learner.training import LearnerConfig

__all__ = [
    "CONFIG_NAMES",
    "ALGOS",
    "ConfigError",
    "DQNConfig",
    "EvaluationConfig",
    "NetworkConfig",
    "ReplayConfig",
    "RunConfig",
    "SelfPlayConfig",
    "StageOneConfig",
    "TrainConfig",
    "load_config",
]

_CONFIGS = resources.files("hopzero").joinpath("configs")
#: The named configurations: one YAML file each in ``hopzero/configs``.
CONFIG_NAMES: tuple[str, ...] = tuple(sorted(p.name.removesuffix(".yaml") for p in _CONFIGS.iterdir()
                                             if p.name.endswith(".yaml")))
#: What the run trains: ``alphazero`` (search targets, the gate) or ``dqn`` (learner.dqn).
ALGOS: tuple[str, ...] = ("alphazero", "dqn")


class ConfigError(ValueError):
    """An unknown configuration name or key, or a value of the wrong kind."""


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """How long, how loudly, and how often a failing component is restarted."""

    minutes: float = checked(120.0, ge=0)
    """Wall-clock budget; 0 = until Ctrl-C."""
    max_learner_steps: int = checked(0, ge=0)
    """Stop after this many learner steps (0 = no limit)."""
    progress_every_s: float = checked(10.0, ge=1)
    """Seconds between progress lines (each asks every component for its stats; also how often
    the driver looks for components to restart)."""
    max_restarts: int = checked(5, ge=0)
    """Restarts of one component within ``restart_window_s`` that the driver allows; one more
    failure and it stops the run and exits non-zero, naming the component and its last error (a
    component that fails as it starts would otherwise be restarted forever)."""
    restart_window_s: float = checked(600.0, gt=0)
    """The window of ``max_restarts``, in seconds."""
    restart_backoff_s: float = checked(2.0, ge=0, le=60)
    """Wait before restarting a failed component's loop, doubled with each failure within the
    window (at most a minute): Ray needs some seconds to declare a lost node dead."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """The whole run: the game, every component, and the seed."""

    name: str = checked("fast", choices=CONFIG_NAMES)
    """The configuration this tree came from (``demo``, ``fast``, ``paper``, ``star2``, ``dqn``)."""
    algo: str = checked("alphazero", choices=ALGOS)
    """``alphazero`` (self-play by tree search, AlphaZero's targets, the 55% gate) or ``dqn``
    (epsilon-greedy games, double DQN with n-step returns, no gate, no stage 1: the ``dqn``
    section; docs/TRAINING.md "DQN")."""
    preset: str = checked("cc49")
    """The game (RULES.md preset; checked with ``rules`` by :meth:`training_rules`)."""
    rules: dict[str, Any] = checked(factory=dict)
    """Rule options changed on top of the preset (e.g. ``progress_limit: 100``)."""
    seed: int = checked(0, ge=0)
    """Seeds every component (each derives its own streams from it)."""
    network: NetworkConfig = field(default_factory=NetworkConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    stage1: StageOneConfig = field(default_factory=StageOneConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    dqn: DQNConfig = field(default_factory=DQNConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def __post_init__(self) -> None:
        check_fields(self)
        # The game, both rule sets and the network's shape on them: now, not an hour into the run.
        rules = self.training_rules()
        try:
            self.network.net_config(rules)
        except ValueError as exc:
            raise FieldError("network", f"{exc} (on {self.preset})") from None
        if self.stage1.teacher != "greedy":
            from actors.heuristic import teacher_player

            try:  # a teacher the game cannot seat (opponents=still on two players) fails here, not in its actor
                teacher_player(self.stage1.teacher, rules)
            except ValueError as exc:
                raise FieldError("stage1.teacher", str(exc)) from None
        if self.selfplay.opponent_fraction > 0 and self.selfplay.opponent_seats >= rules.players:
            raise FieldError("selfplay.opponent_seats", f"must leave the network a seat: below the {rules.players} "
                                                        f"players of {self.preset}, got {self.selfplay.opponent_seats}")
        if self.selfplay.full_search_prob < 1 and self.selfplay.fast_simulations >= self.search.num_simulations:
            raise FieldError("selfplay.fast_simulations", f"must be below search.num_simulations "
                                                          f"({self.search.num_simulations}), got "
                                                          f"{self.selfplay.fast_simulations}")
        if self.search.model_opponent and not self.network.opponent_head:
            raise FieldError("search.model_opponent", "needs a network with the opponent head "
                                                      "(network.opponent_head: true)")
        if self.search.model_opponent and self.selfplay.eval_cache:
            raise FieldError("search.model_opponent", "cannot be combined with selfplay.eval_cache (the cache "
                                                      "keeps no opponent logits)")

    def game_rules(self) -> Rules:
        """The rules of the game this run plays."""
        try:
            rules = preset(self.preset)
        except RulesError as exc:
            raise FieldError("preset", str(exc)) from None
        return _with_options(rules, self.rules, "rules")

    def training_rules(self) -> Rules:
        """The rules of the training games: the game's, with ``selfplay.rules`` on top."""
        return _with_options(self.game_rules(), self.selfplay.rules, "selfplay.rules")

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
        try:
            return build_config(cls, data)  # type: ignore[no-any-return]
        except FieldError as exc:
            raise ConfigError(str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"config: {exc}") from None


def _with_options(rules: Rules, options: dict[str, Any], key: str) -> Rules:
    """``rules`` with ``options`` on top; a bad option raises :class:`FieldError` naming
    ``key.option``."""
    try:
        return rules.replace(**options) if options else rules
    except RulesError as exc:  # "max_plies: must be ..." or "unknown rules option(s) ..."
        option, colon, problem = str(exc).partition(": ")
        if colon and option.isidentifier():
            raise FieldError(f"{key}.{option}", problem) from None
        raise FieldError(key, str(exc)) from None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "numerator") and not isinstance(value, (int, float, bool)):
        return str(value)  # Fraction thresholds keep their exact value as "11/20"
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


def named_config_data(name: str, _extending: tuple[str, ...] = ()) -> dict[str, Any]:
    """The YAML of a named configuration as plain data, with the configuration it names as its
    ``base`` underneath (a config file says only what differs from its base)."""
    if name not in CONFIG_NAMES:
        raise ConfigError(f"unknown config {str(name)[:40]!r}; valid: {', '.join(CONFIG_NAMES)}")
    if name in _extending:
        raise ConfigError(f"configs/{name}.yaml: base configs form a cycle ({' -> '.join((*_extending, name))})")
    text = _CONFIGS.joinpath(f"{name}.yaml").read_text()
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"configs/{name}.yaml must hold a mapping")
    base = data.pop("base", None)
    if base is None:
        return data
    if not isinstance(base, str):
        raise ConfigError(f"configs/{name}.yaml: base must name a config, got {base!r}")
    return _merged(named_config_data(base, (*_extending, name)), data)


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: sections merge key by key, any other value replaces the base's."""
    out = dict(base)
    for key, value in top.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


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
    return TrainConfig.from_dict(data)
