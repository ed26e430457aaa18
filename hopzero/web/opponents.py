"""The players a browser may choose, and how the server builds them.

A client sends an :class:`OpponentChoice` (a kind and bounded numbers), never a player SPEC: the
model of an ``mcts`` player is ``shipped`` (the preset's packaged model) or a run directory given
on the command line, named by its index. So no request can make the server open a file of its
choosing, and every number is checked against the server's :class:`Limits`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ccengine import Rules
from ccengine.players import Player, PlayerSpecError
from learner.players import make_player
from learner.model_files import ModelNotFoundError, shipped_model_path
from learner.network_player import network_player

__all__ = ["ChoiceError", "Limits", "OpponentChoice", "Opponents", "RunDirs"]

Kind = Literal["greedy", "greedy-stochastic", "random", "alphabeta", "mcts-rollout", "mcts"]
#: The kinds that search a tree and can show their visits and win chance.
SEARCH_KINDS = ("mcts-rollout", "mcts")


class ChoiceError(ValueError):
    """An opponent the server does not offer (a model that is not there, too many simulations)."""


@dataclass(frozen=True)
class Limits:
    """The server's caps (``hopzero serve`` options)."""

    max_simulations: int = 2000
    """Most simulations of one search, a player's or an analysis's."""
    max_depth: int = 4
    """Deepest ``alphabeta`` search (depth 5 takes seconds a move on cc49)."""
    max_searches: int = 2
    """Searches running at once over all clients; one more is refused, not queued."""
    max_games: int = 64
    """Games kept in memory; the least recently used is dropped beyond it."""
    max_body_bytes: int = 16 * 1024
    """Largest request body or websocket message."""


class OpponentChoice(BaseModel):
    """What a client may ask for: ``kind`` with its strength, and for ``mcts`` where the model is."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind = "greedy"
    sims: int = Field(200, ge=1, le=1_000_000, description="simulations (mcts, mcts-rollout)")
    depth: int = Field(3, ge=1, le=64, description="plies (alphabeta)")
    model: Literal["shipped", "run", "none"] = Field("shipped", description="mcts: the shipped model, a run's best, or none")
    run: int = Field(0, ge=0, le=1000, description="mcts with model=run: the index of a --run-dir")


class RunDirs:
    """The run directories given on the command line, referred to by index only."""

    def __init__(self, paths: list[str | Path]) -> None:
        self.paths = [Path(p).resolve() for p in paths]
        for p in self.paths:
            if not p.is_dir():
                raise ChoiceError(f"--run-dir {p}: no such directory")

    def __len__(self) -> int:
        return len(self.paths)

    def get(self, index: int) -> Path:
        """The run directory of ``index``; :class:`ChoiceError` when there is none."""
        if not 0 <= index < len(self.paths):
            raise ChoiceError(f"run {index} does not exist; the server has {len(self.paths)} run(s) (0..{len(self.paths) - 1})")
        return self.paths[index]

    def preset(self, index: int) -> str | None:
        """The preset the run trains (its run.json), None when unreadable."""
        try:
            return str(json.loads((self.get(index) / "run.json").read_text(encoding="utf-8"))["preset"])
        except (OSError, ValueError, KeyError, TypeError):
            return None


class Opponents:
    """Turns choices into SPEC labels and players, within :class:`Limits`."""

    def __init__(self, runs: RunDirs, limits: Limits) -> None:
        self.runs = runs
        self.limits = limits

    def spec(self, choice: OpponentChoice, rules: Rules) -> str:
        """The SPEC the choice stands for (a label: a run is shown as ``run:INDEX``)."""
        self.check(choice, rules)
        if choice.kind == "alphabeta":
            return f"alphabeta:depth={choice.depth}"
        if choice.kind == "mcts-rollout":
            return f"mcts-rollout:sims={choice.sims}"
        if choice.kind == "mcts":
            model = {"shipped": "model=shipped,", "run": f"model=run:{choice.run},", "none": ""}[choice.model]
            return f"mcts:{model}sims={choice.sims}"
        return choice.kind

    def check(self, choice: OpponentChoice, rules: Rules) -> None:
        """Raise :class:`ChoiceError` unless the server offers this choice for ``rules``."""
        if choice.kind in SEARCH_KINDS and choice.sims > self.limits.max_simulations:
            raise ChoiceError(f"sims={choice.sims}: this server allows at most {self.limits.max_simulations}")
        if choice.kind == "alphabeta" and choice.depth > self.limits.max_depth:
            raise ChoiceError(f"depth={choice.depth}: this server allows at most {self.limits.max_depth}")
        if choice.kind != "mcts":
            return
        if choice.model == "shipped":
            try:
                shipped_model_path(rules)
            except ModelNotFoundError as exc:
                raise ChoiceError(str(exc)) from None
        elif choice.model == "run":
            self.runs.get(choice.run)
            trained = self.runs.preset(choice.run)
            if trained is not None and trained != rules.name:
                raise ChoiceError(f"run {choice.run} trains preset {trained!r}, not {rules.name!r}")

    def build(self, choice: OpponentChoice, rules: Rules, seed: int) -> Player:
        """The player of ``choice`` for games of ``rules``."""
        self.check(choice, rules)
        try:
            if choice.kind == "mcts":  # built here: a run's path never travels inside a SPEC string
                model = {"shipped": "shipped", "run": "", "none": ""}[choice.model]
                if choice.model == "run":
                    model = str(self.runs.get(choice.run))
                player: Player = network_player(rules, seed, model=model, sims=choice.sims)
                player.name = self.spec(choice, rules)
                return player
            return make_player(self.spec(choice, rules), rules, seed)
        except (PlayerSpecError, ValueError, FileNotFoundError) as exc:
            raise ChoiceError(f"{self.spec(choice, rules)}: {exc}") from None

    def catalogue(self, rules: Rules) -> list[dict[str, Any]]:
        """The choices offered for ``rules``, as the page lists them (label and choice)."""
        out: list[dict[str, Any]] = [
            {"label": "greedy", "choice": {"kind": "greedy"}},
            {"label": "greedy-stochastic", "choice": {"kind": "greedy-stochastic"}},
            {"label": "random", "choice": {"kind": "random"}},
            {"label": "alpha-beta", "choice": {"kind": "alphabeta", "depth": min(3, self.limits.max_depth)}},
            {"label": "MCTS with greedy playouts", "choice": {"kind": "mcts-rollout", "sims": 200}},
        ]
        try:
            shipped_model_path(rules)
            out.append({"label": f"shipped {rules.name} model", "choice": {"kind": "mcts", "model": "shipped", "sims": 200}})
        except ModelNotFoundError:
            pass
        for i, path in enumerate(self.runs.paths):
            if self.runs.preset(i) in (None, rules.name) and (path / "best.json").is_file():
                out.append({"label": f"best of run {i} ({path.name})",
                            "choice": {"kind": "mcts", "model": "run", "run": i, "sims": 200}})
        return out
