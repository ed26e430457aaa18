"""Batched Monte Carlo tree search: the configuration, the evaluator protocol and the driver.

The tree lives in C (:class:`ccengine._search.SearchForest`, one flat-array tree per game); this
module drives G games in lock-step. Each round is one ``select`` over all games, one evaluator
call on the whole batch of leaves, one ``expand_and_backup``:

    search = BatchedSearch(rules, num_games=64, config=SearchConfig(), history=3)
    for g, state in enumerate(states):
        search.set_root(g, state)
    results = search.search(evaluator)          # one SearchResult per active game
    for g, result in enumerate(results):
        search.play(g, result.move)             # keeps the subtree when config.reuse_tree

The search knows nothing about networks: an :class:`Evaluator` gets piece lists and legal-move
policy indices and returns priors and values. :class:`UniformEvaluator` (no knowledge) and
:class:`RolloutEvaluator` (playouts in C) need no network.

Value convention: every value (evaluator output, ``SearchResult.root_value``, ``q``) is from the
view of the player to move in the position it belongs to; game results are +1 win, 0 draw,
-1 loss.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ._core import RulesTables, State, tables_for
from ._playout import RolloutEvaluator
from ._search import MAX_HISTORY, PASS_ACTION, STATE_BYTES, SearchForest, canonical_pieces
from .finish import steps_to_finish
from plumbing.fields import FieldError, build_config, check_fields, checked
from .rules import PASS, Rules

__all__ = [
    "MAX_HISTORY",
    "PASS_ACTION",
    "STATE_BYTES",
    "FINISH_MARGIN",
    "PLAY_FINISH",
    "BatchedSearch",
    "Evaluator",
    "RolloutEvaluator",
    "SearchConfig",
    "SearchForest",
    "SearchResult",
    "UniformEvaluator",
    "canonical_pieces",
    "choose_move",
    "finish_candidates",
    "pruned_visits",
    "run_search",
]

Move = tuple[int, int]


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SearchConfig:
    """Every knob of the tree search, with the seed paper's value (Table 1 / its code) beside ours.

    Build variants with :meth:`replace`; the evaluation-play config is :meth:`for_evaluation`.
    """

    num_simulations: int = checked(175, ge=1)
    """New simulations per move (paper: 175). With tree reuse, on top of the kept subtree."""
    c_puct: float = checked(3.5, ge=0)
    """Exploration constant c in ``U = c P sqrt(N_parent) / (1 + N)`` (paper: 3.5)."""
    parent_visits: str = checked("node", choices=("node", "children_sum"))
    """``node``: N_parent is the node's own visit count, so at a fresh node the first pick
    follows the prior (AlphaZero). ``children_sum``: the sum of the children's visits, as the
    paper's code: at a fresh node every U is 0 and the first child is picked at random."""
    fpu: str = checked("parent", choices=("parent", "value"))
    """Q of an unvisited child ("first-play value"). ``parent``: the node's own mean value
    (from its mover's view) minus ``fpu_reduction``: a new move is presumed as good as the
    position, so one strong move is not abandoned for every untried one, and an untried move in
    a lost position is not preferred to a proven one. ``value``: the constant ``fpu_value``
    (paper's code: 0)."""
    fpu_value: float = checked(0.0, ge=-1, le=1)
    """Q of unvisited children when ``fpu == "value"`` (paper's code: 0)."""
    fpu_reduction: float = checked(0.0, ge=0)
    """Subtracted from the parent's value when ``fpu == "parent"`` (paper: n/a)."""
    leaves_per_game: int = checked(1, ge=1)
    """Leaves one select round takes per game, kept apart by virtual loss (paper: 1)."""
    virtual_loss: float = checked(1.0, ge=0)
    """Each simulation in flight counts as a visit of value ``-virtual_loss`` (paper: n/a)."""
    root_noise: bool = checked(True)
    """Mix Dirichlet noise into the root priors (paper: yes in self-play; off in evaluation)."""
    dirichlet_alpha: float = checked(0.03, gt=0)
    """Dirichlet concentration (paper: 0.03)."""
    dirichlet_weight: float = checked(0.25, ge=0, le=1)
    """Noise weight: ``P <- (1 - w) P + w Dir(alpha)`` (paper: 0.25)."""
    random_opening_plies: int = checked(6, ge=0)
    """Plies from the game start played uniformly at random, without search (paper: 3 per
    player)."""
    explore_plies: int = checked(10, ge=0)
    """Plies after the random opening decided with ``explore_temperature`` (paper: 5 per player)."""
    explore_temperature: float = checked(2.0, ge=0)
    """Temperature of exploratory play (paper: 2)."""
    temperature: float = checked(0.01, ge=0)
    """Temperature afterwards; 0 means the most visited move (paper: 1e-2)."""
    reuse_tree: bool = checked(True)
    """Keep the played child's subtree for the next search (paper text: discard; paper code:
    keeps it)."""
    solver: bool = checked(False)
    """MCTS-Solver: back up proven wins and losses; the decision plays a proven win and never a
    proven loss while another move is left (paper: no)."""
    greedy_opponent: bool = checked(False)
    """Opponent modelling: in the tree the opponent plays as the greedy player does, so the
    search finds a best response to greedy, not to a perfect opponent (paper: no)."""
    model_opponent: bool = checked(False)
    """Opponent modelling by a learned model (Knegt et al. 2018; SPEC ``opponent=model``): in
    the tree the opponent plays the reply the evaluator's opponent model rates most likely (a
    network with the opponent head, ``network.opponent_head``). Paper: no."""
    policy_opponent: bool = checked(False)
    """Opponent modelling by the network's own policy (SPEC ``opponent=policy``): in the tree each
    other player plays its move of largest prior, so the simulations go to the root mover's own
    moves instead of spreading over every player's replies. With three or four players it is
    stronger at 64 simulations and not at 800 (docs/STRENGTH.md, "`star4`"). Paper: no."""
    auto_opponent: bool = checked(False)
    """Opponent modelling by observation (SPEC ``opponent=auto``): in the tree, each other player
    whose last four moves in the game were moves greedy could have chosen plays greedy's rule;
    the rest are searched as sound opponents. A best response to the `greedy` players at the
    table that still plays people and networks as ``any`` does. Paper: no."""
    finish: float = checked(0.0, ge=0, le=1)
    """Finishing a won game: when the root mover's expected share is at least ``finish`` (0:
    off, as in self-play; a ``SearchPlayer`` plays with ``PLAY_FINISH``) and at most
    ``FINISH_STEPS`` steps are left to fill its goal, the move is the one that leaves the fewest
    steps (``ccengine.finish``) among the searched moves whose value is within ``FINISH_MARGIN``
    of the best, ties by visits; when none of them lowers the steps, among the
    moves never searched too (``BatchedSearch._finishing``). A value sure of the win everywhere
    prefers nothing, and the search may shuffle a piece until a repetition draws a won race
    (docs/STRENGTH.md, "Won endgames"); this is Leela Chess Zero's moves-left preference with the
    steps to the goal as the moves left. Paper: no."""
    forced_playouts: float = checked(0.0, ge=0)
    """KataGo's forced playouts with policy target pruning (Wu 2019, "Accelerating Self-Play
    Learning in Go", its "Forced Playouts and Policy Target Pruning"), self-play only: k of
    ``n_forced = sqrt(k * P * N_children)``, the visits a root child that has been visited gets
    at least (P: its prior, noise included).
    The training target (:attr:`SearchResult.target`) then has those playouts taken out again
    (:func:`pruned_visits`). 0: off (paper: no; KataGo: 2)."""

    def __post_init__(self) -> None:
        check_fields(self)
        if self.solver and self.greedy_opponent:
            raise FieldError("greedy_opponent", "cannot be combined with solver")
        if self.solver and self.model_opponent:
            raise FieldError("model_opponent", "cannot be combined with solver")
        if self.greedy_opponent and self.model_opponent:
            raise FieldError("model_opponent", "cannot be combined with greedy_opponent")
        if self.policy_opponent and (self.solver or self.greedy_opponent or self.model_opponent):
            raise FieldError("policy_opponent", "cannot be combined with solver, greedy_opponent or model_opponent")
        if self.auto_opponent and (self.solver or self.greedy_opponent or self.model_opponent
                                   or self.policy_opponent):
            raise FieldError("auto_opponent", "cannot be combined with solver, greedy_opponent, model_opponent "
                             "or policy_opponent")

    def replace(self, **changes: Any) -> SearchConfig:
        """A copy with some fields changed; unknown names are an error."""
        return build_config(SearchConfig, changes, base=self)  # type: ignore[no-any-return]

    def for_evaluation(self) -> SearchConfig:
        """Match play, the one configuration every player that searches uses in a match, behind
        the engine protocol and in the evaluator's gate: no root noise, no random or exploratory
        plies (the arena applies its own opening protocol), the most visited move (temperature
        0, ties broken by the game's generator), a fresh tree at every move and no forced
        playouts."""
        return self.replace(
            root_noise=False, random_opening_plies=0, explore_plies=0, temperature=0.0, reuse_tree=False,
            forced_playouts=0.0,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        return build_config(cls, data)  # type: ignore[no-any-return]

    def temperature_at(self, ply: int) -> float:
        """Decision temperature at game ply ``ply``: ``inf`` (uniform, no search) in the random
        opening, then ``explore_temperature``, then ``temperature``."""
        if ply < self.random_opening_plies:
            return math.inf
        if ply < self.random_opening_plies + self.explore_plies:
            return self.explore_temperature
        return self.temperature


# ---------------------------------------------------------------------------------------------
# Evaluators
# ---------------------------------------------------------------------------------------------


@runtime_checkable
class Evaluator(Protocol):
    """What the search asks of a network (or any other leaf evaluator). Batch-first numpy:

    - ``pieces``: int8 ``[B, H, P, k]`` (P = players): cell of piece ID j of player p, h plies
      before the leaf (h = 0: the leaf), -1 where that state is missing.
    - ``to_move``: int8 ``[B]``: player to move at the leaf.
    - ``legal``: int32 ``[B, M]``: policy indices ``piece_id * cells + e`` of the leaf's legal
      moves in the first ``counts[b]`` entries, 0 after. ``counts[b] == 0`` when the only move
      is the pass (no prior is needed).
    - ``counts``: int32 ``[B]``.

    Returns ``priors`` float32 ``[B, M]`` (entry i: prior of ``legal[b, i]``; renormalised by
    the search) and ``values``: float32 ``[B, P]``, each absolute seat's expected share of the
    result (a probability vector: the winners share 1), for any number of players; two players may
    give instead float32 ``[B]``, the leaf mover's value in [-1, 1] (the compiled search's fast
    form, what a two-player network's one tanh output gives).
    An evaluator with a true class attribute ``needs_states`` is also passed
    ``states=`` uint8 ``[B, STATE_BYTES]``, the leaves' engine states (rollouts need them).

    A search with ``model_opponent`` calls ``evaluate_opponent`` instead (same arguments), which
    also returns ``opponent`` float32 ``[B, k * cells]``: at each leaf, logits of the reply of
    the player *not* to move there, by absolute policy index (the opponent model;
    ``learner.network_evaluator.NetworkEvaluator`` has it for a network with the opponent head).
    """

    def evaluate(
        self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]: ...


class UniformEvaluator:
    """No knowledge: uniform priors over the legal moves and an equal share ``1 / players`` of the
    result for every seat."""

    needs_states: ClassVar[bool] = False
    players: int = 2

    def __init__(self, players: int = 2) -> None:
        self.players = players

    def evaluate(
        self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        counts = np.asarray(counts)
        m = legal.shape[1]
        inv = (1.0 / np.maximum(counts, 1)).astype(np.float32)
        priors = np.where(np.arange(m, dtype=np.int32)[None, :] < counts[:, None], inv[:, None], np.float32(0))
        return priors.astype(np.float32, copy=False), np.full((len(counts), self.players), 1.0 / self.players,
                                                              dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# Results and decisions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchResult:
    """The outcome of one search at one root, and the move chosen from it."""

    move: Move
    """The move to play, ``(s, e)``; ``PASS`` when the pass is the only move."""
    moves: np.ndarray
    """int16 ``[n, 2]``: the root's legal moves (engine order)."""
    actions: np.ndarray
    """int32 ``[n]``: their policy indices (``PASS_ACTION`` for the pass)."""
    visits: np.ndarray
    """int32 ``[n]``: root visit counts per legal move (zeros when no search was run)."""
    policy: np.ndarray
    """float32 ``[k * cells]``: the visit distribution as a policy vector (the training
    target; zeros when no search was run or the only move is the pass)."""
    q: np.ndarray
    """float32 ``[n]``: mean value of each move from the root mover's view (NaN: unvisited)."""
    prior: np.ndarray
    """float32 ``[n]``: root priors as searched (with noise, if any)."""
    root_value: float
    """Mean backed-up value at the root from the root mover's view (NaN without search)."""
    simulations: int
    """Visits of the root (the new simulations plus a kept subtree's)."""
    temperature: float
    """Decision temperature used; ``inf`` for a random-opening move (no search run)."""
    root_shares: np.ndarray | None = None
    """float32 ``[P]``: each absolute seat's mean backed-up expected share at the root (the
    max-n value vector; for two players derived from ``root_value``); None without search."""
    target: np.ndarray | None = None
    """float32 ``[n]``: each move's weight in the training target: its visits, or with
    ``forced_playouts`` its visits less the forced ones (:func:`pruned_visits`). The search
    always sets it; ``policy`` is it normalised."""

    @property
    def searched(self) -> bool:
        return self.simulations > 0

    @property
    def visit_distribution(self) -> np.ndarray:
        """float32 ``[n]``: visits normalised over the legal moves (zeros without search)."""
        total = int(self.visits.sum())
        return (self.visits / total).astype(np.float32) if total else np.zeros(len(self.visits), np.float32)


def pruned_visits(
    visits: np.ndarray, q: np.ndarray, prior: np.ndarray, *, parent_visits: float, c_puct: float,
    forced_playouts: float,
) -> np.ndarray:
    """KataGo's policy target pruning (Wu 2019, "Policy Target Pruning"): the root's visits with the forced
    playouts taken out again, float32 ``[n]``.

    The most visited child c* keeps its visits. Every other child loses up to its
    ``n_forced = sqrt(k * P * N_children)`` visits, but only so far as it stays below c* in the
    selection: it keeps at least the visits at which ``Q + c_puct * P * sqrt(parent_visits) /
    (1 + N)`` equals c*'s (the bound it would have been chosen up to without forcing). A child
    reduced to one visit or fewer is pruned to 0. ``q``: each child's mean value from the root
    mover's view (ignored where unvisited); ``prior``: as searched (noise included);
    ``parent_visits``: the N_parent of the selection (the root's visits, or the children's sum
    with ``parent_visits="children_sum"``). With ``forced_playouts`` 0, the visits unchanged.
    """
    out = np.asarray(visits, dtype=np.float64).copy()
    total = float(out.sum())
    if forced_playouts <= 0 or total <= 0:
        return out.astype(np.float32)
    best = int(np.argmax(out))
    scale = c_puct * math.sqrt(parent_visits)
    best_score = float(q[best]) + scale * float(prior[best]) / (1.0 + out[best])
    for i in np.flatnonzero(out > 0):
        if i == best:
            continue
        gap = best_score - float(q[i])
        # the visits at which this child's score falls to c*'s: fewer would have had it chosen anyway
        bound = scale * float(prior[i]) / gap - 1.0 if gap > 0 else math.inf
        n_forced = math.sqrt(forced_playouts * float(prior[i]) * total)
        reduced = min(out[i], max(out[i] - n_forced, bound, 0.0))
        out[i] = 0.0 if reduced < out[i] and reduced <= 1.0 else reduced
    return out.astype(np.float32)


#: How far below the best value (on the [-1, 1] scale of ``SearchResult.q``) a move may be and
#: still be chosen for its progress when ``SearchConfig.finish`` applies.
FINISH_MARGIN = 0.02
#: The most steps left to fill the whole goal with one's own pieces (``ccengine.finish``) at
#: which ``SearchConfig.finish`` applies: the end of a race. Earlier, steps miss the hop ladders a
#: race is won by: without the bound the shipped star2 model at 64 simulations fell from 58.75% to
#: 52.25% against ``alphabeta:depth=3``; with it, it plays as well as without the rule
#: (docs/STRENGTH.md, "Won endgames").
FINISH_STEPS = 30
#: The ``SearchConfig.finish`` share a search player (``SearchPlayer``: the ``mcts`` SPECs, the
#: gate, rooms and the engine protocol) plays with unless told otherwise (``finish=0`` turns the
#: rule off). With it the shipped star2 model finishes every won endgame of
#: ``hopzero endgames`` instead of drawing about half of them by repetition, and whole games
#: score the same within a standard error (docs/STRENGTH.md, "Won endgames"). Self-play keeps
#: ``SearchConfig.finish`` (0): its moves are the visit counts' own.
PLAY_FINISH = 0.9


def finish_candidates(weights: np.ndarray, q: np.ndarray, root_value: float, finish: float) -> np.ndarray | None:
    """The moves ``SearchConfig.finish`` chooses among: when the root mover's share
    ``(root_value + 1) / 2`` is at least ``finish``, the searched moves (``weights > 0``) within
    ``FINISH_MARGIN`` of the best value, as a mask; None when the rule does not apply."""
    searched = (weights > 0) & ~np.isnan(q)
    if finish <= 0 or math.isnan(root_value) or (root_value + 1.0) / 2.0 < finish or not searched.any():
        return None
    return searched & (q >= float(q[searched].max()) - FINISH_MARGIN)


def choose_move(visits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """Index of the move to play: ``P(i) ~ visits[i] ** (1 / t)`` (the paper's decision rule).

    ``t = inf``: uniform over all moves. ``t = 0``: the most visited, ties at random. The power
    is taken in log space, so t = 0.01 does not overflow.
    """
    n = len(visits)
    if n == 0:
        raise ValueError("no move to choose from")
    if math.isinf(temperature) or visits.sum() == 0:
        return int(rng.integers(n))
    if temperature == 0:
        best = np.flatnonzero(visits == visits.max())
        return int(best[rng.integers(len(best))])
    with np.errstate(divide="ignore"):
        logits = np.log(visits.astype(np.float64)) / temperature
    p = np.exp(logits - logits.max())
    p /= p.sum()
    return int(rng.choice(n, p=p))


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------


class BatchedSearch:
    """G games searched in lock-step: one evaluator call per round over all their leaves.

    Each game has its own random generator (root noise, tie-breaks and the decision), so a
    game's moves do not depend on which other games share the batch (given an evaluator whose
    output for a row depends on that row only).
    """

    def __init__(
        self,
        rules: Rules | RulesTables,
        num_games: int,
        config: SearchConfig | None = None,
        *,
        history: int = 1,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.tables: RulesTables = rules if isinstance(rules, RulesTables) else tables_for(rules)
        self.rules: Rules = self.tables.rules
        self.config = config if config is not None else SearchConfig()
        self.num_games = num_games
        self.history = history
        c = self.config
        self.forest = SearchForest(
            self.tables,
            num_games,
            history=history,
            c_puct=c.c_puct,
            parent_visits=c.parent_visits,
            fpu=c.fpu,
            fpu_value=c.fpu_value,
            fpu_reduction=c.fpu_reduction,
            leaves_per_game=c.leaves_per_game,
            virtual_loss=c.virtual_loss,
            dirichlet_alpha=c.dirichlet_alpha,
            dirichlet_weight=c.dirichlet_weight,
            node_capacity=c.num_simulations + 16,
            edge_capacity=(c.num_simulations + 16) * 32,
            solver=c.solver,
            greedy_opponent=c.greedy_opponent,
            model_opponent=c.model_opponent,
            policy_opponent=c.policy_opponent,
            auto_opponent=c.auto_opponent,
            forced_playouts=c.forced_playouts,
        )
        rows = num_games * c.leaves_per_game
        k, m = self.tables.k, self.tables.max_moves
        # Caller-owned leaf buffers, reused every round; rows 0..n-1 are valid after select.
        self._pieces = np.full((rows, history, self.tables.players, k), -1, dtype=np.int8)
        self._to_move = np.zeros(rows, dtype=np.int8)
        self._legal = np.zeros((rows, m), dtype=np.int32)
        self._counts = np.zeros(rows, dtype=np.int32)
        self._states = np.zeros((rows, STATE_BYTES), dtype=np.uint8)
        self._games = np.zeros(rows, dtype=np.int32)
        self._moves_buf = np.zeros((m, 2), dtype=np.int16)
        self._rng = rng if rng is not None else np.random.default_rng()
        self._game_rngs: list[np.random.Generator | None] = [None] * num_games
        #: Rounds (evaluator calls) and leaves evaluated since construction.
        self.rounds = 0
        self.leaves = 0

    # -- roots ---------------------------------------------------------------------------------

    def set_root(
        self, g: int, state: State, history: np.ndarray | None = None, *, rng: np.random.Generator | None = None
    ) -> None:
        """Start game ``g`` afresh at ``state``.

        ``history``: int8 ``[h, P, k]`` piece lists, ``history[0]`` for ``state`` and then the
        states before it (the IDs the game has carried); canonical IDs without it. ``rng``: the
        game's generator (default: one drawn from the search's own).
        """
        game_rng = rng if rng is not None else np.random.default_rng(int(self._rng.integers(2**63)))
        self._game_rngs[g] = game_rng
        self.forest.set_root(g, state, history, seed=int(game_rng.integers(2**63)))

    def play(self, g: int, move: Sequence[int]) -> bool:
        """Play ``move`` in game ``g``; returns True when the searched subtree was kept."""
        return bool(self.forest.advance(g, int(move[0]), int(move[1]), reuse=self.config.reuse_tree))

    def is_active(self, g: int) -> bool:
        """Whether game ``g`` has a position to search (set and not over)."""
        return bool(self.forest.is_active(g))

    # -- search --------------------------------------------------------------------------------

    def run(self, evaluator: Evaluator) -> None:
        """Run rounds until every started game has used its simulations."""
        forest = self.forest
        wants_states = bool(getattr(evaluator, "needs_states", False))
        states = self._states if wants_states else None
        model_opponent = self.config.model_opponent
        if model_opponent and not callable(getattr(evaluator, "evaluate_opponent", None)):
            raise ValueError(f"model_opponent needs an evaluator with an opponent model (evaluate_opponent); "
                             f"{type(evaluator).__name__} has none")
        while True:
            n = forest.select(self._pieces, self._to_move, self._legal, self._counts, states, self._games)
            if n == 0:
                if forest.pending_simulations() == 0:
                    return
                continue  # every descent of this round ended in a finished game
            # Only as many columns as the widest row (a small copy): less for the evaluator to mask.
            width = max(1, int(self._counts[:n].max()))
            legal = np.ascontiguousarray(self._legal[:n, :width])
            args = (self._pieces[:n], self._to_move[:n], legal, self._counts[:n])
            opponent = None
            if model_opponent:
                priors, values, opponent = evaluator.evaluate_opponent(*args)  # type: ignore[attr-defined]
                opponent = np.ascontiguousarray(opponent, dtype=np.float32)
            elif wants_states:
                priors, values = evaluator.evaluate(*args, states=self._states[:n])  # type: ignore[call-arg]
            else:
                priors, values = evaluator.evaluate(*args)
            forest.expand_and_backup(
                np.ascontiguousarray(priors, dtype=np.float32), np.ascontiguousarray(values, dtype=np.float32),
                opponent,
            )
            self.rounds += 1
            self.leaves += n

    def search(
        self, evaluator: Evaluator, games: Sequence[int] | None = None, *, fast: Collection[int] = (),
        fast_simulations: int = 0,
    ) -> list[SearchResult | None]:
        """Search ``games`` (default: every active game) and decide a move for each.

        Returns one entry per game of the forest: a :class:`SearchResult` for the games searched,
        None for the others. Games in the random opening get a uniform random move and no search.
        The games in ``fast`` get a fast search (KataGo's playout cap randomization): only
        ``fast_simulations`` and no root noise.
        """
        cfg = self.config
        if fast and not 1 <= fast_simulations:
            raise ValueError(f"fast_simulations={fast_simulations}: a fast search needs at least 1")
        if games is None:
            games = [g for g in range(self.num_games) if self.forest.is_active(g)]
        temps: dict[int, float] = {}
        for g in games:
            if not self.forest.is_active(g):
                raise ValueError(f"game {g} has no position to search (over, or never set)")
            _, ply, _ = self.forest.root_state(g)
            temps[g] = cfg.temperature_at(ply)
            if math.isinf(temps[g]):
                continue
            if g in fast:
                self.forest.start(g, fast_simulations, noise=False)
            else:
                self.forest.start(g, cfg.num_simulations, noise=cfg.root_noise)
        self.run(evaluator)
        results: list[SearchResult | None] = [None] * self.num_games
        for g in games:
            results[g] = self._result(g, temps[g])
        return results

    def think(
        self,
        g: int,
        evaluator: Evaluator,
        simulations: int,
        *,
        seconds: float | None = None,
        chunk: int = 64,
        stop: Callable[[], bool] | None = None,
    ) -> SearchResult:
        """Search game ``g`` alone: ``simulations`` of them, or, with ``seconds``, chunks of
        ``chunk`` until the time is up (at least one chunk); decide with ``config.temperature``.

        ``stop`` is asked between chunks (the search then runs in chunks whatever its limit);
        when it answers True the search ends with the tree it has (at least one chunk searched).

        This is how a player thinks in a match or behind the engine protocol (``go nodes`` /
        ``go movetime`` / ``stop``); self-play uses :meth:`search` over all games at once.
        """
        if not self.forest.is_active(g):
            raise ValueError(f"game {g} has no position to search (over, or never set)")
        noise = self.config.root_noise
        if seconds is None and stop is None:
            self.forest.start(g, simulations, noise=noise)
            self.run(evaluator)
            return self._result(g, self.config.temperature)
        deadline = math.inf if seconds is None else time.perf_counter() + seconds
        left = math.inf if seconds is not None else simulations
        while left > 0:
            step = int(min(chunk, left))
            self.forest.start(g, step, noise=noise)
            self.run(evaluator)
            noise = False  # the root's noise is mixed in once
            left -= step
            if time.perf_counter() >= deadline or (stop is not None and stop()):
                break
        return self._result(g, self.config.temperature)

    def _result(self, g: int, temperature: float) -> SearchResult:
        rng = self._game_rngs[g]
        assert rng is not None
        m = self.tables.max_moves
        moves = np.zeros((m, 2), dtype=np.int16)
        actions = np.zeros(m, dtype=np.int32)
        visits = np.zeros(m, dtype=np.int32)
        q = np.zeros(m, dtype=np.float32)
        prior = np.zeros(m, dtype=np.float32)
        n, root_n, root_value = self.forest.root_stats(g, moves, actions, visits, q, prior)
        if n == 0 or math.isinf(temperature):  # no search ran: the legal moves without statistics
            visits[:] = 0
            prior[:] = 0
            root_n, root_value = 0, math.nan
            n = self.forest.root_moves(g, moves)
            to_move, _, pieces = self.forest.root_state(g)
            cells = self.tables.cells
            for i in range(n):
                s, e = int(moves[i, 0]), int(moves[i, 1])
                actions[i] = PASS_ACTION if s < 0 else int(np.flatnonzero(pieces[to_move] == s)[0]) * cells + e
            q[:n] = np.nan
        moves, actions, visits, q, prior = moves[:n], actions[:n], visits[:n], q[:n], prior[:n]
        cfg = self.config
        forced = cfg.forced_playouts > 0
        target = visits.astype(np.float32)
        if forced:
            parent = root_n if cfg.parent_visits == "node" else int(visits.sum())
            target = pruned_visits(visits, q, prior, parent_visits=parent, c_puct=cfg.c_puct,
                                   forced_playouts=cfg.forced_playouts)
        # As KataGo, the move is drawn from the pruned counts too: forced exploration is not played.
        weights = target if forced else visits
        policy = np.zeros(self.tables.k * self.tables.cells, dtype=np.float32)
        total = weights.sum()
        if total:
            ok = actions >= 0
            policy[actions[ok]] = weights[ok] / total
        decision = self._decision_weights(g, weights)
        # off by default: self-play's hot path skips it before any array work
        near = finish_candidates(decision, q, float(root_value), cfg.finish) if cfg.finish > 0 and n else None
        if near is not None:
            decision = self._finishing(g, moves, near, decision)
        i = choose_move(decision, temperature, rng)
        move = (int(moves[i, 0]), int(moves[i, 1]))
        return SearchResult(
            move=PASS if move[0] < 0 else move,
            moves=moves,
            actions=actions,
            visits=visits,
            policy=policy,
            q=q,
            prior=prior,
            root_value=float(root_value),
            simulations=int(root_n),
            temperature=temperature,
            root_shares=self.forest.root_value_vector(g) if root_n else None,
            target=target,
        )

    def _finishing(self, g: int, moves: np.ndarray, near: np.ndarray, decision: np.ndarray) -> np.ndarray:
        """``SearchConfig.finish``: at most ``FINISH_STEPS`` steps from filling the whole goal
        with the mover's own pieces (the others' pieces in it could leave), the decision
        weights kept on the ``near`` moves (searched, about as good as the best) that leave the
        fewest steps to finish; further from the end, ``decision`` unchanged. When none of the
        ``near`` moves lowers the steps, the moves the search never tried are considered too (a
        walk to a hole in the goal often has too small a prior to be searched): those that
        lower the steps the most, equally weighted."""
        to_move, _, pieces = self.forest.root_state(g)
        rules = self.tables.rules
        mine = [int(c) for c in pieces[to_move] if c >= 0]
        others = [int(c) for p, row in enumerate(pieces) if p != to_move for c in row if c >= 0]
        if steps_to_finish(rules, mine, (), to_move) > FINISH_STEPS:  # as if the others left its goal
            return decision
        now = steps_to_finish(rules, mine, others, to_move)

        def steps_after(which: np.ndarray) -> np.ndarray:
            out = np.full(len(moves), np.iinfo(np.int64).max, dtype=np.int64)
            for i in np.flatnonzero(which):
                s, e = int(moves[i, 0]), int(moves[i, 1])
                if s >= 0:
                    out[i] = steps_to_finish(rules, [e if c == s else c for c in mine], others, to_move)
            return out

        steps = steps_after(near)
        if steps.min() >= now:
            more = steps_after(near | (decision == 0))
            if more.min() < now:
                return (more == more.min()).astype(decision.dtype)
        return np.where(steps == steps.min(), decision, 0).astype(decision.dtype)

    def _decision_weights(self, g: int, visits: np.ndarray) -> np.ndarray:
        """The visits the decision is drawn from; with the solver, proofs overrule them: the
        most visited proven win if there is one, else no proven loss unless all moves lose."""
        if not self.config.solver or not visits.sum():
            return visits
        proofs = np.zeros(self.tables.max_moves, dtype=np.int8)
        proofs = proofs[: self.forest.root_proofs(g, proofs)]
        if (proofs > 0).any():
            wins = np.where(proofs > 0, visits, 0)
            return (wins == wins.max()).astype(visits.dtype)  # one proven win, deterministically
        alive = np.where(proofs < 0, 0, visits)
        return alive if alive.sum() else visits


def run_search(
    states: Sequence[State],
    evaluator: Evaluator,
    config: SearchConfig | None = None,
    rng: np.random.Generator | None = None,
    *,
    histories: Sequence[np.ndarray | None] | None = None,
    history: int = 1,
) -> list[SearchResult]:
    """Search each of ``states`` (fresh trees, one batch) and return one result per state.

    Game i's generator is the i-th of ``rng.spawn(len(states))``.
    """
    if not states:
        return []
    rng = rng if rng is not None else np.random.default_rng()
    search = BatchedSearch(states[0].tables, len(states), config, history=history, rng=rng)
    for g, (state, game_rng) in enumerate(zip(states, rng.spawn(len(states)))):
        search.set_root(g, state, None if histories is None else histories[g], rng=game_rng)
    results = search.search(evaluator, list(range(len(states))))
    return [r for r in results if r is not None]

