"""Stage-2 self-play (seed paper section 3.5, "Training on MCTS-guided self-plays"): the core that
a Ray actor wraps.

A :class:`SelfPlayWorker` owns ``G`` concurrent games and one :class:`~ccengine.search.BatchedSearch`
over them. Each :meth:`SelfPlayWorker.step` is one move in every active game: one search over all
of them (one batched network call per simulation round, inside the search), then the chosen moves
are played, and every game that ended comes back as a :class:`~learner.records.GameRecord`; its
slot starts a new game at once. No Ray, no I/O: the wrapper pulls weights
(:meth:`SelfPlayWorker.set_weights`), calls :meth:`~SelfPlayWorker.step` in a loop and sends the
records on.

Exploration is the paper's, all in :class:`~ccengine.search.SearchConfig`: the first
``random_opening_plies`` (paper: 6) are uniformly random and not searched, the next
``explore_plies`` (paper: 10) are decided at ``explore_temperature`` (paper: 1-2), the rest at
``temperature`` (paper: 0.01), with Dirichlet noise (alpha 0.03, weight 0.25) at every root. The
subtree of the move played is kept (``reuse_tree``; the paper's code keeps it too).

What a record holds (docs/REPLAY.md):

- positions: every position from the end of the random opening to the last one before the game
  ended (the random-opening positions have no search policy; their piece lists travel as
  ``start_pieces``, newest first, so the first recorded positions keep their history planes);
- policy target: the root visit distribution over the visited moves (absolute policy indices,
  ``visits / total``); a pass-only position has an empty target;
- ``root_shares``: :attr:`SearchResult.root_shares`, the root value vector by seat;
- ``scores``: the game's result vector (``State.scores()``), or the loss of the side that resigned;
- ``model_version``: the version of the weights the game **started** with (those in place at
  its first move). Weights may change while a game is in flight and the game goes on with the
  new ones; the start version is the oldest network that contributed moves, so a learner that
  filters stale data by version never takes a game for younger than it is (-1: the game
  started before any weights, which only ``uniform_until_weights`` allows).

Playout cap randomization (KataGo; off by default): with ``full_search_prob`` below 1, each
searched move is a full search (``num_simulations``, root noise) with that probability, else a
fast search (``fast_simulations``, no noise) that only chooses the move. A fast-searched position
stays in the record for the history planes of the positions after it, with no policy target and
``keep`` false: it trains nothing, neither policy nor value (KataGo records nothing of them). The
draw has its own random stream per game, so the options off leave every game as it was.

Policy surprise weighting (KataGo; off by default): the record's ``weight`` gives each trained
position half an even share of the game's weight and half a share in proportion to the KL
divergence of its policy target from the root's prior (noise included, as KataGo does).

An outside opponent (off by default): with ``opponent`` (a SPEC of a player without a network,
e.g. ``alphabeta:depth=3``) and ``opponent_fraction`` above 0, that share of games seats the
opponent at ``opponent_seats`` seats drawn at random (one by default), the network at the
others. Its moves are played without a search and stay in the record unkept, as fast searches
do: only the network's positions train, with the game's result as their value target. Self-play
alone never punishes a habit that both sides share (on ``star2``, a piece left in its own home
until the other side fills the rest of its goal and wins by the anti-block rule); an opponent
that does not share it does. The draws have their own random stream per game, so the option off
leaves every game as it was; such games never resign.

Resignation (off by default, as in the paper): a side resigns when its root value was below
``-resign_threshold`` at two consecutive own searched moves; the resigning position is not
recorded (the game ends before it, like a terminal position), and the outcome is a loss for
the side that resigned. A ``resign_playout_fraction`` share of games never resigns; in them the
first moment each side *would* have resigned is noted, and at the end a would-be resignation
by a side that did not lose counts as a false resignation (:meth:`SelfPlayWorker.stats`), the
AlphaGo Zero way to check that the threshold is safe.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ccengine.encoding import PieceTracker, encoding_for
from ccengine.engines import new_state
from ccengine.eval_cache import EvaluationCache
from ccengine.rules import Rules
from ccengine.search import BatchedSearch, Evaluator, SearchConfig, SearchResult, UniformEvaluator
from learner.players import make_player
from learner.records import MAX_START_HISTORY, GameRecord, make_record, versions_now
from learner.training import load_weights_into

__all__ = ["NoWeightsError", "SelfPlayWorker", "TimedEvaluator", "policy_surprise", "surprise_weights",
           "technique_options"]


class NoWeightsError(RuntimeError):
    """:meth:`SelfPlayWorker.step` before any :meth:`SelfPlayWorker.set_weights`."""


class TimedEvaluator:
    """Wraps an evaluator and counts the seconds, calls and rows spent in it."""

    needs_states: ClassVar[bool] = False

    def __init__(self, inner: Evaluator) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.calls = 0
        self.rows = 0

    def evaluate(
        self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        t0 = time.perf_counter()
        out = self.inner.evaluate(pieces, to_move, legal, counts)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.rows += len(to_move)
        return out

    def evaluate_opponent(
        self, pieces: np.ndarray, to_move: np.ndarray, legal: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The inner evaluator's ``evaluate_opponent`` (``search.model_opponent``), timed."""
        method = getattr(self.inner, "evaluate_opponent", None)
        if method is None:
            raise ValueError(f"search.model_opponent needs an evaluator with an opponent model; "
                             f"{type(self.inner).__name__} has none")
        t0 = time.perf_counter()
        out = method(pieces, to_move, legal, counts)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.rows += len(to_move)
        return out


@dataclass
class _Game:
    """One game in flight in one slot."""

    seed: int
    state: Any
    tracker: PieceTracker
    model_version: int
    playout: bool
    """Resignation disabled in this game (the ``resign_playout_fraction`` share)."""
    start_pieces: np.ndarray | None = None
    pieces: list[np.ndarray] = field(default_factory=list)
    to_move: list[int] = field(default_factory=list)
    policies: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    root_shares: list[np.ndarray] = field(default_factory=list)
    """The root value vector of each recorded position (by seat)."""
    low: list[int] = field(default_factory=lambda: [0, 0])
    """Consecutive own searched moves with root value below ``-resign_threshold``, per side."""
    would_resign: list[bool] = field(default_factory=lambda: [False, False])
    """Playout games: whether each side would have resigned at some point."""
    versions_seen: set[int] = field(default_factory=set)
    full: list[bool] = field(default_factory=list)
    """Per recorded position: whether a full search made it (playout cap randomization)."""
    surprise: list[float] = field(default_factory=list)
    """Per recorded position: KL divergence of its policy target from the root prior."""
    cap_rng: np.random.Generator | None = None
    """The game's draws of full or fast searches (with ``full_search_prob`` below 1)."""
    opponent_seats: tuple[int, ...] = ()
    """The seats of the outside opponent in this game (none: self-play only)."""


def surprise_weights(surprise: np.ndarray, trained: np.ndarray) -> np.ndarray:
    """KataGo's policy surprise weights of one game's positions: of the total weight of the
    ``trained`` positions (one each), half goes to them evenly and half in proportion to their
    ``surprise`` (KL divergence of target from prior); the others weigh 1 (they train nothing).
    No surprise at all leaves every weight 1."""
    weights = np.ones(len(surprise), dtype=np.float64)
    kl = np.where(trained, np.maximum(surprise, 0.0), 0.0)
    if kl.sum() > 0:
        weights[trained] = 0.5 + 0.5 * int(trained.sum()) * kl[trained] / kl.sum()
    return weights.astype(np.float32)


def policy_surprise(target: np.ndarray, prior: np.ndarray) -> float:
    """KL divergence of the search's target distribution from the root prior, both over the
    root's legal moves (``target`` unnormalised: visits or pruned visits)."""
    total = float(target.sum())
    if total <= 0:
        return 0.0
    pi = target / total
    seen = pi > 0
    return float(np.sum(pi[seen] * np.log(pi[seen] / np.maximum(prior[seen], 1e-8))))


def technique_options(selfplay: Any) -> dict[str, Any]:
    """The :class:`SelfPlayWorker` keywords of the training techniques in a run's ``selfplay``
    section (``actors.config.SelfPlayConfig``): KataGo's, and the outside opponent."""
    return {"full_search_prob": selfplay.full_search_prob, "fast_simulations": selfplay.fast_simulations,
            "surprise_weighting": selfplay.surprise_weighting, "opponent": selfplay.opponent,
            "opponent_fraction": selfplay.opponent_fraction, "opponent_seats": selfplay.opponent_seats}


class SelfPlayWorker:
    """``G`` concurrent self-play games with one batched search and one network.

    ``rules``: the game. ``games``: G. ``search``: the search and exploration settings (paper:
    175 simulations, c 3.5, 6 random plies, 10 at temperature 2, then 0.01, Dirichlet 0.03/0.25).
    ``net_config``/``encoding``/``history``: the network the learner trains (its input must
    fit the encoding). ``run_id``/``config_hash``/``actor``: provenance written into records.
    ``seed``: every random choice (game seeds, noise, decisions, playout draws) follows from it.
    ``resign_threshold``: 0 = never resign (paper); else resign below ``-resign_threshold``.
    ``resign_playout_fraction``: share of games that never resign (false-resignation check).
    ``device``/``threads``: where the network runs (an actor: one CPU thread). ``backend``: how
    (``learner.backends.BACKENDS``; ``auto``: ONNX Runtime in 8 bits on CPU). ``eval_cache``:
    positions the evaluation cache in front of the network keeps (``ccengine.eval_cache``; 0: no
    cache).
    ``uniform_until_weights``: play with uniform priors and zero values until the first
    :meth:`set_weights` (tests); otherwise :meth:`step` refuses to run without weights.
    ``evaluator``: use this evaluator instead of the network (tests, benchmarks); weights are
    then not needed, and :meth:`set_weights` only updates the network and the version.
    ``full_search_prob``/``fast_simulations``: playout cap randomization; ``surprise_weighting``:
    policy surprise weights in the records; ``opponent``/``opponent_fraction``/``opponent_seats``:
    the share of games against an outside player and its seats in them (see the module docstring;
    ``SelfPlayConfig``).
    """

    def __init__(
        self,
        rules: Rules,
        *,
        games: int,
        search: SearchConfig,
        net_config: Any,
        encoding: str,
        history: int,
        run_id: str,
        config_hash: str,
        actor: str,
        seed: int,
        resign_threshold: float = 0.0,
        resign_playout_fraction: float = 0.1,
        device: str = "cpu",
        threads: int | None = 1,
        backend: str = "auto",
        eval_cache: int = 0,
        uniform_until_weights: bool = False,
        evaluator: Evaluator | None = None,
        full_search_prob: float = 1.0,
        fast_simulations: int = 0,
        surprise_weighting: bool = False,
        opponent: str = "",
        opponent_fraction: float = 0.0,
        opponent_seats: int = 1,
    ) -> None:
        if games < 1:
            raise ValueError(f"games={games} must be at least 1")
        if not 0.0 < full_search_prob <= 1.0:
            raise ValueError(f"full_search_prob={full_search_prob} must be in (0, 1]")
        if full_search_prob < 1.0 and not 1 <= fast_simulations < search.num_simulations:
            raise ValueError(f"fast_simulations={fast_simulations} must be at least 1 and below the full "
                             f"search's {search.num_simulations} simulations")
        if not 0.0 <= opponent_fraction <= 1.0:
            raise ValueError(f"opponent_fraction={opponent_fraction} must be in [0, 1]")
        if opponent_fraction > 0 and not opponent:
            raise ValueError(f"opponent_fraction={opponent_fraction} needs an opponent SPEC")
        if not 1 <= opponent_seats < rules.players:
            raise ValueError(f"opponent_seats={opponent_seats} must be at least 1 and leave the network a seat "
                             f"of the {rules.players}")
        if resign_threshold < 0:
            raise ValueError(f"resign_threshold={resign_threshold} must be >= 0 (0 = never resign)")
        if not 0.0 <= resign_playout_fraction <= 1.0:
            raise ValueError(f"resign_playout_fraction={resign_playout_fraction} must be in [0, 1]")
        self.rules = rules
        self.num_games = games
        self.config = search
        self.history = history
        self.run_id = run_id
        self.config_hash = config_hash
        self.actor = actor
        self.seed = int(seed)
        self.resign_threshold = float(resign_threshold)
        self.resign_playout_fraction = float(resign_playout_fraction)
        self.uniform_until_weights = uniform_until_weights
        self.full_search_prob = float(full_search_prob)
        self.fast_simulations = int(fast_simulations)
        self.surprise_weighting = bool(surprise_weighting)
        self.opponent_fraction = float(opponent_fraction)
        self.opponent_seats = int(opponent_seats)
        # its own random stream, so that the option off leaves the games' seeds as they were
        self._opponent = (make_player(opponent, rules, np.random.SeedSequence([self.seed, 3]))
                          if opponent_fraction > 0 else None)
        self._versions = versions_now()
        self._rng = np.random.default_rng(self.seed)

        self.encoding = encoding_for(rules, encoding, history=history)
        self.network = self._build_network(net_config, device, threads, backend) if evaluator is None else None
        self._override = evaluator
        self.cache = EvaluationCache(self.network, eval_cache) if self.network is not None and eval_cache > 0 else None
        self._timed = TimedEvaluator(evaluator if evaluator is not None else UniformEvaluator(rules.players))
        self.model_version = -1
        self._has_weights = False

        search_rng = np.random.default_rng(self._rng.integers(2**63))
        self.search = BatchedSearch(rules, games, search, history=history, rng=search_rng)
        self._games: list[_Game | None] = [None] * games
        for g in range(games):
            self._start_game(g)

        # Counters for stats().
        self._steps = 0
        self._moves = 0
        self._searches = 0
        self._simulations = 0
        self._finished = 0
        self._positions = 0
        self._plies_total = 0
        self._wins = [0, 0, 0]  # player 0 (first mover), player 1, draws
        self._resigned = 0
        self._playout_games = 0
        self._would_resign = 0
        self._false_resign = 0
        self._unrecorded = 0
        self._fast_searches = 0
        self._opponent_moves = 0
        self._opponent_results = [0, 0, 0]  # games against the opponent: network won, drawn, lost
        self._fast: set[int] = set()  # the games searched fast in the current step
        self._spanning = 0
        self._step_s = 0.0
        self._search_s = 0.0

    # -- network ---------------------------------------------------------------------------------

    def _build_network(self, net_config: Any, device: str, threads: int | None, backend: str) -> Any:
        from learner.model import PolicyValueNet
        from learner.network_evaluator import NetworkEvaluator, network_inference

        if net_config.in_planes != self.encoding.in_planes or net_config.policy_size != self.encoding.policy_size:
            raise ValueError(
                f"net_config (in_planes {net_config.in_planes}, policy {net_config.policy_size}) does not fit "
                f"encoding {self.encoding.name!r} with history {self.history} "
                f"(in_planes {self.encoding.in_planes}, policy {self.encoding.policy_size})"
            )
        inference = network_inference(self.rules, self.encoding, PolicyValueNet(net_config), backend=backend,
                                      device=device, threads=threads)
        return NetworkEvaluator(self.rules, self.encoding, inference)

    def set_weights(self, version: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Swap in new network weights, in place (no new process, no file); games in flight go
        on with them. ``arrays``: ``{state_dict name: ndarray}`` as ``Trainer.export_weights``
        gives them."""
        if self.network is not None:
            load_weights_into(self.network.inference.model, arrays)
            self.network.inference.refresh()
            if self.cache is not None:
                self.cache.clear()  # the old network's answers
            if self._override is None:
                self._timed.inner = self.cache if self.cache is not None else self.network
        self.model_version = int(version)
        self._has_weights = True

    @property
    def has_weights(self) -> bool:
        return self._has_weights

    # -- games -----------------------------------------------------------------------------------

    def _start_game(self, g: int) -> None:
        seed = int(self._rng.integers(2**63))
        game_rng = np.random.default_rng(seed)
        # its own stream, so that a game's moves do not depend on whether resignation is on
        draw = np.random.default_rng([seed, 1]).random()
        playout = bool(self.resign_threshold > 0 and draw < self.resign_playout_fraction)
        state = new_state(self.rules)  # the Cython engine: the search needs its states
        game = _Game(seed=seed, state=state, tracker=PieceTracker(self.rules), model_version=self.model_version,
                     playout=playout)
        if self.full_search_prob < 1.0:
            game.cap_rng = np.random.default_rng([seed, 2])  # its own stream, as the resignation draw
        if self._opponent is not None:
            draws = np.random.default_rng([seed, 3])
            if draws.random() < self.opponent_fraction:
                # the first seat drawn as with one seat, so that one seat plays the games it always did
                first = int(draws.integers(self.rules.players))
                others = [s for s in range(self.rules.players) if s != first]
                more = draws.choice(others, self.opponent_seats - 1, replace=False)
                game.opponent_seats = tuple(sorted([first, *map(int, more)]))
        self._games[g] = game
        self.search.set_root(g, state, rng=game_rng)

    def active_games(self) -> int:
        """Slots with a game in flight."""
        return sum(1 for g in self._games if g is not None)

    def step(self, *, refill: bool = True) -> list[GameRecord]:
        """One searched move in every game in flight (after the outside opponent's moves that
        come first, if any); returns the records of the games that ended.

        ``refill=True``: every empty slot starts a new game after the move (a finished game is
        replaced at once). ``refill=False`` leaves them empty, to drain the worker: the games in
        flight finish and no new ones start (:meth:`active_games` counts down to 0).
        """
        if not self._has_weights and self._override is None and not self.uniform_until_weights:
            raise NoWeightsError(
                "SelfPlayWorker.step() before set_weights(): the actor has no network weights yet "
                "(pass uniform_until_weights=True to play with a uniform evaluator until they come)"
            )
        t0 = time.perf_counter()
        records: list[GameRecord] = []
        if self._opponent is not None:
            records = self._play_opponent_moves(refill=refill)
        active = [g for g, game in enumerate(self._games) if game is not None]
        if active:
            net_before = self._timed.seconds
            t_search = time.perf_counter()
            self._fast = self._fast_games(active)
            results = self.search.search(self._timed, active, fast=self._fast,
                                         fast_simulations=self.fast_simulations)
            self._search_s += time.perf_counter() - t_search - (self._timed.seconds - net_before)
            for g in active:
                res = results[g]
                assert res is not None
                record = self._advance(g, res)
                if record is not None:
                    records.append(record)
        if refill:
            for g, game in enumerate(self._games):
                if game is None:
                    self._start_game(g)
        self._steps += 1
        self._step_s += time.perf_counter() - t0
        return records

    def _fast_games(self, active: list[int]) -> set[int]:
        """The games whose move this step gets a fast search (playout cap randomization)."""
        if self.full_search_prob >= 1.0:
            return set()
        fast = set()
        for g in active:
            game = self._games[g]
            assert game is not None and game.cap_rng is not None
            if game.cap_rng.random() >= self.full_search_prob:
                fast.add(g)
        return fast

    def _play_opponent_moves(self, *, refill: bool) -> list[GameRecord]:
        """Play the outside opponent's moves in every game until the network is to move; the
        records of the games that ended (``refill``: each one's slot starts a new game at once).
        All the opponent's seats move before the search, so that each step searches every game
        in flight: a step that searched only the games where the network is to move would batch
        a fraction of them (one in four against three opponent seats on four players) at the same
        fixed cost per simulation round."""
        records = []
        for g in range(len(self._games)):
            while self._games[g] is not None and self._opponent_to_move(g):
                record = self._opponent_move(g)
                if record is not None:
                    records.append(record)
                if self._games[g] is None and refill:
                    self._start_game(g)
        return records

    def _opponent_to_move(self, g: int) -> bool:
        """Whether the outside opponent moves next in game ``g`` (the random opening is
        everyone's: its moves are drawn by the search)."""
        game = self._games[g]
        assert game is not None
        return (game.state.to_move in game.opponent_seats
                and not math.isinf(self.config.temperature_at(game.state.ply)))

    def _note_move(self, game: _Game) -> None:
        """Keep track of the network versions that played in ``game``."""
        if not game.versions_seen:  # the game's first move: its version is the one playing now
            game.model_version = self.model_version
        game.versions_seen.add(self.model_version)

    def _note_position(self, game: _Game, policy: tuple[np.ndarray, np.ndarray], shares: np.ndarray | None, *,
                       full: bool, surprise: float) -> None:
        """Add the position to move in ``game`` to its record: its policy target (empty: none),
        its root value vector (None: even shares), whether it trains (``full``) and its surprise.
        The game's first recorded position also takes the random opening as its history."""
        if not game.pieces:
            game.start_pieces = self._start_history(game.tracker, game.state.ply)
        game.pieces.append(game.tracker.current)
        game.to_move.append(game.state.to_move)
        game.policies.append(policy)
        game.root_shares.append(np.full(self.rules.players, 1.0 / self.rules.players, np.float32)
                                if shares is None else shares)
        game.full.append(full)
        game.surprise.append(surprise)

    def _opponent_move(self, g: int) -> GameRecord | None:
        """The outside opponent's move in game ``g``: its position stays in the record unkept (it
        trains nothing); a record when the game ended."""
        game = self._games[g]
        assert game is not None and self._opponent is not None
        self._note_move(game)
        self._note_position(game, (np.zeros(0, np.int64), np.zeros(0)), None, full=False, surprise=0.0)
        self._opponent_moves += 1
        return self._play(g, self._opponent.select(game.state))

    def _advance(self, g: int, res: SearchResult) -> GameRecord | None:
        """Record the searched position, maybe resign, play the move; a record when it ended."""
        game = self._games[g]
        assert game is not None
        state = game.state
        mover = state.to_move
        self._note_move(game)
        if math.isinf(res.temperature):
            # random opening: no search, not a recorded position
            assert not game.pieces
        else:
            self._searches += 1
            full = g not in self._fast
            self._simulations += self.config.num_simulations if full else self.fast_simulations
            self._fast_searches += not full
            target = res.target if res.target is not None else res.visits
            ok = (res.actions >= 0) & (target > 0)
            if full and ok.any():
                idx = res.actions[ok].astype(np.int64)
                weights = target[ok].astype(np.float64)
                prob = weights / weights.sum()
            else:  # the pass is the only move, or a fast search: no target
                idx, prob = np.zeros(0, np.int64), np.zeros(0)
            value = 0.0 if math.isnan(res.root_value) else float(np.clip(res.root_value, -1.0, 1.0))
            shares = res.root_shares
            if shares is not None and not np.isfinite(shares).all():
                shares = None
            surprise = policy_surprise(target, res.prior) if self.surprise_weighting and len(idx) else 0.0
            self._note_position(game, (idx, prob), shares, full=full, surprise=surprise)
            # Resignation is a two-player rule: with more, one side giving up does not end the game.
            # Against the outside opponent the network plays every game out.
            if (self.resign_threshold > 0 and res.searched and self.rules.players == 2
                    and not game.opponent_seats):
                if self._resign_check(game, mover, value):
                    # the side resigns here: this position ends the game unrecorded
                    game.pieces.pop()
                    game.to_move.pop()
                    game.policies.pop()
                    game.root_shares.pop()
                    game.full.pop()
                    game.surprise.pop()
                    self._resigned += 1
                    return self._finish(g, scores=(0.0, 1.0) if mover == 0 else (1.0, 0.0))
        return self._play(g, res.move)

    def _play(self, g: int, move: Any) -> GameRecord | None:
        """Play ``move`` in game ``g``; a record when the game ended."""
        game = self._games[g]
        assert game is not None
        game.state.play(move)
        game.tracker.play(move)
        self.search.play(g, move)
        self._moves += 1
        if game.state.is_terminal():
            return self._finish(g, scores=game.state.scores())
        return None

    def _resign_check(self, game: _Game, mover: int, value: float) -> bool:
        """Update the low-value streak of ``mover``; True when it resigns now."""
        if value < -self.resign_threshold:
            game.low[mover] += 1
        else:
            game.low[mover] = 0
        if game.low[mover] < 2:
            return False
        if game.playout:
            game.would_resign[mover] = True
            return False
        return True

    def _start_history(self, tracker: PieceTracker, ply: int) -> np.ndarray:
        """Piece lists of the states before the current one, newest first (the whole random
        opening, capped at the record format's limit)."""
        depth = min(ply, MAX_START_HISTORY)
        return tracker.piece_lists(depth + 1)[1:]

    def _finish(self, g: int, *, scores: Any) -> GameRecord | None:
        game = self._games[g]
        assert game is not None
        self._games[g] = None
        plies = game.state.ply
        self._finished += 1
        self._plies_total += plies
        if len(set(scores)) == 1:  # a draw
            self._wins[2] += 1
        elif scores[0] > 0 or scores[1] > 0:  # seat 0 or seat 1 among the winners
            self._wins[0 if scores[0] > 0 else 1] += 1
        if len(game.versions_seen) > 1:
            self._spanning += 1
        if game.opponent_seats:
            self._count_opponent_result(game.opponent_seats, scores)
        if game.playout:
            self._playout_games += 1
            for side in (0, 1):
                if game.would_resign[side]:
                    self._would_resign += 1
                    lost = scores[side] < max(scores)
                    if not lost:
                        self._false_resign += 1
        if not game.pieces:  # ended inside the random opening (tiny boards): nothing to learn
            self._unrecorded += 1
            return None
        self._positions += len(game.pieces)
        full = np.asarray(game.full, dtype=bool)
        trained = full & np.array([len(idx) > 0 for idx, _ in game.policies], dtype=bool)
        return make_record(
            run_id=self.run_id,
            rules=self.rules,
            config_hash=self.config_hash,
            model_version=game.model_version,
            actor=self.actor,
            seed=game.seed,
            pieces=np.stack(game.pieces),
            to_move=game.to_move,
            policies=game.policies,
            scores=scores,
            root_shares=np.stack(game.root_shares),
            plies=plies,
            start_pieces=game.start_pieces,
            versions=self._versions,
            keep=None if full.all() else full,
            weight=surprise_weights(np.asarray(game.surprise), trained) if self.surprise_weighting else None,
        )

    def _count_opponent_result(self, seats: tuple[int, ...], scores: Any) -> None:
        """A game against the outside opponent: the network won (no opponent seat among the
        winners), drew (all level) or lost (an opponent seat among the winners)."""
        if len(set(scores)) == 1:
            self._opponent_results[1] += 1
        else:
            self._opponent_results[2 if any(scores[s] == max(scores) for s in seats) else 0] += 1

    # -- metrics ---------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters since construction, JSON-ready."""
        finished = self._finished
        net_s = self._timed.seconds
        return {
            "actor": self.actor,
            "model_version": self.model_version,
            "games_in_flight": self.active_games(),
            "games_finished": finished,
            "games_unrecorded": self._unrecorded,
            "games_spanning_versions": self._spanning,
            "positions": self._positions,
            "steps": self._steps,
            "moves": self._moves,
            "searches": self._searches,
            "fast_searches": self._fast_searches,
            "simulations": self._simulations,
            "evaluator_calls": self._timed.calls,
            "evaluator_rows": self._timed.rows,
            "mean_game_plies": self._plies_total / finished if finished else 0.0,
            "wins_first": self._wins[0],
            "wins_second": self._wins[1],
            "draws": self._wins[2],
            "resigned": self._resigned,
            "playout_games": self._playout_games,
            "would_resign": self._would_resign,
            "false_resignations": self._false_resign,
            "false_resignation_rate": self._false_resign / self._would_resign if self._would_resign else 0.0,
            "opponent_moves": self._opponent_moves,
            "opponent_results": list(self._opponent_results),
            "step_s": self._step_s,
            "search_s": self._search_s,
            "network_s": net_s,
            "other_s": max(0.0, self._step_s - self._search_s - net_s),
            "simulations_per_s": self._simulations / self._step_s if self._step_s else 0.0,
            "evaluations_per_s": self._timed.rows / self._step_s if self._step_s else 0.0,
            "eval_cache_lookups": self.cache.lookups if self.cache is not None else 0,
            "eval_cache_hits": self.cache.hits if self.cache is not None else 0,
            "eval_cache_hit_rate": self.cache.hit_rate if self.cache is not None else 0.0,
        }
