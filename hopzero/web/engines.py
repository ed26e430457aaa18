"""The engines a seat may be given, their named strength levels, and how the server builds them.

A client sends an :class:`EngineChoice` (a kind, a named level or a number, a run's index), never
a player SPEC or a path: a model is the preset's shipped model or the best model of a
``--run-dir`` named by its index, so no request can make the server open a file of its choosing,
and every number is checked against the server's :class:`~hopzero.web.limits.Limits`.

Kinds: ``model`` (hopzero's network for the preset, searched by MCTS), ``run`` (a run's best
network), ``alphabeta`` (the classical search; with three or more seats the race plan
``opponents=still``, stronger there than the paranoid search, docs/STRENGTH.md), ``rollout``
(MCTS valued by greedy playouts, no network), ``greedy`` and ``random``. With three or more
seats the searches watch the table (``opponent=auto``): a player whose last four moves were
greedy's is searched as greedy, so an engine plays the greedy engines beside it as they play and
everyone else as a sound opponent (docs/STRENGTH.md, "`star4`").

Levels (:func:`levels`): Beginner, Club, Strong and Max, each a number of simulations (the
searches) or a depth (alpha-beta); Max is chosen so that star6, the slowest board, gets its
reply well within two seconds of one core (docs/BENCHMARKS.md, "Rooms"). Alpha-beta's race plan
(three or more seats) stops at depth 3: depth 4 costs up to four seconds a move on star6, so its
Max is its Strong. A raw number may be given instead, up to the server's limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ccengine import Rules
from ccengine.players import PlayerSpecError
from ccengine.search import RolloutEvaluator, SearchConfig, tables_for
from learner.players import make_player

from .limits import ChoiceError, Limits
from .models import ModelLibrary
from .runs import RunDirs
from .thinking import Searcher, Thinker

__all__ = ["ANALYSIS_SIMS", "LEVELS", "LEVEL_NAMES", "RACE_PLAN_LEVELS", "Engine", "EngineChoice", "Engines", "Level",
           "levels"]

Kind = Literal["model", "run", "alphabeta", "rollout", "greedy", "random"]
Level = Literal["beginner", "club", "strong", "max"]
LEVEL_NAMES: tuple[str, ...] = ("beginner", "club", "strong", "max")

#: ``(unit, numbers at Beginner, Club, Strong, Max)`` of each kind that has levels (alpha-beta's
#: with two seats; :data:`RACE_PLAN_LEVELS` with more).
LEVELS: dict[str, tuple[str, tuple[int, int, int, int]]] = {
    "model": ("simulations", (8, 64, 256, 800)),
    "run": ("simulations", (8, 64, 256, 800)),
    "rollout": ("simulations", (100, 400, 1000, 2000)),
    "alphabeta": ("depth", (1, 2, 3, 4)),
}
#: Alpha-beta's levels with three or more seats (the race plan ``opponents=still``).
RACE_PLAN_LEVELS = ("depth", (1, 2, 3, 3))


def levels(kind: str, players: int) -> tuple[str, tuple[int, int, int, int]] | None:
    """``(unit, numbers at each level)`` of ``kind`` for games of ``players`` seats; None for a
    kind without levels (greedy, random)."""
    if kind == "alphabeta" and players > 2:  # the race plan: a plan of the mover's own moves needs others to wait
        return RACE_PLAN_LEVELS
    return LEVELS.get(kind)
#: Simulations of the evaluation the server stores for every position of a game (the win-chance
#: graph, the mistakes), by the kind of the game's analysis engine.
ANALYSIS_SIMS = {"model": 64, "run": 64, "rollout": 200}

_TITLES = {"model": "hopzero model", "run": "run's best model", "alphabeta": "Alpha-beta",
           "rollout": "MCTS with greedy playouts", "greedy": "Greedy", "random": "Random"}


class EngineChoice(BaseModel):
    """What a client may ask for: a kind, a named ``level`` or a raw ``number`` (simulations or
    depth; it wins over the level), and for ``run`` the index of a ``--run-dir``."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind = "greedy"
    level: Level = "club"
    number: int | None = Field(None, ge=1, le=1_000_000, description="simulations or depth instead of the level")
    run: int = Field(0, ge=0, le=1000, description="run: the index of a --run-dir")


@dataclass(frozen=True)
class Engine:
    """A checked choice: what plays, how strong, and how it is named."""

    kind: str
    number: int | None
    """Simulations (searches) or depth (alpha-beta); None for greedy and random."""
    level: str | None
    """The named level it came from; None for a raw number or a kind without levels."""
    run: int | None
    spec: str
    """The SPEC it stands for (a run shown as ``run:INDEX``): what game records keep."""
    label: str
    """What the page shows: ``hopzero model · Club (64 simulations)``."""

    def choice(self) -> dict[str, Any]:
        """The :class:`EngineChoice` that gives this engine again (JSON-ready)."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.level is not None:
            out["level"] = self.level
        elif self.number is not None:
            out["number"] = self.number
        if self.run is not None:
            out["run"] = self.run
        return out


def _spec(kind: str, number: int | None, run: int | None, players: int) -> str:
    watch = ",opponent=auto" if players > 2 else ""
    if kind in ("model", "run"):
        return f"mcts:model={'shipped' if kind == 'model' else f'run:{run}'},sims={number}{watch}"
    if kind == "rollout":
        return f"mcts-rollout:sims={number}{watch}"
    if kind == "alphabeta":
        # three or more players race: the race plan (opponents=still) plays them best (docs/BENCHMARKS.md)
        return f"alphabeta:depth={number}" + (",opponents=still" if players > 2 else "")
    return kind


class Engines:
    """The engines one server offers, within its limits, and how it builds them."""

    def __init__(self, runs: RunDirs, limits: Limits, library: ModelLibrary) -> None:
        self.runs = runs
        self.limits = limits
        self.library = library

    # -- what is offered --------------------------------------------------------------------------

    def has_model(self, rules: Rules) -> bool:
        """Whether a model ships for the preset (looked up each time: one added later is found)."""
        from learner.model_files import ModelNotFoundError, shipped_model_path

        try:
            shipped_model_path(rules)
            return True
        except ModelNotFoundError:
            return False

    def _runs_for(self, rules: Rules) -> list[int]:
        return [i for i, path in enumerate(self.runs.paths)
                if self.runs.preset(i) in (None, rules.name) and (path / "best.json").is_file()]

    def catalogue(self, rules: Rules) -> list[dict[str, Any]]:
        """The kinds offered for ``rules`` with their levels, strongest first, as the page lists
        them: ``choice`` (the base choice), ``label``, ``unit``, ``levels`` (level, label,
        number, within the limits), ``max_number``."""
        kinds: list[tuple[str, int | None]] = []
        if self.has_model(rules):
            kinds.append(("model", None))
        kinds += [("run", i) for i in self._runs_for(rules)]
        kinds += [("alphabeta", None), ("rollout", None), ("greedy", None), ("random", None)]
        out = []
        for kind, run in kinds:
            entry: dict[str, Any] = {"choice": {"kind": kind, **({"run": run} if run is not None else {})},
                                     "label": self._title(kind, run, rules)}
            found = levels(kind, rules.players)
            if found is not None:
                unit, numbers = found
                cap = self._cap(kind)
                entry["unit"] = unit
                entry["max_number"] = cap
                offered: list[dict[str, Any]] = []
                for name, n in zip(LEVEL_NAMES, numbers):
                    if not offered or min(n, cap) > offered[-1]["number"]:  # a level as strong as the one before is left out
                        offered.append({"level": name, "label": name.capitalize(), "number": min(n, cap)})
                entry["levels"] = offered
            out.append(entry)
        return out

    def _title(self, kind: str, run: int | None, rules: Rules) -> str:
        if kind == "model":
            return f"hopzero {rules.name} model"
        if kind == "run" and run is not None:
            return f"best of run {run} ({self.runs.paths[run].name})"
        if kind == "alphabeta" and rules.players > 2:  # the race plan, as engine_spec builds it
            return "Alpha-beta (race plan)"
        return _TITLES[kind]

    def _cap(self, kind: str) -> int:
        return self.limits.max_depth if kind == "alphabeta" else self.limits.max_simulations

    # -- checking a choice ------------------------------------------------------------------------

    def resolve(self, choice: EngineChoice, rules: Rules) -> Engine:
        """The engine of ``choice`` for ``rules``; :class:`ChoiceError` when the server does not
        offer it (no model for the preset, a run of another preset, a number beyond the limits)."""
        kind = choice.kind
        run = choice.run if kind == "run" else None
        if kind == "model" and not self.has_model(rules):
            raise ChoiceError(f"no hopzero model ships for {rules.name}: choose alpha-beta, MCTS with greedy "
                              "playouts, greedy or random")
        if kind == "run":
            self.runs.get(choice.run)
            if choice.run not in self._runs_for(rules):
                raise ChoiceError(f"run {choice.run} has no best model for {rules.name} "
                                  f"(it trains {self.runs.preset(choice.run)!r}, or has promoted none yet)")
        number: int | None = None
        level: str | None = None
        found = levels(kind, rules.players)
        if found is not None:
            unit, numbers = found
            if choice.number is not None:
                number = choice.number
                if number > self._cap(kind):
                    raise ChoiceError(f"{unit}={number}: this server allows at most {self._cap(kind)}")
            else:
                level = choice.level
                number = min(numbers[LEVEL_NAMES.index(level)], self._cap(kind))
            strength = f"{level.capitalize()} ({number} {unit})" if level else f"{number} {unit}"
            label = f"{self._title(kind, run, rules)} · {strength}"
        else:
            label = self._title(kind, run, rules)
        return Engine(kind=kind, number=number, level=level, run=run,
                      spec=_spec(kind, number, run, rules.players), label=label)

    def analyst(self, rules: Rules) -> Engine:
        """The engine that analyses games of ``rules``: the shipped model where there is one, else
        MCTS with greedy playouts (at the stored evaluations' simulations)."""
        kind = "model" if self.has_model(rules) else "rollout"
        return self.resolve(EngineChoice(kind=kind, number=min(ANALYSIS_SIMS[kind], self.limits.max_simulations)),
                            rules)

    # -- building ---------------------------------------------------------------------------------

    async def thinker(self, engine: Engine, rules: Rules, seed: int) -> Thinker:
        """What thinks for ``engine`` (a model is loaded off the event loop the first time)."""
        if engine.kind in ("model", "run"):
            source = "shipped" if engine.kind == "model" else str(self.runs.get(engine.run or 0))
            label = self._title(engine.kind, engine.run, rules)
            shared = await self.library.evaluator(rules, source, label)
            c_puct = shared.c_puct if shared.c_puct is not None else SearchConfig().c_puct
            return Searcher(rules, shared, engine.number or 1, c_puct, shared.history, seed)
        if engine.kind == "rollout":
            evaluator = RolloutEvaluator(tables_for(rules), policy="greedy", seed=seed)
            return Searcher(rules, evaluator, engine.number or 1, SearchConfig().c_puct, 1, seed)
        try:
            return make_player(engine.spec, rules, seed)
        except (PlayerSpecError, ValueError) as exc:
            raise ChoiceError(f"{engine.spec}: {exc}") from None
