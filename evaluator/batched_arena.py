"""Matches with many games in flight: one batched evaluator call per simulation round.

:func:`evaluator.arena.play_match` plays one game at a time and a network player searches one
position at a time, so every simulation costs a network call on a batch of one.
:func:`play_batched_match` plays up to ``parallel`` games of the same match at once. Each *search
side* owns one :class:`ccengine.search.BatchedSearch` with ``parallel`` slots (slot ``s`` belongs
to whichever game runs in slot ``s``); whenever games wait on that side, they are all searched
together by one ``search(evaluator, games=[...])``, which asks the evaluator once per simulation
round for the leaves of every one of those games. Baseline *player sides* (``greedy``, ``random``,
``greedy-stochastic``, any registered SPEC) choose per position in Python, as in the arena.

Protocol and seeds are the arena's (:func:`evaluator.arena.game_seeds`, ``a_seat_of``,
``opening_move``): game ``i`` of the match is the same game whichever slot or batch it ran in.

- A player side is reset with the game's seed (``reset(a_seed)``), exactly as the arena does,
  so matches between player sides give the arena's results bit for bit.
- A search side plays as :class:`ccengine.search_player.SearchPlayer` (the ``mcts`` SPEC): a
  fresh tree at every move (no tree reuse), no noise, the most visited move, ties broken by a
  per-move generator drawn from the game's own generator ``default_rng(side_seed)``, history
  piece lists tracked from the start of the game. A search in a batch equals the search alone
  (each tree has its own generator), so with an evaluator whose output for a row depends on
  that row only (``UniformEvaluator``; a network up to float rounding between batch sizes) the
  results do not depend on ``parallel`` and equal the arena's ``mcts:sims=S`` player's.
  ``RolloutEvaluator`` draws its playouts from one stream shared by the batch, so its games
  depend on the batching (still reproducible for a fixed ``parallel``).

Games are started in index order as slots free up; ``on_game(pair, game_in_pair, a_result)``
fires as each game finishes (order of completion), and ``should_stop()`` (checked after every
finished game) ends the match at once, abandoning the games in flight: a gate that has decided
needs no more games. The :class:`MatchResult` then covers the finished games only (``games`` is
their number, ``a_results`` in game-index order).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from ccengine.encoding import PieceTracker
from ccengine.engines import new_state
from ccengine.players import Player, make_player, parse_spec
from ccengine.rules import Rules
from ccengine.search import BatchedSearch, Evaluator, SearchConfig, UniformEvaluator
from learner.model_files import resolve_model_source

from .arena import GameRecord, MatchResult, _MatchSpec, a_seat_of, game_seeds, opening_move, summarize

__all__ = [
    "SearchSide",
    "Side",
    "SpecSide",
    "network_side",
    "play_batched_match",
    "search_side",
    "spec_side",
]

Move = tuple[int, int]


# ---------------------------------------------------------------------------------------------
# Sides
# ---------------------------------------------------------------------------------------------


@dataclass(eq=False)
class SearchSide:
    """A tree-search player over one evaluator, searched in batches across games.

    Build with :func:`search_side` or :func:`network_side`. The counters add up over every match
    the side plays (for throughput figures).
    """

    evaluator: Evaluator
    config: SearchConfig
    history: int = 1
    """Piece-list states handed to the evaluator (the network's input history)."""
    name: str = "search"
    positions: int = 0
    """Leaves evaluated (evaluator rows) so far."""
    batches: int = 0
    """Evaluator calls so far."""
    searches: int = 0
    """Moves searched so far."""
    _searches: dict[tuple[Any, int], BatchedSearch] = field(default_factory=dict, repr=False)

    def batched_search(self, rules: Rules, slots: int) -> BatchedSearch:
        """This side's search with ``slots`` slots for ``rules`` (kept between matches)."""
        key = (rules, slots)
        search = self._searches.get(key)
        if search is None:
            search = self._searches[key] = BatchedSearch(rules, slots, self.config, history=self.history)
        return search


@dataclass(eq=False)
class SpecSide:
    """A player SPEC (``greedy``, ``random``, ``greedy-stochastic``, ...).

    Baseline players choose per position in Python, one player object per slot, reset with each
    game's seed. With ``batched`` (default), an ``mcts`` SPEC (uniform prior, or ``model=``) is
    played as a :class:`SearchSide` instead (same moves, batched evaluation); other search SPECs
    (``mcts-rollout``) run one position at a time, exactly as in the arena.
    """

    spec: str
    batched: bool = True
    _resolved: dict[Any, SearchSide | None] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.spec.strip()

    def search_side_for(self, rules: Rules) -> SearchSide | None:
        """The batched search side this SPEC stands for on ``rules``, or None (a per-position
        player). Raises ``PlayerSpecError`` for a bad SPEC."""
        if rules in self._resolved:
            return self._resolved[rules]
        kind, options = parse_spec(self.spec)
        side: SearchSide | None = None
        if self.batched and kind.name == "mcts":
            sims = int(options.get("sims", 175))  # type: ignore[call-overload]
            c = float(options.get("c", 3.5))  # type: ignore[arg-type]
            model = str(options.get("model", ""))
            if not model:
                side = search_side(UniformEvaluator(), simulations=sims, history=1, c_puct=c, name=self.name)
            else:
                side = network_side(
                    rules, resolve_model_source(rules, model), simulations=sims, c_puct=c,
                    device=str(options.get("device", "cpu")), name=self.name,
                )
        else:
            make_player(self.spec, rules)  # fail now on a bad SPEC or model
        self._resolved[rules] = side
        return side


#: What :func:`play_batched_match` takes for each side (a bare string is a :class:`SpecSide`).
Side = Union[SearchSide, SpecSide, str]


def _evaluation_config(simulations: int, c_puct: float, base: SearchConfig | None = None) -> SearchConfig:
    """The match-play search: SearchPlayer's settings (no noise, no random or exploratory plies,
    the most visited move, a fresh tree each move); ``base`` supplies the other knobs."""
    return (base or SearchConfig()).replace(
        num_simulations=int(simulations),
        c_puct=float(c_puct),
        root_noise=False,
        random_opening_plies=0,
        explore_plies=0,
        temperature=0.0,
        reuse_tree=False,
    )


def search_side(
    evaluator: Evaluator,
    *,
    simulations: int,
    history: int | None = None,
    c_puct: float = 3.5,
    name: str | None = None,
    config: SearchConfig | None = None,
) -> SearchSide:
    """A search side over any evaluator (``UniformEvaluator``, ``RolloutEvaluator``, a network).

    ``history``: piece-list states per leaf (default: the evaluator's ``encoding.history``, else
    1). ``config``: a base :class:`SearchConfig` for the other knobs (fpu, parent visits...); the
    evaluation settings and ``simulations``/``c_puct`` override it.
    """
    if history is None:
        encoding = getattr(evaluator, "encoding", None)
        history = int(getattr(encoding, "history", 1))
    if history < 1:
        raise ValueError(f"history={history} must be at least 1")
    cfg = _evaluation_config(simulations, c_puct, config)
    return SearchSide(evaluator, cfg, history, name or f"search:sims={cfg.num_simulations}")


def network_side(
    rules: Rules,
    weights_or_path: Any,
    *,
    simulations: int,
    net_config: Any = None,
    encoding: str | None = None,
    history: int | None = None,
    c_puct: float = 3.5,
    device: str = "cpu",
    threads: int | None = None,
    name: str | None = None,
) -> SearchSide:
    """A search side guided by a network.

    ``weights_or_path``:

    - a path (network file or learner checkpoint) or a ``net_state`` dict (with ``"config"``):
      loaded with :func:`learner.network_evaluator.load_network_evaluator`; the file's own
      encoding/history win, ``encoding``/``history`` must agree with them;
    - a bare ``state_dict`` (tensors by name): loaded into ``PolicyValueNet(net_config)``;
    - a ``PolicyValueNet``, or a ``learner.inference.Inference`` (shared: its
      ``load_state_dict`` later swaps the side's weights);
    - None: an untrained network of ``net_config`` (default: the ``paper`` size), for benchmarks.

    Without a file to say so, the encoding is ``encoding`` or ``general`` (hopzero's network
    input), its history ``history`` or the encoding's default. ``threads`` (None: leave torch's
    setting alone) is process-wide, see ``Inference``.
    """
    from ccengine.encoding import encoding_for
    from learner.inference import Inference
    from learner.model import NetConfig, PolicyValueNet
    from learner.network_evaluator import NetworkEvaluator, load_network_evaluator

    if isinstance(weights_or_path, (str, os.PathLike)) or (
        isinstance(weights_or_path, Mapping) and "config" in weights_or_path
    ):
        evaluator = load_network_evaluator(
            rules, weights_or_path, encoding=encoding, history=history, threads=threads, device=device
        )
        is_file = not isinstance(weights_or_path, Mapping)
        default_name = f"network:{os.fspath(weights_or_path)}" if is_file else "network"
    else:
        enc = encoding_for(rules, encoding or "general", history=history)
        if isinstance(weights_or_path, Inference):
            inference = weights_or_path
        else:
            if isinstance(weights_or_path, PolicyValueNet):
                model = weights_or_path
            else:
                cfg = net_config if net_config is not None else NetConfig.for_rules(rules, enc.in_planes, "paper")
                model = PolicyValueNet(cfg)
                if weights_or_path is not None:
                    if not isinstance(weights_or_path, Mapping):
                        raise TypeError(
                            f"weights_or_path: expected a path, a dict of weights, a PolicyValueNet, an "
                            f"Inference or None, got {type(weights_or_path).__name__}"
                        )
                    model.load_state_dict(weights_or_path)
            inference = Inference(model, device=device, threads=threads)
        evaluator = NetworkEvaluator(rules, enc, inference)  # checks the policy size
        if enc.in_planes != inference.config.in_planes:
            raise ValueError(
                f"the network takes {inference.config.in_planes} input planes; encoding {enc.name!r} "
                f"with history {enc.history} gives {enc.in_planes}"
            )
        default_name = "network"
    return search_side(
        evaluator,
        simulations=simulations,
        history=evaluator.encoding.history,
        c_puct=c_puct,
        name=name or f"{default_name},sims={simulations}",
    )


def spec_side(spec: str, *, batched: bool = True) -> SpecSide:
    """A player SPEC as a side (see :class:`SpecSide`); a bare string passed to
    :func:`play_batched_match` means the same."""
    return SpecSide(str(spec), batched=batched)


# ---------------------------------------------------------------------------------------------
# The match
# ---------------------------------------------------------------------------------------------


class _Game:
    """One game in flight in one slot."""

    __slots__ = (
        "index", "slot", "a_seat", "state", "tracker", "opening_rng",
        "side_of_seat", "players", "rngs", "positions", "legal", "waiting_legal",
    )

    def __init__(self, index: int, slot: int) -> None:
        self.index = index
        self.slot = slot
        self.a_seat = a_seat_of(index)
        self.positions = 0
        self.legal = 0
        self.waiting_legal = 0  # legal moves of the position waiting on a search


class _Match:
    """The scheduler: slots, games in flight, the search sides' batches."""

    def __init__(
        self,
        rules: Rules,
        sides: tuple[SpecSide | SearchSide, SpecSide | SearchSide],
        *,
        games: int,
        seed: int,
        random_opening: int,
        parallel: int,
        on_game: Callable[[int, int, int], Any] | None,
        should_stop: Callable[[], bool] | None,
    ) -> None:
        self.rules = rules
        self.games = games
        self.random_opening = random_opening
        self.parallel = parallel
        self.on_game = on_game
        self.should_stop = should_stop
        self.seeds = game_seeds(seed, games)
        # Per side (0 = A, 1 = B): the search side it plays as, or the SPEC of its players.
        self.search: list[SearchSide | None] = []
        self.specs: list[str | None] = []
        for side in sides:
            s = side.search_side_for(rules) if isinstance(side, SpecSide) else side
            self.search.append(s)
            self.specs.append(side.spec if isinstance(side, SpecSide) and s is None else None)
        # One player object per slot and side (built on first use, reset every game).
        self.players: list[list[Player | None]] = [[None] * parallel for _ in range(2)]
        self.needs_tracker = any(s is not None for s in self.search)
        self.active: dict[int, _Game] = {}
        self.free = list(range(parallel - 1, -1, -1))  # pop() gives the lowest slot
        self.next_index = 0
        self.records: list[GameRecord] = []
        self.stopped = False

    # -- games ------------------------------------------------------------------------------

    def _start(self, index: int, slot: int) -> _Game:
        g = _Game(index, slot)
        opening_seed, a_seed, b_seed = self.seeds[index]
        g.state = new_state(self.rules, engine="cython")
        g.tracker = PieceTracker(self.rules, g.state.board, g.state.to_move) if self.needs_tracker else None
        g.opening_rng = np.random.default_rng(opening_seed)
        g.players = [None, None]
        g.rngs = [None, None]
        for side, side_seed in ((0, a_seed), (1, b_seed)):
            if self.search[side] is not None:
                g.rngs[side] = np.random.default_rng(side_seed)  # SearchPlayer.reset(seed)
            else:
                player = self.players[side][slot]
                if player is None:
                    spec = self.specs[side]
                    assert spec is not None
                    player = self.players[side][slot] = make_player(spec, self.rules)
                player.reset(side_seed)
                g.players[side] = player
        # side_of_seat[seat]: 0 (A) or 1 (B)
        g.side_of_seat = (0, 1) if g.a_seat == 0 else (1, 0)
        return g

    def _play(self, g: _Game, move: Move, legal: int) -> None:
        g.positions += 1
        g.legal += legal
        g.state.play(move)
        if g.tracker is not None:
            g.tracker.play(move)

    def _advance(self, g: _Game) -> int | None:
        """Play ``g`` until a search side must move (returns that side) or the game ends (None)."""
        state = g.state
        while not state.is_terminal():
            moves = state.legal_moves()
            move = opening_move(state, moves, g.opening_rng, self.random_opening)
            if move is None:
                side = g.side_of_seat[state.to_move]
                player = g.players[side]
                if player is None:
                    g.waiting_legal = len(moves)
                    return side
                move = player.select(state)
            self._play(g, move, len(moves))
        self._finish(g)
        return None

    def _finish(self, g: _Game) -> None:
        state = g.state
        record = GameRecord(g.index, g.a_seat, int(state.result()), int(state.ply), g.positions, g.legal)
        self.records.append(record)
        del self.active[g.slot]
        self.free.append(g.slot)
        if self.on_game is not None:
            self.on_game(g.index // 2, g.index % 2, record.a_result)
        if self.should_stop is not None and self.should_stop():
            self.stopped = True

    def _fill(self) -> None:
        """Start games in the free slots (each played up to its first search move)."""
        while self.free and self.next_index < self.games and not self.stopped:
            slot = self.free.pop()
            g = self._start(self.next_index, slot)
            self.next_index += 1
            self.active[slot] = g
            self._advance(g)  # may finish the game at once (player sides only) and free the slot

    # -- searching --------------------------------------------------------------------------

    def _search_turn(self, side_obj: SearchSide, search: BatchedSearch) -> None:
        """Search every game waiting on ``side_obj`` in one batch and play the chosen moves."""
        waiting: list[tuple[_Game, int]] = []
        for g in self.active.values():
            if g.state.is_terminal():
                continue
            side = g.side_of_seat[g.state.to_move]
            if self.search[side] is side_obj and g.state.ply >= 2 * self.random_opening:
                waiting.append((g, side))
        if not waiting:
            return
        waiting.sort(key=lambda item: item[0].slot)
        for g, side in waiting:
            rng = g.rngs[side]
            game_rng = np.random.default_rng(int(rng.integers(2**63)))  # as SearchPlayer.think
            history = g.tracker.piece_lists(side_obj.history).astype(np.int8)
            search.set_root(g.slot, g.state, history, rng=game_rng)
        rounds, leaves = search.rounds, search.leaves
        results = search.search(side_obj.evaluator, [g.slot for g, _ in waiting])
        side_obj.batches += search.rounds - rounds
        side_obj.positions += search.leaves - leaves
        side_obj.searches += len(waiting)
        for g, _ in waiting:
            result = results[g.slot]
            assert result is not None
            self._play(g, result.move, g.waiting_legal)
            self._advance(g)
            if self.stopped:
                return

    def run(self) -> list[GameRecord]:
        turns: list[tuple[SearchSide, BatchedSearch]] = []
        for s in self.search:
            if s is not None and all(s is not t for t, _ in turns):  # one batch when A is B
                turns.append((s, s.batched_search(self.rules, self.parallel)))
        while True:
            self._fill()
            if self.stopped or not self.active:
                break
            for side_obj, search in turns:
                self._search_turn(side_obj, search)
                if self.stopped:
                    break
                self._fill()
            if self.stopped:
                break
        return sorted(self.records, key=lambda r: r.index)


def _as_side(side: Side) -> SpecSide | SearchSide:
    if isinstance(side, (SpecSide, SearchSide)):
        return side
    if isinstance(side, str):
        return spec_side(side)
    raise TypeError(f"a side is a SearchSide, a SpecSide or a SPEC string, not {type(side).__name__}")


def play_batched_match(
    rules: Rules,
    a: Side,
    b: Side,
    *,
    games: int,
    seed: int,
    random_opening: int = 3,
    parallel: int = 32,
    on_game: Callable[[int, int, int], Any] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> MatchResult:
    """Play ``games`` games of ``a`` against ``b`` under the arena's protocol and seeds, up to
    ``parallel`` at once, each search side's waiting games searched in one batch.

    ``on_game(pair, game_in_pair, a_result)`` fires as each game finishes (``a_result`` is
    ``+1/0/-1`` from A's side: what ``Gate.record`` takes when A is the candidate).
    ``should_stop()`` is asked after each finished game; True ends the match at once (the games
    in flight are abandoned) and the result covers the finished games only.
    """
    if games < 1:
        raise ValueError(f"games={games} must be at least 1")
    if random_opening < 0:
        raise ValueError(f"random_opening={random_opening} must not be negative")
    if parallel < 1:
        raise ValueError(f"parallel={parallel} must be at least 1")
    side_a, side_b = _as_side(a), _as_side(b)
    match = _Match(
        rules,
        (side_a, side_b),
        games=games,
        seed=int(seed),
        random_opening=random_opening,
        parallel=min(parallel, games),
        on_game=on_game,
        should_stop=should_stop,
    )
    records = match.run()
    spec = _MatchSpec(rules, side_a.name, side_b.name, int(seed), games, random_opening, "cython")
    return summarize(spec, records)
