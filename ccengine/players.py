"""Players that need no network, and the registry that builds any player from a SPEC string.

A *player* chooses a move for the side to move of a state (either engine). The baseline players
follow RULES.md "Forward distance and the greedy players" (seed section 3.2):

- ``random``: uniform over the legal moves.
- ``greedy``: a move of largest forward distance ``psi``; ties go to the least advanced start
  cell ("the last checker"), then uniform.
- ``greedy-stochastic``: ``psi > 0`` moves with probability proportional to ``psi``; with none,
  uniform over all moves.

A SPEC is ``name`` or ``name:key=value,key=value`` (e.g. ``mcts:model=best.pt,sims=200``). Each
kind of player is a :class:`PlayerKind` (how to build it, which options it takes) defined beside
the player; ``learner.players`` lists every kind in one :class:`PlayerRegistry`, the one place a
SPEC is read. A SPEC is parsed once into a :class:`PlayerSpec`, which builds its player.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from .notation import excerpt
from .rules import PASS, Rules

__all__ = [
    "GREEDY",
    "GREEDY_STOCHASTIC",
    "RANDOM",
    "GreedyPlayer",
    "Player",
    "PlayerKind",
    "PlayerRegistry",
    "PlayerSpec",
    "PlayerSpecError",
    "RandomPlayer",
    "SeedLike",
    "StochasticGreedyPlayer",
    "greedy_candidates",
]

Move = tuple[int, int]
#: Anything ``numpy.random.default_rng`` accepts as a seed.
SeedLike = Union[int, np.random.SeedSequence, None]


class PlayerSpecError(ValueError):
    """A SPEC string naming an unknown player, an unknown option or a bad option value."""


@runtime_checkable
class Player(Protocol):
    """What the arena and the command line need from a player."""

    name: str
    """The SPEC that built it (shown in match results)."""

    def select(self, state: Any) -> Move:
        """A legal move for the side to move of ``state`` (not terminal); must not change ``state``."""
        ...

    def reset(self, seed: SeedLike = None) -> None:
        """Start a new game; with a seed, restart the player's random stream from it.

        The arena reseeds every player for every game, so that a game's moves depend only on its
        own seed and not on which games the same process played before (workers=N equals 1).
        """
        ...


# ---------------------------------------------------------------------------------------------
# Baseline players
# ---------------------------------------------------------------------------------------------


class _SeededPlayer:
    """Common part of the baseline players: a name, the rules and a numpy Generator."""

    name: str = "player"

    def __init__(self, rules: Rules, seed: SeedLike = None) -> None:
        self.rules = rules
        # advance[p][i]: how far a piece of p on i is ahead of its home; psi and "least advanced"
        # are differences of it on any board.
        self._advance = rules.geometry.advances
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: SeedLike = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def policy(self, state: Any) -> list[tuple[Move, float]]:
        """The probability with which this player picks each move it may pick in ``state``."""
        raise NotImplementedError

    def analyze(self, state: Any) -> tuple[float, list[tuple[Move, float]]]:
        """``(value, policy)`` for the engine protocol: these players judge no positions (value 0)."""
        return 0.0, self.policy(state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.rules.name})"


class RandomPlayer(_SeededPlayer):
    """Uniform over the legal moves."""

    name = "random"

    def select(self, state: Any) -> Move:
        moves = state.legal_moves()
        return moves[int(self.rng.integers(len(moves)))]

    def policy(self, state: Any) -> list[tuple[Move, float]]:
        moves = state.legal_moves()
        return [(m, 1.0 / len(moves)) for m in moves]


def greedy_candidates(rules: Rules, player: int, moves: Sequence[Move]) -> list[Move]:
    """The moves the deterministic greedy player chooses among (uniformly), in ``moves`` order.

    Largest ``psi``; among those, the moves whose start cell is least advanced (on the rhombus,
    player 0: largest ``r - c``, player 1: smallest). When every move goes backward, the largest
    ``psi`` is the one of least ``|psi|``, as RULES.md asks.
    """
    if len(moves) == 1:
        return list(moves)  # also the pass, which has no psi
    advance = rules.geometry.advances[player]
    # psi = advance[e] - advance[s]; the least advanced start has the smallest advance[s].
    best: list[Move] = []
    best_key = (-(10**9), -(10**9))
    for s, e in moves:
        key = (advance[e] - advance[s], -advance[s])
        if key > best_key:
            best_key, best = key, [(s, e)]
        elif key == best_key:
            best.append((s, e))
    return best


class GreedyPlayer(_SeededPlayer):
    """Deterministic greedy (seed 3.2): largest psi, then the last checker, then uniform."""

    name = "greedy"

    def select(self, state: Any) -> Move:
        candidates = greedy_candidates(self.rules, state.to_move, state.legal_moves())
        if len(candidates) == 1:
            return candidates[0]
        return candidates[int(self.rng.integers(len(candidates)))]

    def policy(self, state: Any) -> list[tuple[Move, float]]:
        candidates = greedy_candidates(self.rules, state.to_move, state.legal_moves())
        return [(m, 1.0 / len(candidates)) for m in candidates]


class StochasticGreedyPlayer(_SeededPlayer):
    """Stochastic greedy (seed 3.2): psi > 0 moves with probability proportional to psi."""

    name = "greedy-stochastic"

    def select(self, state: Any) -> Move:
        moves = state.legal_moves()
        if len(moves) == 1:
            return moves[0]
        advance = self._advance[state.to_move]
        forward: list[Move] = []
        cumulative: list[int] = []  # running sum of psi over `forward`
        total = 0
        for s, e in moves:
            psi = advance[e] - advance[s]
            if psi > 0:
                total += psi
                forward.append((s, e))
                cumulative.append(total)
        if not forward:
            return moves[int(self.rng.integers(len(moves)))]
        # Integer draw in [0, total): exact proportions, no float rounding of the weights.
        u = int(self.rng.integers(total))
        return forward[bisect.bisect_right(cumulative, u)]

    def policy(self, state: Any) -> list[tuple[Move, float]]:
        moves = state.legal_moves()
        advance = self._advance[state.to_move]
        psi = [advance[e] - advance[s] if (s, e) != PASS else 0 for s, e in moves]
        total = sum(p for p in psi if p > 0)
        if not total:
            return [(m, 1.0 / len(moves)) for m in moves]
        return [(m, p / total) for m, p in zip(moves, psi) if p > 0]


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------

#: ``factory(rules, seed, **options) -> Player``.
PlayerFactory = Callable[..., Player]


@dataclass(frozen=True)
class PlayerKind:
    """A registered player: how to build it and which ``key=value`` options it takes."""

    name: str
    factory: PlayerFactory
    options: Mapping[str, Callable[[str], object]] = field(default_factory=dict)
    """Option name -> parser of its text value (``int``, ``float``, ``str``, or any callable)."""
    required: frozenset[str] = frozenset()
    description: str = ""

    def __post_init__(self) -> None:
        if not self.name or any(ch in self.name for ch in ":,= "):
            raise ValueError(f"player name {self.name!r} must be non-empty without ':', ',', '=' or spaces")
        missing = sorted(set(self.required) - set(self.options))
        if missing:
            raise ValueError(f"required option(s) {missing} of player {self.name!r} are not among its options")

    def usage(self) -> str:
        """``name`` or ``name:opt=...,opt=...`` (required options first)."""
        if not self.options:
            return self.name
        ordered = sorted(self.options, key=lambda o: (o not in self.required, o))
        return f"{self.name}:" + ",".join(f"{o}=..." for o in ordered)

    def parse(self, spec: str) -> PlayerSpec:
        """This kind's SPEC ``spec`` with its options parsed and checked (:func:`parse_spec` finds
        the kind by the SPEC's name)."""
        name, _, rest = spec.strip().partition(":")
        options: dict[str, object] = {}
        valid = ", ".join(sorted(self.options)) or "none"
        for item in filter(None, (part.strip() for part in rest.split(","))):
            key, eq, text = item.partition("=")
            key = key.strip()
            if not eq:
                raise PlayerSpecError(f"player option {excerpt(item)} must be key=value; {name} options: {valid}")
            if key not in self.options:
                raise PlayerSpecError(f"unknown option {excerpt(key)} for player {name!r}; valid: {valid}")
            if key in options:
                raise PlayerSpecError(f"option {key!r} given twice in {excerpt(spec)}")
            parser = self.options[key]
            try:
                options[key] = parser(text.strip())
            except (TypeError, ValueError) as exc:
                hint = getattr(parser, "__name__", "a valid value")
                raise PlayerSpecError(f"option {key}={excerpt(text)} of player {name!r} is not {hint}: {exc}") from None
        missing = sorted(self.required - set(options))
        if missing:
            raise PlayerSpecError(f"player {name!r} needs option(s) {', '.join(missing)}: {self.usage()}")
        return PlayerSpec(self, options, spec.strip())


@dataclass(frozen=True)
class PlayerSpec:
    """A SPEC parsed once: its kind, its options, and its text (the player's name in results)."""

    kind: PlayerKind
    options: Mapping[str, object]
    text: str

    def build(self, rules: Rules, seed: SeedLike = None) -> Player:
        """The player this SPEC names, for games of ``rules``, its random stream from ``seed``."""
        try:
            player = self.kind.factory(rules, seed, **self.options)
        except (ValueError, FileNotFoundError) as exc:  # a model file that is missing or unfit
            raise PlayerSpecError(f"player {excerpt(self.text)}: {exc}") from None
        # The name is the SPEC so that results say exactly what played (options included).
        try:
            player.name = self.text
        except AttributeError:
            pass  # a plug-in with a read-only name keeps its own
        return player


class PlayerRegistry:
    """The players a SPEC can name (``learner.players.PLAYERS`` lists every kind in one place)."""

    def __init__(self, kinds: Sequence[PlayerKind]) -> None:
        names = [kind.name for kind in kinds]
        if len(set(names)) != len(names):
            raise ValueError(f"player names repeat: {names}")
        self.kinds: dict[str, PlayerKind] = {kind.name: kind for kind in kinds}

    def usage(self) -> str:
        """Every kind with its options, for error texts."""
        return ", ".join(kind.usage() for kind in self.kinds.values())

    def parse(self, spec: str) -> PlayerSpec:
        """Split and validate a SPEC (nothing is built): :class:`PlayerSpecError` names the problem."""
        if not isinstance(spec, str):
            raise PlayerSpecError(f"a player SPEC is a string, not {type(spec).__name__}")
        name = spec.strip().partition(":")[0]
        kind = self.kinds.get(name)
        if kind is None:
            raise PlayerSpecError(f"unknown player {excerpt(name)} in {excerpt(spec)}; valid: {self.usage()}")
        return kind.parse(spec)

    def make(self, spec: str, rules: Rules, seed: SeedLike = None) -> Player:
        """Build the player a SPEC names, for games of ``rules``, its random stream from ``seed``."""
        return self.parse(spec).build(rules, seed)


RANDOM = PlayerKind("random", RandomPlayer, description="uniform over the legal moves")
GREEDY = PlayerKind("greedy", GreedyPlayer, description="largest forward distance, ties to the last checker")
GREEDY_STOCHASTIC = PlayerKind(
    "greedy-stochastic", StochasticGreedyPlayer, description="forward moves with probability proportional to psi"
)
