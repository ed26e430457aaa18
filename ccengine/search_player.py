"""Players that think: the batched tree search behind the ``Player`` interface.

:class:`SearchPlayer` plays any :class:`ccengine.search.Evaluator`; the network player
(``mcts:model=...``) is one, registered by ``learner.network_player``. Registered here:

- ``mcts-rollout:sims=S,rollout=POLICY``: classic MCTS whose leaves are valued by playouts in C
  (``greedy`` by default; ``random``, ``greedy-stochastic``, ``greedy-eps``, ``softmax``), no network.

In a match these players play their strongest: no root noise, no random or exploratory plies,
the most visited move.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .encoding import PieceTracker
from .notation import parse_int, parse_positive_float
from .players import PlayerKind, SeedLike
from .rules import PASS, Rules
from .search import PLAY_FINISH, BatchedSearch, Evaluator, RolloutEvaluator, SearchConfig, SearchResult

__all__ = ["MCTS_ROLLOUT", "OPPONENTS", "SearchPlayer", "flag", "game_piece_history", "opponent_option", "positive",
           "share"]

Move = tuple[int, int]


def game_piece_history(rules: Rules, state: Any, depth: int) -> np.ndarray:
    """Piece lists ``[depth, P, k]`` of ``state`` and the states before it, IDs tracked from the
    earliest state the game object remembers (its undo history), as in a training record."""
    boards = [tuple(state.board)]
    past = state.copy()
    sides = [state.to_move]
    while True:
        try:
            past.undo()
        except ValueError:
            break
        boards.append(tuple(past.board))
        sides.append(past.to_move)
    boards.reverse()
    sides.reverse()
    tracker = PieceTracker(rules, boards[0], sides[0])
    for before, after in zip(boards, boards[1:]):
        tracker.play(_move_between(before, after))
    return tracker.piece_lists(depth).astype(np.int8)


def _position_key(state: Any) -> tuple[Any, ...]:
    """What tells one position of a game from another: board, side to move and ply."""
    return tuple(state.board), state.to_move, state.ply


def _move_between(before: tuple[int, ...], after: tuple[int, ...]) -> Move:
    """The move that turned board ``before`` into ``after`` (a pass when they are equal)."""
    start = [i for i, (a, b) in enumerate(zip(before, after)) if a != -1 and b == -1]
    end = [i for i, (a, b) in enumerate(zip(before, after)) if a == -1 and b != -1]
    if not start:
        return PASS
    return start[0], end[0]


class SearchPlayer:
    """A tree-search player over any evaluator; ``analyze`` and ``select`` share one search.

    It plays with ``config`` (:meth:`SearchConfig.for_evaluation`: no noise, the most visited
    move, a fresh tree every move) and hands the evaluator ``history`` piece-list states per
    leaf. A match (``evaluator.arena``) searches the waiting games of a :attr:`batchable` player
    together, one evaluator call per simulation round; the moves are the ones :meth:`select`
    would choose (given an evaluator whose output for a row depends on that row only).
    """

    judges_positions = True

    def __init__(
        self,
        rules: Rules,
        seed: SeedLike,
        evaluator: Evaluator | Callable[[int], Evaluator],
        *,
        simulations: int,
        c_puct: float | None = None,
        history: int = 1,
        solver: bool = False,
        opponent: str = "any",
        reuse: bool = False,
        finish: float = PLAY_FINISH,
        name: str = "mcts",
    ) -> None:
        """``evaluator``: an evaluator, or a factory ``seed -> evaluator`` for random ones
        (rollouts), rebuilt from the player's seed at every ``reset(seed)``. ``opponent``: how the
        tree models the other players (:data:`OPPONENTS`); ``model`` needs an evaluator with an
        opponent model (``SearchConfig.model_opponent``). ``reuse``:
        keep the searched subtree of the moves played since this player's last search (the
        SPEC option ``reuse=1``), so each move's ``simulations`` add to what it already knew.
        ``finish``: the share from which it plays out a won race (``SearchConfig.finish``, the
        SPEC option ``finish=F``; 0 turns it off). ``c_puct``: the exploration constant,
        ``SearchConfig``'s default when None."""
        if history < 1:
            raise ValueError(f"history={history} must be at least 1")
        self.rules = rules
        self.name = name
        self._factory = None if hasattr(evaluator, "evaluate") else evaluator
        self.simulations = simulations
        self.history = history
        modelled = OPPONENTS[opponent_option(opponent)]
        settings = dict(num_simulations=simulations, solver=solver, finish=finish,
                        **({} if modelled is None else {modelled: True}),
                        **({} if c_puct is None else {"c_puct": c_puct}))
        self.config = SearchConfig(**settings).for_evaluation().replace(reuse_tree=reuse)
        self._search = self.new_batch(1)
        self.evaluator: Evaluator = evaluator  # type: ignore[assignment]
        #: Counters over the player's life, its own searches and a match's batches alike (for
        #: throughput figures): leaves evaluated (evaluator rows), evaluator calls, moves searched.
        self.positions = 0
        self.batches = 0
        self.searches = 0
        self.reset(seed)

    @property
    def batchable(self) -> bool:
        """Whether one evaluator serves every game (not one rebuilt from each game's seed), so
        that a match may search this player's games together."""
        return self._factory is None

    def count(self, *, batches: int, positions: int, searches: int) -> None:
        """Add to the counters."""
        self.batches += batches
        self.positions += positions
        self.searches += searches

    def new_batch(self, games: int) -> BatchedSearch:
        """A search of this player's settings over ``games`` trees: a match searches the games
        waiting on this player together with it (:meth:`search_batch`)."""
        return BatchedSearch(self.rules, games, self.config, history=self.history)

    def search_batch(self, search: BatchedSearch, slots: list[int]) -> list[SearchResult | None]:
        """Search the trees ``slots`` of ``search`` (roots set by the caller) with this player's
        evaluator, all together; the results by slot, counted in this player's counters."""
        rounds, leaves = search.rounds, search.leaves
        results = search.search(self.evaluator, slots)
        self.count(batches=search.rounds - rounds, positions=search.leaves - leaves, searches=len(slots))
        return results

    def reset(self, seed: SeedLike = None) -> None:
        """A new game; with a seed, the player's random streams restart from it."""
        if seed is not None or not hasattr(self, "rng"):
            self.rng = np.random.default_rng(seed)
            if self._factory is not None:
                self.evaluator = self._factory(int(self.rng.integers(2**63)))
        self._last = None
        self._root: tuple[Any, ...] | None = None  # the tree's root (position key), kept for reuse

    def think(
        self,
        state: Any,
        *,
        nodes: int | None = None,
        movetime_ms: int | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> SearchResult:
        """Search ``state`` (cached: thinking twice about one position searches once).

        ``stop``: asked between chunks of simulations; True ends the search early (a search cut
        short is not cached).
        """
        key = (tuple(state.board), state.to_move, state.ply, nodes, movetime_ms)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        game_rng = np.random.default_rng(int(self.rng.integers(2**63)))
        if not self._follow(state):
            history = game_piece_history(self.rules, state, self.history)
            self._search.set_root(0, state, history, rng=game_rng)
        self._root = _position_key(state)
        seconds = None if movetime_ms is None else movetime_ms / 1000.0
        rounds, leaves = self._search.rounds, self._search.leaves
        stopped = False

        def asked() -> bool:
            nonlocal stopped
            stopped = stopped or bool(stop is not None and stop())
            return stopped

        result = self._search.think(
            0, self.evaluator, nodes or self.simulations, seconds=seconds, stop=None if stop is None else asked
        )
        self.count(batches=self._search.rounds - rounds, positions=self._search.leaves - leaves, searches=1)
        self._last = None if stopped else (key, result)
        return result

    def _follow(self, state: Any) -> bool:
        """With ``reuse``: move the tree's root on to ``state`` when ``state`` follows the last
        searched position by at most one round of moves (the game's undo history says which);
        True when the tree now stands at ``state``."""
        if not self.config.reuse_tree or self._root is None:
            return False
        path: list[Move] = []
        past = state.copy()
        for _ in range(self.rules.players):
            before = tuple(past.board)
            try:
                past.undo()
            except ValueError:
                return False
            path.append(_move_between(tuple(past.board), before))
            if _position_key(past) == self._root:
                for move in reversed(path):
                    self._search.play(0, move)
                return True
        return False

    def select(self, state: Any) -> Move:
        """The most visited move after ``sims`` simulations."""
        return self.think(state).move

    def select_with_limits(
        self,
        state: Any,
        *,
        nodes: int | None = None,
        movetime_ms: int | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Move:
        """The engine protocol's ``go nodes`` / ``go movetime``, ended early by ``stop``."""
        return self.think(state, nodes=nodes, movetime_ms=movetime_ms, stop=stop).move

    def analyze(self, state: Any) -> tuple[float, list[tuple[Move, float]]]:
        """Root value (side to move's view) and the visit share of each searched move."""
        result = self.think(state)
        total = max(int(result.visits.sum()), 1)
        shares = [
            ((int(m[0]), int(m[1])) if m[0] >= 0 else PASS, float(v) / total)
            for m, v in zip(result.moves, result.visits)
        ]
        value = 0.0 if np.isnan(result.root_value) else float(result.root_value)
        return value, shares


# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------


def _rollout_player(
    rules: Rules,
    seed: SeedLike,
    *,
    sims: int = 1000,
    rollout: str = "greedy",
    rollouts: int = 1,
    eps: float = 0.1,
    temp: float = 1.0,
    decisive: bool = False,
    c: float | None = None,
    solver: bool = False,
    opponent: str = "any",
    reuse: bool = False,
    finish: float = PLAY_FINISH,
) -> SearchPlayer:
    """``rollout``: the playout policy of both sides (greedy, random, greedy-stochastic,
    greedy-eps with ``eps``, softmax over forward distance with ``temp``). ``solver``: back up
    proven wins and losses (MCTS-Solver). ``reuse``: keep the tree from move to move.
    ``finish``: ``SearchConfig.finish``."""
    from ._core import tables_for

    tables = tables_for(rules)
    options = dict(policy=rollout, rollouts=rollouts, epsilon=eps, temperature=temp, decisive=decisive)
    RolloutEvaluator(tables, **options)  # a bad option fails now, with the evaluator's message
    return SearchPlayer(
        rules, seed, lambda s: RolloutEvaluator(tables, seed=s, **options), simulations=sims, c_puct=c,
        solver=solver, opponent=_rollout_opponent(opponent), reuse=reuse, finish=finish,
    )


def _rollout_opponent(opponent: str) -> str:
    if opponent not in ("any", "greedy", "auto"):
        raise ValueError(f"opponent={opponent!r}; valid: any (a sound opponent), greedy (model it), "
                         f"auto (model the players seen playing greedy)"
                         + (f" ({opponent}: only a network player, mcts:model=...)"
                            if opponent in ("model", "policy") else ""))
    return opponent


#: The ``opponent=`` choices of a search player, each with the ``SearchConfig`` flag it sets: a
#: sound opponent (none), greedy's rule, the network's opponent head, the network's own policy,
#: greedy's rule for the players whose recent moves were greedy's.
OPPONENTS: dict[str, str | None] = {
    "any": None,
    "greedy": "greedy_opponent",
    "model": "model_opponent",
    "policy": "policy_opponent",
    "auto": "auto_opponent",
}


def opponent_option(text: str) -> str:
    """The parser of a network player's ``opponent=`` SPEC option."""
    if text not in OPPONENTS:
        raise ValueError(f"unknown opponent model {text!r}")
    return text


opponent_option.__name__ = f"an opponent model ({', '.join(OPPONENTS)})"


#: The largest number a SPEC option takes: far beyond any useful search, small enough that no
#: buffer sized from it can exhaust memory.
SPEC_NUMBER_MAX = 10_000_000


def positive(kind: type) -> Any:
    """The parser of a positive ``int`` or ``float`` SPEC option: ASCII digits only, bounded
    (the engine protocol's strict number reading, ``ccengine.notation``)."""

    def parse(text: str) -> Any:
        if kind is int:
            return parse_int(text, "", minimum=1, maximum=SPEC_NUMBER_MAX)
        return parse_positive_float(text, "", maximum=SPEC_NUMBER_MAX)

    parse.__name__ = f"a positive {kind.__name__} (at most {SPEC_NUMBER_MAX:,})"
    return parse


def flag(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not a flag (1/0, true/false)")


flag.__name__ = "a flag (1/0)"


def share(text: str) -> float:
    """The parser of a share SPEC option (``finish=F``): a number from 0 to 1."""
    return 0.0 if text in ("0", "0.0") else float(parse_positive_float(text, "", maximum=1.0))


share.__name__ = "a share from 0 to 1"


#: The SPEC ``mcts-rollout:sims=S,...`` (listed in ``learner.players``).
MCTS_ROLLOUT = PlayerKind(
    "mcts-rollout",
    _rollout_player,
    options={
        "sims": positive(int),
        "rollout": str,
        "rollouts": positive(int),
        "eps": float,
        "temp": positive(float),
        "decisive": flag,
        "c": positive(float),
        "solver": flag,
        "opponent": str,
        "reuse": flag,
        "finish": share,
    },
    description="tree search valued by playouts (greedy or random), no network",
)
