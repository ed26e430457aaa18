"""Matches between two players under the seed's evaluation protocol (RULES.md, seed section 4).

One runner, :func:`play_match`, plays every match: ``hopzero match`` with or without
``--parallel``, the evaluator's gate and its measurement against greedy. A side is a player
SPEC, built with ``make_player(spec, rules)`` (one parser, so a SPEC is the same player
everywhere: here, behind the engine protocol, in ``hopzero play``), or a player object already
built (the evaluator's networks, from weights in memory).

Protocol: in every game each side's first ``random_opening`` moves are uniformly random, and the
two players alternate who starts: in game ``i``, player A holds seat 0 (moves first) when ``i``
is even.

Seeding: games ``2p`` and ``2p + 1`` form pair ``p`` and take their randomness only from
``SeedSequence(seed).spawn(pairs)[p]``. Both games of a pair play the same random opening with
the seats swapped (fewer lucky openings in a short match, the same expectation), and each game
seeds A and B from its own streams. So a match is reproducible from its seed, and playing it on
several worker processes gives exactly the result of one.

Games in flight: up to ``parallel`` games are played at once (default one). A side whose player
is a :class:`ccengine.search_player.SearchPlayer` with one evaluator for every game
(``batchable``: ``mcts``, with or without a model) is a *search side*: whenever games wait on it,
they are all searched together by one :class:`ccengine.search.BatchedSearch` over the player's
evaluator and ``config``, one evaluator call per simulation round for the leaves of every one of
those games. The other players (``greedy``, ``random``, ``mcts-rollout``, any registered SPEC)
choose per position, one player object per slot, reset with each game's seed; a player that says
it is ``stateless`` (its move a function of the game alone: ``dqn``) is one object for every slot.

When results are the same whatever ``parallel``:

- Players that choose per position are reset with the game's seed (``reset(a_seed)``), so their
  games do not depend on the slot or on the games beside them.
- A search side plays as ``SearchPlayer.select`` would: a fresh tree at every move (or, for a
  player that keeps its tree, ``reuse=1``, the subtree its last search of the game left, moved on
  by every move played since), no noise, the most visited move, ties broken by a per-move
  generator drawn from the game's own generator ``default_rng(side_seed)``, history piece lists
  tracked from the start of the game. A search in
  a batch equals the search alone (each tree has its own generator), so with an evaluator whose
  output for a row depends on that row only (``UniformEvaluator``; a network up to float rounding
  between batch sizes) the games do not depend on ``parallel``. ``RolloutEvaluator`` given as one
  object draws its playouts from one stream shared by the batch, so its games depend on the
  batching (still reproducible for a fixed ``parallel``); the ``mcts-rollout`` SPEC builds its
  evaluator from each game's seed and chooses per position, so its games do not.

Games are started in index order as slots free up; ``on_game(pair, game_in_pair, a_result)``
fires as each game finishes (order of completion), and ``should_stop()`` (checked after every
finished game) ends the match at once, abandoning the games in flight: a gate that has decided
needs no more games. The :class:`MatchResult` then covers the finished games only (``games`` is
their number, ``a_results`` in game-index order).

N players (:func:`play_multi_match`): the same scheduler with N sides. A *set* of N games
replaces the pair: game ``i`` is rotation ``i % N`` of set ``i // N``, player ``k`` in seat
``(k + i) % N``; the set's games share the opening's stream and each game seeds each player
from its own (:func:`game_seeds`, which for two players gives the pairs' seeds above), and the
opening is each player's first ``random_opening`` moves. Everything said above of ``parallel``,
``workers``, search sides and stopping holds as for two.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Union

import numpy as np

from ccengine.encoding import PieceTracker
from ccengine.engines import new_state, state_class
from ccengine.players import Player, make_player
from ccengine.rules import Rules
from ccengine.search import BatchedSearch
from ccengine.search_player import SearchPlayer
from learner import dqn_player, network_player  # noqa: F401 - register the dqn and mcts SPECs

__all__ = [
    "MatchGame",
    "MatchResult",
    "MultiGame",
    "MultiMatchResult",
    "PlayerRecord",
    "Side",
    "SideRecord",
    "a_seat_of",
    "game_seeds",
    "opening_move",
    "play_game",
    "play_match",
    "play_multi_match",
    "seat_of",
]

Move = tuple[int, int]


@dataclass(frozen=True)
class MatchGame:
    """One finished game of a match (a row of the match, not a replay record: that is
    ``learner.records.GameRecord``)."""

    index: int
    a_seat: int
    """The seat (0 moves first) player A held."""
    result: int
    """``+1 / 0 / -1`` from seat 0's side."""
    plies: int
    positions: int
    """Positions where a move was chosen (the plies of the game)."""
    legal_moves: int
    """Legal moves summed over those positions."""
    moves: tuple[Move, ...] = ()
    """The moves played from the start position, in order (the random opening's included); empty
    unless the match was asked to keep them (``play_match(keep_moves=True)``)."""

    @property
    def a_result(self) -> int:
        """``+1 / 0 / -1`` from player A's side."""
        return self.result if self.a_seat == 0 else -self.result


@dataclass(frozen=True)
class SideRecord:
    """A's wins, losses and draws over some of the games."""

    wins: int = 0
    losses: int = 0
    draws: int = 0


@dataclass(frozen=True)
class MatchResult:
    """The outcome of a match; ``to_dict()`` is what ``hopzero match --json`` prints."""

    preset: str
    a: str
    b: str
    games: int
    seed: int
    random_opening: int
    a_wins: int
    b_wins: int
    draws: int
    mean_plies: float
    mean_legal_moves: float
    """Mean number of legal moves per position, over all positions played."""
    seat_wins: tuple[int, int]
    """Wins of whoever held seat 0 (moved first) and seat 1."""
    a_first: SideRecord
    """A's record in the games where A moved first."""
    a_second: SideRecord
    """A's record in the games where B moved first."""
    a_results: tuple[int, ...]
    """Each game's result from A's side, in game order (games 2p and 2p+1 share an opening)."""
    played: tuple[MatchGame, ...] = ()
    """Each finished game, in game order, with its moves when the match kept them
    (``evaluator.game_log`` writes them into the run directory)."""

    @property
    def a_score(self) -> float:
        """A's score per game, a draw counting one half."""
        return (self.a_wins + 0.5 * self.draws) / self.games if self.games else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (per-game results left out)."""
        d = asdict(self)
        d.pop("a_results")
        d.pop("played")
        d["seat_wins"] = list(self.seat_wins)
        d["a_score"] = round(self.a_score, 6)
        d["mean_plies"] = round(self.mean_plies, 4)
        d["mean_legal_moves"] = round(self.mean_legal_moves, 4)
        return d


@dataclass(frozen=True)
class MultiGame:
    """One finished game of an N-player match (:func:`play_multi_match`)."""

    index: int
    seats: tuple[int, ...]
    """The seat each player (in the match's order) held."""
    scores: tuple[float, ...]
    """The result vector by seat (``State.scores()``: sums to 1, winners share it, a draw splits it)."""
    plies: int
    positions: int
    legal_moves: int
    moves: tuple[Move, ...] = ()
    """As :attr:`MatchGame.moves`."""

    @property
    def player_scores(self) -> tuple[float, ...]:
        """The result vector by player, in the match's order."""
        return tuple(self.scores[seat] for seat in self.seats)

    @property
    def draw(self) -> bool:
        """Every player scored the same (a drawn game, or every player won)."""
        return len(set(self.scores)) == 1


@dataclass(frozen=True)
class PlayerRecord:
    """One player's games of an N-player match (all of them, or those from one seat)."""

    games: int = 0
    score: float = 0.0
    """The sum of its entries of the result vectors."""
    wins: int = 0
    """Games it won, alone or sharing the win (a drawn game is no win)."""
    draws: int = 0

    @property
    def mean_score(self) -> float:
        return self.score / self.games if self.games else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"games": self.games, "mean_score": round(self.mean_score, 6), "wins": self.wins, "draws": self.draws}


@dataclass(frozen=True)
class MultiMatchResult:
    """The outcome of an N-player match; ``to_dict()`` is what ``hopzero match --json`` prints."""

    preset: str
    players: tuple[str, ...]
    """The players' names in the match's order (a name may repeat: copies of one player)."""
    games: int
    seed: int
    random_opening: int
    mean_plies: float
    mean_legal_moves: float
    draws: int
    records: tuple[PlayerRecord, ...]
    """Per player (match order)."""
    by_seat: tuple[tuple[PlayerRecord, ...], ...]
    """``by_seat[k][seat]``: player ``k``'s games from that seat."""
    seat_scores: tuple[float, ...]
    """The mean score of each seat over the match (what moving first, second, ... is worth)."""
    played: tuple[MultiGame, ...] = ()
    """Each finished game, in game order."""

    def pairwise(self, i: int, j: int) -> tuple[int, int, int]:
        """``(wins, draws, losses)`` of player ``i`` against player ``j`` over the games: a game
        where ``i`` scored more is a win, the same score a draw (see :func:`pairwise_records`)."""
        wins = draws = losses = 0
        for g in self.played:
            si, sj = g.scores[g.seats[i]], g.scores[g.seats[j]]
            wins += si > sj
            draws += si == sj
            losses += si < sj
        return wins, draws, losses

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (per-game results left out)."""
        n = len(self.players)
        return {
            "preset": self.preset, "players": list(self.players), "games": self.games, "seed": self.seed,
            "random_opening": self.random_opening, "mean_plies": round(self.mean_plies, 4),
            "mean_legal_moves": round(self.mean_legal_moves, 4), "draws": self.draws,
            "results": [dict(player=name, **r.to_dict(), by_seat=[s.to_dict() for s in seats])
                        for name, r, seats in zip(self.players, self.records, self.by_seat)],
            "seat_scores": [round(x, 6) for x in self.seat_scores],
            "pairwise": [{"a": i, "b": j, **dict(zip(("wins", "draws", "losses"), self.pairwise(i, j)))}
                         for i in range(n) for j in range(i + 1, n)],
        }


def game_seeds(seed: int, games: int, players: int = 2) -> list[tuple[np.random.SeedSequence, ...]]:
    """Per game: the seed sequences of its opening and of each player (A, B, ...).

    Spawned from ``seed``, so independent of each other; the ``players`` games of a set (two: a
    pair) share the opening's sequence (see the module docstring). Set ``s`` spawns
    ``1 + players`` sequences (the opening, then one per game) and each game one per player, so
    for two players these are the pairs' seeds.
    """
    seeds: list[tuple[np.random.SeedSequence, ...]] = []
    for one_set in np.random.SeedSequence(seed).spawn(-(-games // players)):
        opening, *in_set = one_set.spawn(1 + players)
        for game in in_set:
            seeds.append((opening, *game.spawn(players)))
    return seeds[:games]


def a_seat_of(index: int) -> int:
    """The seat player A holds in game ``index``: 0 (moves first) in even games, 1 in odd ones."""
    return index % 2


def seat_of(index: int, player: int, players: int) -> int:
    """The seat (0 moves first) that player ``player`` (0 = A, 1 = B, ...) holds in game ``index``
    of an N-player match: game ``index`` is rotation ``index % players`` of its set, and in
    rotation ``r`` player ``k`` sits in seat ``(k + r) % players`` (two players: :func:`a_seat_of`)."""
    return (player + index % players) % players


def opening_move(
    state: Any, moves: list[Move], opening_rng: np.random.Generator, random_opening: int, players: int = 2
) -> Move | None:
    """The uniformly random move of ``state`` (its legal ``moves``, drawn with ``opening_rng``)
    while the game is in its random opening (the first ``players * random_opening`` plies: each
    player's first ``random_opening`` moves); None after."""
    if state.ply < players * random_opening:
        return moves[int(opening_rng.integers(len(moves)))]
    return None


def play_game(
    rules: Rules,
    player0: Player,
    player1: Player,
    *,
    opening_rng: np.random.Generator,
    random_opening: int = 3,
    engine: str = "cython",
) -> tuple[int, int, int, int]:
    """Play one game from the start; returns ``(result, plies, positions, legal_moves_total)``.

    The first ``random_opening`` moves of each side (the first ``2 * random_opening`` plies) are
    drawn uniformly with ``opening_rng``; then each player's ``select`` chooses. The players are
    not reset here: the caller owns their seeding.
    """
    state = new_state(rules, engine=engine)
    seats = (player0, player1)
    positions = 0
    legal_total = 0
    while not state.is_terminal():
        moves = state.legal_moves()
        positions += 1
        legal_total += len(moves)
        move = opening_move(state, moves, opening_rng, random_opening)
        if move is None:
            move = seats[state.to_move].select(state)
        state.play(move)
    return int(state.result()), int(state.ply), positions, legal_total


#: What :func:`play_match` takes for each side: a player SPEC, or a player already built.
Side = Union[str, Player]


# ---------------------------------------------------------------------------------------------
# Sides
# ---------------------------------------------------------------------------------------------


class _Side:
    """One side of a match: its name, and the search player it batches or the players (one per
    slot) that choose per position."""

    def __init__(self, side: Side, rules: Rules, *, parallel: int, engine: str) -> None:
        if isinstance(side, str):
            self.spec: str | None = side
            self.name = side.strip()
            player = make_player(side, rules)  # a bad SPEC or model fails here, in the caller
        elif isinstance(side, Player):
            self.spec, self.name, player = None, str(side.name), side
            own = getattr(player, "rules", rules)
            if own != rules:
                raise ValueError(f"player {self.name!r} is built for {own.name}, this match plays {rules.name}")
        else:
            raise TypeError(f"a side is a player SPEC or a player, not {type(side).__name__}")
        if isinstance(player, SearchPlayer) and engine != "cython":
            raise ValueError(f"player {self.name!r} searches, which needs the cython engine, not {engine!r}")
        self.search = player if isinstance(player, SearchPlayer) and player.batchable else None
        # A stateless player (its move a function of the game alone, e.g. ``dqn``) serves every slot.
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
        player = self.players[slot]
        if player is None:
            assert self.spec is not None
            player = self.players[slot] = make_player(self.spec, rules)
        return player


# ---------------------------------------------------------------------------------------------
# The match
# ---------------------------------------------------------------------------------------------


class _Game:
    """One game in flight in one slot."""

    __slots__ = (
        "index", "slot", "seats", "state", "tracker", "opening_rng",
        "side_of_seat", "players", "rngs", "positions", "legal", "waiting_legal", "moves", "followed",
    )

    def __init__(self, index: int, slot: int, n: int) -> None:
        self.index = index
        self.slot = slot
        self.seats = tuple(seat_of(index, k, n) for k in range(n))  # seats[side]
        self.positions = 0
        self.legal = 0
        self.waiting_legal = 0  # legal moves of the position waiting on a search
        self.moves: list[Move] = []
        # Per search turn of the match: whether that search's tree follows this game move by move
        # (the player keeps its tree, ``reuse=1``, and has searched this game).
        self.followed: list[bool] = []


class _Match:
    """The scheduler: slots, games in flight, the search sides' batches."""

    def __init__(
        self, rules: Rules, sides: tuple[_Side, ...], *, games: int, seed: int, random_opening: int,
        parallel: int, engine: str, keep_moves: bool = False, multi: bool = False,
    ) -> None:
        self.rules = rules
        self.sides = sides
        self.n = len(sides)
        self.multi = multi  # records are MultiGame (any number of players), else MatchGame (two)
        self.random_opening = random_opening
        self.parallel = parallel
        self.engine = engine
        self.keep_moves = keep_moves
        self.seeds = game_seeds(seed, games, self.n)
        self.needs_tracker = any(side.search is not None for side in sides)
        # One batched search per search player (one for all the sides it plays).
        self.turns: list[tuple[SearchPlayer, BatchedSearch]] = []
        for side in sides:
            p = side.search
            if p is not None and all(p is not q for q, _ in self.turns):
                self.turns.append((p, BatchedSearch(rules, parallel, p.config, history=p.history)))

    # -- games ------------------------------------------------------------------------------

    def _start(self, index: int, slot: int) -> _Game:
        g = _Game(index, slot, self.n)
        opening_seed, *side_seeds = self.seeds[index]
        g.state = new_state(self.rules, engine=self.engine)
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
        # side_of_seat[seat]: 0 (A), 1 (B), ...
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
            move = opening_move(state, moves, g.opening_rng, self.random_opening, self.n)
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
        moves = tuple(g.moves) if self.keep_moves else ()
        record: MatchGame | MultiGame
        if self.multi:
            record = MultiGame(g.index, g.seats, tuple(float(x) for x in state.scores()), int(state.ply),
                               g.positions, g.legal, moves)
        else:
            record = MatchGame(g.index, g.seats[0], int(state.result()), int(state.ply), g.positions, g.legal, moves)
        self.records.append(record)
        del self.active[g.slot]
        self.free.append(g.slot)
        if self.on_game is not None:
            self.on_game(*_callback_args(record, self.n))
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
            rng = g.rngs[side]
            game_rng = np.random.default_rng(int(rng.integers(2**63)))  # as SearchPlayer.think
            if not g.followed[turn]:
                history = g.tracker.piece_lists(player.history).astype(np.int8)
                search.set_root(g.slot, g.state, history, rng=game_rng)
                g.followed[turn] = player.config.reuse_tree
        rounds, leaves = search.rounds, search.leaves
        results = search.search(player.evaluator, [g.slot for g, _ in waiting])
        player.count(batches=search.rounds - rounds, positions=search.leaves - leaves, searches=len(waiting))
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
        on_game: Callable[..., Any] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[Any]:
        """Play the games ``indices`` (started in that order); their records by game index."""
        self.on_game, self.should_stop = on_game, should_stop
        self.pending: Iterator[int] = iter(indices)
        self.active: dict[int, _Game] = {}
        self.free = list(range(self.parallel - 1, -1, -1))  # pop() gives the lowest slot
        self.records: list[Any] = []
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


# ---------------------------------------------------------------------------------------------
# Worker processes (``workers``: one game at a time in each)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _WorkerMatch:
    """Everything a worker needs to play any game of a match (picklable: SPECs, not players)."""

    rules: Rules
    specs: tuple[str, ...]
    seed: int
    games: int
    random_opening: int
    engine: str
    keep_moves: bool
    multi: bool = False

    def build(self) -> _Match:
        sides = tuple(_Side(s, self.rules, parallel=1, engine=self.engine) for s in self.specs)
        return _Match(self.rules, sides, games=self.games, seed=self.seed, random_opening=self.random_opening,
                      parallel=1, engine=self.engine, keep_moves=self.keep_moves, multi=self.multi)


_worker: _Match | None = None  # the per-process match of a worker pool


def _init_worker(match: _WorkerMatch) -> None:
    global _worker
    _worker = match.build()


def _callback_args(record: MatchGame | MultiGame, n: int) -> tuple[Any, ...]:
    """What ``on_game`` receives for a finished game: ``(pair, game_in_pair, a_result)`` for two
    players (:func:`play_match`), ``(set, rotation, scores by player)`` for N (:func:`play_multi_match`)."""
    if isinstance(record, MultiGame):
        return record.index // n, record.index % n, record.player_scores
    return record.index // 2, record.index % 2, record.a_result


def _play_in_worker(index: int) -> MatchGame | MultiGame:
    assert _worker is not None
    [record] = _worker.run([index])
    return record


def _on_workers(
    match: _WorkerMatch, workers: int, indices: list[int], on_game: Callable[..., Any] | None,
    should_stop: Callable[[], bool] | None,
) -> list[Any]:
    """The match played on ``workers`` processes, one game at a time in each."""
    # A spawn context local to this call: no global start-method patch, and no fork of a parent
    # that may hold threads (torch) or a Ray connection.
    ctx = multiprocessing.get_context("spawn")
    chunk = max(1, min(16, len(indices) // (workers * 8)))
    records: list[Any] = []
    with ctx.Pool(min(workers, len(indices)), initializer=_init_worker, initargs=(match,)) as pool:
        for record in pool.imap(_play_in_worker, indices, chunksize=chunk):
            records.append(record)
            if on_game is not None:
                on_game(*_callback_args(record, len(match.specs)))
            if should_stop is not None and should_stop():
                break  # leaving the block terminates the pool
    return records


def _summarize(
    rules: Rules, names: tuple[str, str], seed: int, random_opening: int, records: list[MatchGame]
) -> MatchResult:
    """Fold game records (in game order) into a match result."""
    a_wins = sum(1 for r in records if r.a_result > 0)
    b_wins = sum(1 for r in records if r.a_result < 0)
    draws = len(records) - a_wins - b_wins

    def side(seat: int) -> SideRecord:
        mine = [r.a_result for r in records if r.a_seat == seat]
        return SideRecord(sum(x > 0 for x in mine), sum(x < 0 for x in mine), sum(x == 0 for x in mine))

    positions = sum(r.positions for r in records)
    return MatchResult(
        preset=rules.name,
        a=names[0],
        b=names[1],
        games=len(records),
        seed=seed,
        random_opening=random_opening,
        a_wins=a_wins,
        b_wins=b_wins,
        draws=draws,
        mean_plies=sum(r.plies for r in records) / len(records) if records else 0.0,
        mean_legal_moves=sum(r.legal_moves for r in records) / positions if positions else 0.0,
        seat_wins=(sum(r.result > 0 for r in records), sum(r.result < 0 for r in records)),
        a_first=side(0),
        a_second=side(1),
        a_results=tuple(r.a_result for r in records),
        played=tuple(records),
    )


def _check_options(*, games: int, random_opening: int, parallel: int, workers: int, engine: str) -> None:
    """The options every match checks before it plays (``ValueError`` naming the problem)."""
    if games < 1:
        raise ValueError(f"games={games} must be at least 1")
    if random_opening < 0:
        raise ValueError(f"random_opening={random_opening} must not be negative")
    if parallel < 1:
        raise ValueError(f"parallel={parallel} must be at least 1")
    if workers < 1:
        raise ValueError(f"workers={workers} must be at least 1")
    if workers > 1 and parallel > 1:
        raise ValueError(f"parallel={parallel} and workers={workers}: games run in flight in one process, or "
                         "one at a time on several, not both")
    state_class(engine)  # an unknown or missing engine fails here


def _summarize_multi(
    rules: Rules, names: tuple[str, ...], seed: int, random_opening: int, records: list[MultiGame]
) -> MultiMatchResult:
    """Fold N-player game records (in game order) into a match result."""
    n = len(names)

    def record(games: list[MultiGame], k: int) -> PlayerRecord:
        mine = [g.scores[g.seats[k]] for g in games]
        won = sum(1 for g, x in zip(games, mine) if x > 0 and not g.draw)
        return PlayerRecord(len(games), float(sum(mine)), won, sum(1 for g in games if g.draw))

    by_seat = tuple(tuple(record([g for g in records if g.seats[k] == seat], k) for seat in range(n))
                    for k in range(n))
    positions = sum(r.positions for r in records)
    count = len(records)
    return MultiMatchResult(
        preset=rules.name, players=names, games=count, seed=seed, random_opening=random_opening,
        mean_plies=sum(r.plies for r in records) / count if count else 0.0,
        mean_legal_moves=sum(r.legal_moves for r in records) / positions if positions else 0.0,
        draws=sum(1 for g in records if g.draw),
        records=tuple(record(records, k) for k in range(n)),
        by_seat=by_seat,
        seat_scores=tuple(sum(g.scores[seat] for g in records) / count if count else 0.0 for seat in range(n)),
        played=tuple(records),
    )


def play_multi_match(
    rules: Rules,
    players: Sequence[Side],
    *,
    games: int,
    seed: int,
    random_opening: int = 3,
    parallel: int = 1,
    workers: int = 1,
    engine: str = "cython",
    on_game: Callable[[int, int, tuple[float, ...]], Any] | None = None,
    should_stop: Callable[[], bool] | None = None,
    skip: Collection[int] = (),
    keep_moves: bool = False,
) -> MultiMatchResult:
    """Play ``games`` games of ``players`` (one per seat of ``rules``: a SPEC or a player each),
    every seat rotation in turn: game ``i`` is rotation ``i % N`` of set ``i // N`` (player ``k``
    in seat ``(k + i) % N``, :func:`seat_of`), the ``N`` games of a set share one random opening
    (each player's first ``random_opening`` moves), and each game seeds every player from its own
    stream, as :func:`play_match` does for two (module docstring): reproducible from ``seed``,
    the same for any ``parallel`` or ``workers``, search sides batched.

    One player object may fill several seats only if it searches (a batchable ``SearchPlayer``:
    the evaluator's best network as N-1 copies); a player that chooses per position is passed as
    a SPEC for that. ``on_game(set, rotation, scores)`` fires as each game finishes, ``scores``
    the result vector by player (match order). ``should_stop``, ``skip`` and ``keep_moves`` as in
    :func:`play_match`. Games counted as wins, draws and pairwise comparisons: see
    :class:`MultiMatchResult`.
    """
    if len(players) != rules.players:
        raise ValueError(f"the {rules.name} rules seat {rules.players} players; {len(players)} were given")
    _check_options(games=games, random_opening=random_opening, parallel=parallel, workers=workers, engine=engine)
    skipped = set(skip)
    indices = [i for i in range(games) if i not in skipped]
    if not indices:
        names = tuple(p.strip() if isinstance(p, str) else str(p.name) for p in players)
        return _summarize_multi(rules, names, int(seed), random_opening, [])
    parallel = min(parallel, len(indices))
    sides = tuple(_Side(p, rules, parallel=parallel, engine=engine) for p in players)
    names = tuple(side.name for side in sides)
    for k, p in enumerate(players):
        if not isinstance(p, str) and sides[k].search is None and any(q is p for q in players[:k]):
            raise ValueError(f"player {names[k]!r} chooses per position: one object cannot hold two seats "
                             "(pass its SPEC)")
    if workers > 1 and len(indices) > 1:
        if not all(isinstance(p, str) for p in players):
            raise ValueError("workers > 1 plays in other processes: pass every player as a SPEC")
        job = _WorkerMatch(rules, tuple(players), int(seed), games, random_opening, engine,  # type: ignore[arg-type]
                           keep_moves, multi=True)
        records = _on_workers(job, workers, indices, on_game, should_stop)
    else:
        match = _Match(rules, sides, games=games, seed=int(seed), random_opening=random_opening,
                       parallel=parallel, engine=engine, keep_moves=keep_moves, multi=True)
        records = match.run(indices, on_game=on_game, should_stop=should_stop)
    return _summarize_multi(rules, names, int(seed), random_opening, records)


def play_match(
    rules: Rules,
    a: Side,
    b: Side,
    *,
    games: int,
    seed: int,
    random_opening: int = 3,
    parallel: int = 1,
    workers: int = 1,
    engine: str = "cython",
    on_game: Callable[[int, int, int], Any] | None = None,
    should_stop: Callable[[], bool] | None = None,
    skip: Collection[int] = (),
    keep_moves: bool = False,
) -> MatchResult:
    """Play ``games`` games of ``a`` against ``b`` (each a player SPEC or a player) under the
    seed's protocol, up to ``parallel`` at once, each search side's waiting games searched in
    one batch (see the module docstring).

    ``on_game(pair, game_in_pair, a_result)`` fires as each game finishes (``a_result`` is
    ``+1/0/-1`` from A's side: what ``Gate.record`` takes when A is the candidate).
    ``should_stop()`` is asked after each finished game; True ends the match at once (the games
    in flight are abandoned) and the result covers the finished games only. ``workers``: play on
    that many processes instead, one game at a time in each (SPEC sides only, ``parallel=1``);
    the result is the same for any ``workers``. ``skip``: game indices not to play (a resumed
    tournament's finished games); the others are the games they would have been. ``keep_moves``:
    each game in ``played`` keeps its moves (the evaluator replays them; a long ``hopzero match``
    does not need them in memory).
    """
    if rules.players != 2:
        raise ValueError(f"a match is two players, A against B; the {rules.name} rules seat {rules.players} "
                         "(play_multi_match plays N players)")
    _check_options(games=games, random_opening=random_opening, parallel=parallel, workers=workers, engine=engine)
    skipped = set(skip)
    indices = [i for i in range(games) if i not in skipped]
    if not indices:
        names = tuple(side if isinstance(side, str) else side.name for side in (a, b))
        return _summarize(rules, names, int(seed), random_opening, [])  # type: ignore[arg-type]
    parallel = min(parallel, len(indices))
    sides = (_Side(a, rules, parallel=parallel, engine=engine), _Side(b, rules, parallel=parallel, engine=engine))
    names = (sides[0].name, sides[1].name)
    if a is b and not isinstance(a, str) and sides[0].search is None:
        raise ValueError(f"player {names[0]!r} chooses per position: one object cannot hold both seats")
    if workers > 1 and len(indices) > 1:
        if not (isinstance(a, str) and isinstance(b, str)):
            raise ValueError("workers > 1 plays in other processes: pass both sides as SPECs")
        job = _WorkerMatch(rules, (a, b), int(seed), games, random_opening, engine, keep_moves)
        records = _on_workers(job, workers, indices, on_game, should_stop)
    else:
        match = _Match(rules, sides, games=games, seed=int(seed), random_opening=random_opening,
                       parallel=parallel, engine=engine, keep_moves=keep_moves)
        records = match.run(indices, on_game=on_game, should_stop=should_stop)
    return _summarize(rules, names, int(seed), random_opening, records)
