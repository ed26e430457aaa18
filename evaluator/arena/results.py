"""What a match gives: each finished game, each player's record, and the match's summary.

A game's result is its result vector (``State.scores()``: one entry per seat, summing to 1; the
winners share it, a draw splits it), for two players as for six. Between two players of a match,
a game counts as a win for the one whose entry is larger, a draw when they are equal: the
pairwise comparison of finishing order that the gate and the ladders count. A match of two
players is also "A against B", the seed paper's protocol: :meth:`MatchResult.to_dict` then adds
A's wins, B's wins and A's record from each seat.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ccengine.rules import Rules

__all__ = ["MatchGame", "MatchResult", "PlayerRecord", "SideRecord", "summarize"]

Move = tuple[int, int]


@dataclass(frozen=True)
class MatchGame:
    """One finished game of a match (a row of the match, not a replay record: that is
    ``learner.records.GameRecord``)."""

    index: int
    seats: tuple[int, ...]
    """The seat each player (in the match's order: A, B, ...) held; seat 0 moves first."""
    scores: tuple[float, ...]
    """The result vector by seat."""
    plies: int
    positions: int
    """Positions where a move was chosen (the plies of the game)."""
    legal_moves: int
    """Legal moves summed over those positions."""
    moves: tuple[Move, ...] = ()
    """The moves played from the start position, in order (the random opening's included); empty
    unless the match was asked to keep them (``play_match(keep_moves=True)``)."""
    reason: str = ""
    """Why the game ended (``State.end_reason``: ``all_home``, ``anti_block``, ``repetition``,
    ``max_plies``, ...)."""

    @property
    def player_scores(self) -> tuple[float, ...]:
        """The result vector by player, in the match's order."""
        return tuple(self.scores[seat] for seat in self.seats)

    @property
    def draw(self) -> bool:
        """Every player scored the same (a drawn game, or every player won)."""
        return len(set(self.scores)) == 1

    def compare(self, i: int, j: int) -> int:
        """+1 when player ``i`` finished ahead of player ``j`` (a larger entry), 0 level, -1 behind."""
        si, sj = self.scores[self.seats[i]], self.scores[self.seats[j]]
        return (si > sj) - (si < sj)


@dataclass(frozen=True)
class SideRecord:
    """Wins, losses and draws of one player over some of the games."""

    wins: int = 0
    losses: int = 0
    draws: int = 0


@dataclass(frozen=True)
class PlayerRecord:
    """One player's games of a match (all of them, or those from one seat)."""

    games: int = 0
    score: float = 0.0
    """The sum of its entries of the result vectors."""
    wins: int = 0
    """Games it won, alone or sharing the win (a drawn game is no win)."""
    draws: int = 0

    @property
    def mean_score(self) -> float:
        """Its mean entry of the result vector (a fair share is 1/N)."""
        return self.score / self.games if self.games else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"games": self.games, "mean_score": round(self.mean_score, 6), "wins": self.wins, "draws": self.draws}


@dataclass(frozen=True)
class MatchResult:
    """The outcome of a match; ``to_dict()`` is what ``hopzero match --json`` prints."""

    preset: str
    players: tuple[str, ...]
    """The players' names in the match's order (a name may repeat: copies of one player)."""
    games: int
    seed: int
    random_opening: int
    mean_plies: float
    mean_legal_moves: float
    """Mean number of legal moves per position, over all positions played."""
    draws: int
    records: tuple[PlayerRecord, ...]
    """Per player (match order)."""
    by_seat: tuple[tuple[PlayerRecord, ...], ...]
    """``by_seat[k][seat]``: player ``k``'s games from that seat."""
    seat_scores: tuple[float, ...]
    """The mean score of each seat over the match (what moving first, second, ... is worth)."""
    played: tuple[MatchGame, ...] = ()
    """Each finished game, in game order."""
    seating: str = "rotations"
    """How each set seated the players (``evaluator.arena.schedule``)."""

    def pairwise(self, i: int, j: int) -> tuple[int, int, int]:
        """``(wins, draws, losses)`` of player ``i`` against player ``j`` over the games (a game
        where ``i`` scored more is a win, the same score a draw)."""
        outcomes = [g.compare(i, j) for g in self.played]
        return outcomes.count(1), outcomes.count(0), outcomes.count(-1)

    def both_lost(self, i: int, j: int) -> int:
        """The draws of :meth:`pairwise` in which ``i`` and ``j`` both lost (another player won):
        the comparisons the gate leaves out by default (``GateConfig.both_lost``)."""
        return sum(g.scores[g.seats[i]] == g.scores[g.seats[j]] == 0 for g in self.played)

    def endings(self, k: int) -> dict[str, dict[str, int]]:
        """How player ``k``'s games ended (:attr:`MatchGame.reason`), counted apart for the games
        it won (alone or shared), drew and lost: ``{"lost": {"anti_block": 3}, ...}``."""
        out: dict[str, dict[str, int]] = {"won": {}, "drawn": {}, "lost": {}}
        for g in self.played:
            outcome = "drawn" if g.draw else ("won" if g.scores[g.seats[k]] > 0 else "lost")
            out[outcome][g.reason] = out[outcome].get(g.reason, 0) + 1
        return out

    # -- the seed protocol's view of a match of two: A against B ------------------------------

    @property
    def a(self) -> str:
        return self.players[0]

    @property
    def b(self) -> str:
        return self.players[1]

    @property
    def a_wins(self) -> int:
        return self.pairwise(0, 1)[0]

    @property
    def b_wins(self) -> int:
        return self.pairwise(0, 1)[2]

    @property
    def a_results(self) -> tuple[int, ...]:
        """Each game's outcome for A against B (+1 / 0 / -1), in game order."""
        return tuple(g.compare(0, 1) for g in self.played)

    @property
    def a_score(self) -> float:
        """A's score per game against B, a draw counting one half."""
        wins, draws, _ = self.pairwise(0, 1)
        return (wins + 0.5 * draws) / self.games if self.games else 0.0

    def a_record(self, seat: int) -> SideRecord:
        """A's record against B in the games where A held ``seat``."""
        outcomes = [g.compare(0, 1) for g in self.played if g.seats[0] == seat]
        return SideRecord(outcomes.count(1), outcomes.count(-1), outcomes.count(0))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (per-game results left out)."""
        n = len(self.players)
        out: dict[str, Any] = {
            "preset": self.preset, "players": list(self.players), "games": self.games, "seed": self.seed,
            "random_opening": self.random_opening, "seating": self.seating, "mean_plies": round(self.mean_plies, 4),
            "mean_legal_moves": round(self.mean_legal_moves, 4), "draws": self.draws,
            "results": [dict(player=name, **r.to_dict(), by_seat=[s.to_dict() for s in seats], endings=self.endings(k))
                        for k, (name, r, seats) in enumerate(zip(self.players, self.records, self.by_seat))],
            "seat_scores": [round(x, 6) for x in self.seat_scores],
            "pairwise": [{"a": i, "b": j, **dict(zip(("wins", "draws", "losses"), self.pairwise(i, j))),
                          "both_lost": self.both_lost(i, j)} for i in range(n) for j in range(i + 1, n)],
        }
        if n == 2:  # a match of two is also the seed protocol's A against B, with its fields
            out.update(a=self.a, b=self.b, a_wins=self.a_wins, b_wins=self.b_wins, a_score=round(self.a_score, 6),
                       seat_wins=[sum(g.scores[s] > g.scores[1 - s] for g in self.played) for s in (0, 1)],
                       a_first=vars(self.a_record(0)), a_second=vars(self.a_record(1)))
        return out


def summarize(rules: Rules, names: Sequence[str], seed: int, random_opening: int,
              games: Sequence[MatchGame], seating: str = "rotations") -> MatchResult:
    """Fold finished games (in game order) into a match result."""
    n = len(names)

    def record(subset: list[MatchGame], k: int) -> PlayerRecord:
        mine = [g.scores[g.seats[k]] for g in subset]
        won = sum(1 for g, x in zip(subset, mine) if x > 0 and not g.draw)
        return PlayerRecord(len(subset), float(sum(mine)), won, sum(1 for g in subset if g.draw))

    played = list(games)
    count = len(played)
    positions = sum(g.positions for g in played)
    return MatchResult(
        preset=rules.name, players=tuple(names), games=count, seed=seed, random_opening=random_opening,
        mean_plies=sum(g.plies for g in played) / count if count else 0.0,
        mean_legal_moves=sum(g.legal_moves for g in played) / positions if positions else 0.0,
        draws=sum(1 for g in played if g.draw),
        records=tuple(record(played, k) for k in range(n)),
        by_seat=tuple(tuple(record([g for g in played if g.seats[k] == seat], k) for seat in range(n))
                      for k in range(n)),
        seat_scores=tuple(sum(g.scores[seat] for g in played) / count if count else 0.0 for seat in range(n)),
        played=tuple(played),
        seating=seating,
    )
