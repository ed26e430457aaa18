"""The scheduler of a match: games in flight in slots, each search player's waiting games searched
together.

A side is a player SPEC, parsed once by the player registry (``learner.players``) and built once
(again for each further slot of a player that chooses per position), or a player object already built
(the evaluator's networks, from weights in memory). A side whose player is a batchable
:class:`ccengine.search_player.SearchPlayer` (one evaluator for every game: ``mcts``, with or
without a model) is a *search side*: whenever games wait on it, they are all searched together by
one batched search of the player's own settings (``SearchPlayer.new_batch``), one evaluator call
per simulation round for the leaves of every one of those games; one search player may fill
several seats (the gate's N-1 copies of the best) and is batched over all of them. The other
players choose per position, one player object per slot, reset with each game's seed; a player
that says it is ``stateless`` (its move a function of the game alone: ``dqn``) is one object for
every slot.

When the games are the same whatever ``parallel``:

- Players that choose per position are reset with the game's seed, so their games do not depend
  on the slot or on the games beside them.
- A search side plays as ``SearchPlayer.select`` would: a fresh tree at every move (or, for a
  player that keeps its tree, ``reuse=1``, the subtree its last search of the game left, moved on
  by every move played since), no noise, the most visited move, ties broken by a per-move
  generator drawn from the game's own generator, history piece lists tracked from the start of
  the game. A search in a batch equals the search alone (each tree has its own generator), so with
  an evaluator whose output for a row depends on that row only the games do not depend on
  ``parallel``. ``RolloutEvaluator`` given as one object draws its playouts from one stream shared
  by the batch, so its games depend on the batching; the ``mcts-rollout`` SPEC builds its
  evaluator from each game's seed and chooses per position, so its games do not.

Games start in index order as slots free up; ``on_game(set, rotation, scores)`` fires as each
game finishes (``scores`` by player, match order), and ``should_stop()`` (asked after every
finished game) ends the match at once, abandoning the games in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Union

import numpy as np

from ccengine.encoding import PieceTracker
from ccengine.engines import new_state
from ccengine.game_loop import opening_move
from ccengine.notation import Position
from ccengine.players import Player
from ccengine.rules import Rules
from ccengine.search import BatchedSearch
from ccengine.search_player import SearchPlayer
from learner.players import PlayerSpec, parse_spec

from .results import MatchGame
from .schedule import game_seeds, set_seatings

__all__ = ["Side", "Sides", "Scheduler"]

Move = tuple[int, int]

#: What a match takes for each player: a SPEC (text, or parsed), or a player already built.
Side = Union[str, PlayerSpec, Player]


class Sides:
    """One player of a match: its name, and the search player it batches or the players (one per
    slot) that choose per position."""

    def __init__(self, side: Side, rules: Rules, *, parallel: int, engine: str) -> None:
        self.spec: PlayerSpec | None = None
        if isinstance(side, (str, PlayerSpec)):
            self.spec = parse_spec(side) if isinstance(side, str) else side  # a bad SPEC fails here, in the caller
            self.name = self.spec.text
            player = self.spec.build(rules)  # a bad model too
        elif isinstance(side, Player):
            self.name, player = str(side.name), side
            own = getattr(player, "rules", rules)
            if own != rules:
                raise ValueError(f"player {self.name!r} is built for {own.name}, this match plays {rules.name}")
        else:
            raise TypeError(f"a player of a match is a SPEC or a player, not {type(side).__name__}")
        if isinstance(player, SearchPlayer) and engine != "cython":
            raise ValueError(f"player {self.name!r} searches, which needs the cython engine, not {engine!r}")
        self.search = player if isinstance(player, SearchPlayer) and player.batchable else None
        shared = self.search is None and bool(getattr(player, "stateless", False))
        if self.search is None and self.spec is None and parallel > 1 and not shared:
            raise ValueError(
                f"player {self.name!r} chooses per position and is one object: it plays one game at a "
                "time (parallel=1); pass its SPEC to play several"
            )
        # Per slot, the player that chooses per position (built on first use, reset every game).
        self.players: list[Player | None] = [player if shared else None] * parallel
        if self.search is None:
            self.players[0] = player

    def player(self, rules: Rules, slot: int) -> Player:
        """The player of ``slot`` (a SPEC's player is built again for each further slot)."""
        player = self.players[slot]
        if player is None:
            assert self.spec is not None
            player = self.players[slot] = self.spec.build(rules)
        return player


class _Game:
    """One game in flight in one slot."""

    __slots__ = (
        "index", "slot", "seats", "state", "tracker", "opening_rng",
        "side_of_seat", "players", "rngs", "positions", "legal", "waiting_legal", "moves", "followed",
    )

    def __init__(self, index: int, slot: int, seats: tuple[int, ...]) -> None:
        self.index = index
        self.slot = slot
        self.seats = seats  # seats[player]
        self.positions = 0
        self.legal = 0
        self.waiting_legal = 0  # legal moves of the position waiting on a search
        self.moves: list[Move] = []
        # Per search turn of the match: whether that search's tree follows this game move by move
        # (the player keeps its tree, ``reuse=1``, and has searched this game).
        self.followed: list[bool] = []


class Scheduler:
    """Slots, games in flight, the search sides' batches."""

    def __init__(
        self, rules: Rules, sides: tuple[Sides, ...], *, games: int, seed: int, random_opening: int,
        parallel: int, engine: str, keep_moves: bool = False, start_positions: Sequence[Position] = (),
        seating: str = "rotations",
    ) -> None:
        self.rules = rules
        self.seatings = set_seatings(len(sides), seating)
        self.set_size = len(self.seatings)
        self.start_positions = tuple(start_positions)
        self.sides = sides
        self.n = len(sides)
        self.random_opening = random_opening
        self.parallel = parallel
        self.engine = engine
        self.keep_moves = keep_moves
        self.seeds = game_seeds(seed, games, self.n, self.set_size)
        self.needs_tracker = any(side.search is not None for side in sides)
        # One batched search per search player (one for all the seats it holds).
        self.turns: list[tuple[SearchPlayer, BatchedSearch]] = []
        for side in sides:
            p = side.search
            if p is not None and all(p is not q for q, _ in self.turns):
                self.turns.append((p, p.new_batch(parallel)))

    # -- games ------------------------------------------------------------------------------

    def _start(self, index: int, slot: int) -> _Game:
        g = _Game(index, slot, self.seatings[index % self.set_size])
        opening_seed, *side_seeds = self.seeds[index]
        starts = self.start_positions
        start = starts[(index // self.set_size) % len(starts)] if starts else None
        g.state = new_state(self.rules, start, engine=self.engine)
        g.tracker = PieceTracker(self.rules, g.state.board, g.state.to_move) if self.needs_tracker else None
        g.opening_rng = np.random.default_rng(opening_seed)
        g.players = [None] * self.n
        g.rngs = [None] * self.n
        g.followed = [False] * len(self.turns)
        for side, side_seed in enumerate(side_seeds):
            if self.sides[side].search is not None:
                g.rngs[side] = np.random.default_rng(side_seed)  # SearchPlayer.reset(seed)
            else:
                player = self.sides[side].player(self.rules, slot)
                player.reset(side_seed)
                g.players[side] = player
        side_of_seat = [0] * self.n
        for side, seat in enumerate(g.seats):
            side_of_seat[seat] = side
        g.side_of_seat = tuple(side_of_seat)
        return g

    def _play(self, g: _Game, move: Move, legal: int) -> None:
        g.positions += 1
        g.legal += legal
        g.moves.append((int(move[0]), int(move[1])))
        g.state.play(move)
        if g.tracker is not None:
            g.tracker.play(move)
        for turn, (_, search) in enumerate(self.turns):
            if g.followed[turn]:
                search.play(g.slot, move)

    def _advance(self, g: _Game) -> None:
        """Play ``g`` until a search side must move or the game ends."""
        state = g.state
        while not state.is_terminal():
            moves = state.legal_moves()
            move = opening_move(state, moves, g.opening_rng, self.random_opening)
            if move is None:
                player = g.players[g.side_of_seat[state.to_move]]
                if player is None:
                    g.waiting_legal = len(moves)
                    return
                move = player.select(state)
            self._play(g, move, len(moves))
        self._finish(g)

    def _finish(self, g: _Game) -> None:
        state = g.state
        game = MatchGame(g.index, g.seats, tuple(float(x) for x in state.scores()), int(state.ply), g.positions,
                         g.legal, tuple(g.moves) if self.keep_moves else (), str(state.end_reason))
        self.records.append(game)
        del self.active[g.slot]
        self.free.append(g.slot)
        if self.on_game is not None:
            self.on_game(g.index // self.set_size, g.index % self.set_size, game.player_scores)
        if self.should_stop is not None and self.should_stop():
            self.stopped = True

    def _fill(self) -> None:
        """Start games in the free slots (each played up to its first search move)."""
        while self.free and not self.stopped:
            index = next(self.pending, None)
            if index is None:
                return
            slot = self.free.pop()
            g = self._start(index, slot)
            self.active[slot] = g
            self._advance(g)  # may finish the game at once (per-position players) and free the slot

    # -- searching --------------------------------------------------------------------------

    def _search_turn(self, turn: int) -> None:
        """Search every game waiting on turn ``turn``'s player in one batch and play the chosen
        moves. A player that keeps its tree (``reuse``) searches on from the subtree its last
        search of the game left, moved on by the moves played since."""
        player, search = self.turns[turn]
        waiting: list[tuple[_Game, int]] = []
        for g in self.active.values():
            if g.state.is_terminal():
                continue
            side = g.side_of_seat[g.state.to_move]
            if self.sides[side].search is player and g.state.ply >= self.n * self.random_opening:
                waiting.append((g, side))
        if not waiting:
            return
        waiting.sort(key=lambda item: item[0].slot)
        for g, side in waiting:
            game_rng = np.random.default_rng(int(g.rngs[side].integers(2**63)))  # as SearchPlayer.think
            if not g.followed[turn]:
                history = g.tracker.piece_lists(player.history).astype(np.int8)
                search.set_root(g.slot, g.state, history, rng=game_rng)
                g.followed[turn] = player.config.reuse_tree
        results = player.search_batch(search, [g.slot for g, _ in waiting])
        for g, _ in waiting:
            result = results[g.slot]
            assert result is not None
            self._play(g, result.move, g.waiting_legal)
            self._advance(g)
            if self.stopped:
                return

    def run(
        self,
        indices: Iterable[int],
        *,
        on_game: Callable[[int, int, tuple[float, ...]], Any] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[MatchGame]:
        """Play the games ``indices`` (started in that order); the finished games by game index."""
        self.on_game, self.should_stop = on_game, should_stop
        self.pending: Iterator[int] = iter(indices)
        self.active: dict[int, _Game] = {}
        self.free = list(range(self.parallel - 1, -1, -1))  # pop() gives the lowest slot
        self.records: list[MatchGame] = []
        self.stopped = False
        while True:
            self._fill()
            if self.stopped or not self.active:
                break
            for turn in range(len(self.turns)):
                self._search_turn(turn)
                if self.stopped:
                    break
                self._fill()
            if self.stopped:
                break
        return sorted(self.records, key=lambda r: r.index)
