"""Gating: a candidate replaces the best model only when it scores at least 55% against it.

The rule (the seed paper's gate, ``M`` must beat ``M*`` "by more than 55%", hardened the way
Leela Zero's gate had to be):

- **Sets.** Every opening is played in every seat rotation (``evaluator.arena``: for two players
  a pair of games with the seats swapped, for N players N games), and results are counted a
  complete set at a time. A game whose partners are still running does not count, so the games
  that finish first (short games, often won by a network that is good at quick kills) cannot
  decide a match (leela-zero issues #764 and #78: 10:1 early SPRT passes that ended near 50%).
- **Set order.** By default (``in_order=True``) sets are counted in index order: set ``s`` counts
  only once sets ``0..s-1`` are complete. The counted games are then a prefix of the schedule
  that does not depend on how long anything took, so the decision, and the point where an SPRT
  stops, are the same for every order of arrival.
- **Comparisons.** A game of N players gives N-1 comparisons, the candidate against each copy of
  the best (for two players, the game itself): a larger entry of the result vector wins, an equal
  one draws, except that a comparison in which both lost (another player won) is left out
  (``both_lost="ignore"``, the default): in Luce's choice model of who wins an N-player game
  (each player wins with a probability in proportion to its strength), such a game says nothing
  about which of the two is stronger. The score is then the candidate's share of the games one
  of the two won, and 55% asks the same strength ratio (55:45) of the candidate for every N.
  Counted as draws (``both_lost="draw"``), they pull the score towards 1/2 as N grows: doubling
  the simulations of the shipped model scores 72% on ``star2``, 62% on ``star3``, 59% on
  ``star4`` and 54% on ``star6`` that way, and 72%, 65%, 66% and 60% with them left out
  (docs/TRAINING.md). Two players never both lose.
- **Fixed length.** After ``games`` counted games (whole sets) the candidate is promoted iff its
  score ``(wins + draws / 2) / comparisons >= threshold``, compared exactly (fractions): 11/20
  promotes.
- **SPRT (optional).** A sequential test may stop earlier, but never before ``min_games``
  counted games (leela-zero #1752: SPRT passes after a few dozen games that turned out to be
  false positives; a lower limit on games was the fix asked for there). A promotion by SPRT also
  needs the score to be at the threshold, and a rejection a score below it, so the gate never
  promotes a candidate that the fixed rule would reject on the same games.

The sequential test is the generalized SPRT (GSPRT) of fishtest (the Stockfish testing
framework), ``LLR_logistic`` with the ``expectation`` statistic in ``fishtest/stats/LLRcalc.py``,
after M. Van den Bergh, "A GSPRT for expected values" / "Practical GSPRT"
(hardy.uhasselt.be/Fishtest/). With outcome values ``a_i`` (a game: ``0, 1/2, 1``; a pair: the
mean of its two games, ``0, 1/4, ..., 1``) observed with frequencies ``p_i`` over ``N`` samples,
and ``s`` the expected score under a hypothesis, the maximum-likelihood distribution with mean
``s`` is ``p_i(s) = p_i / (1 + x (a_i - s))`` where ``x`` solves
``sum_i p_i (a_i - s) / (1 + x (a_i - s)) = 0``; then

    LLR = N * sum_i p_i * (log p_i(s1) - log p_i(s0)).

Empty outcome classes get a count of 1e-3 (fishtest's ``regularize``) so a sweep still has a
finite, growing LLR. The test stops with H1 (promote) when ``LLR >= log((1 - beta) / alpha)``
and with H0 (reject) when ``LLR <= log(beta / (1 - alpha))`` (Wald's bounds). The hypotheses are
expressed in Elo relative to the threshold: ``s_k = L(elo(threshold) + elo_k)`` with the
logistic ``L(d) = 1 / (1 + 10 ** (-d / 400))``; the defaults ``elo0 = -35, elo1 = +35`` put them
near 50% and 60% around the 55% threshold. The default model is the pentanomial one (one sample
per pair), the model fishtest uses for paired openings because the two games of a pair are not
independent; with N players a set's sample is its half points out of ``2 N (N-1)`` (the same
model, generalised: the comparisons of one set are not independent either).
``sprt_model="trinomial"`` treats comparisons as independent. When comparisons may be left out
(``draws="ignore"``, or ``both_lost="ignore"`` with more than two players) a set has no fixed
number of half points; then two players take the trinomial model, and N players one sample per
game, the candidate's share of its win (0, ``1/N`` for a draw under ``draws="half"``, ``1/k``
for a win shared by k, 1), with each hypothesis's score ``s`` turned into that share by Luce's
model, ``s / (s + (N - 1)(1 - s))``: a game the candidate won is N-1 won comparisons, so
counting comparisons as independent samples would make the test far too sure (on six players
it promoted a candidate of equal strength early in 37 of 200 simulated gates, where it should in
at most 5%; ``tests/test_gating.py``).

The paper's own gate (24 games, at least 14 wins) is
``GateConfig(games=24, threshold=Fraction(14, 24), draws="loss")``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Literal

from plumbing.fields import FieldError, check_fields, checked
from evaluator.elo import elo_from_score, score_from_elo

__all__ = [
    "Decision",
    "Gate",
    "GateConfig",
    "GateResult",
    "gsprt_llr",
    "gate_results",
]

Decision = Literal["promote", "reject", "continue"]
DrawRule = Literal["half", "loss", "ignore"]
BothLostRule = Literal["draw", "ignore"]
SprtModel = Literal["pentanomial", "trinomial"]

_REGULARIZE = 1e-3  # fishtest's count for an empty outcome class


def _exact(x: float | Fraction | str | int) -> Fraction:
    """``x`` as the fraction its writer meant: a float goes through its shortest repr, so
    ``0.55`` is 11/20 and not the binary double just above it (which 11/20 would fail)."""
    if isinstance(x, float):
        return Fraction(repr(x))
    return Fraction(x)


def _valid_threshold(x: Any) -> bool:
    try:
        return 0 < _exact(x) < 1
    except (ValueError, ZeroDivisionError):  # "abc", "1/0"
        return False


def _even(n: int) -> bool:
    return n % 2 == 0


@dataclass(frozen=True)
class GateConfig:
    """How a candidate is judged against the best model."""

    threshold: float | Fraction | str = checked(
        0.55, test=_valid_threshold, means="a number or fraction strictly between 0 and 1 (0.55, '11/20')",
        bad=(0.0, 1.0, "abc", "3/2"),
    )
    """Promote when the score reaches this (inclusive), compared exactly."""
    games: int = checked(40, ge=2, test=_even, means="an even integer >= 2 (whole pairs)", bad=(3,))
    """The most games counted (even: whole pairs; with N players rounded down to whole sets of N);
    the fixed rule decides here."""
    min_games: int = checked(20, ge=0, test=_even, means="an even integer >= 0, at most games", bad=(1,))
    """No SPRT decision before this many counted games (even)."""
    sprt: bool = checked(False)
    elo0: float = checked(-35.0)
    """H0 of the SPRT, in Elo relative to the threshold's Elo (about 50% by default)."""
    elo1: float = checked(35.0)
    """H1 of the SPRT, in Elo relative to the threshold's Elo (about 60% by default)."""
    alpha: float = checked(0.05, gt=0, lt=1)
    """The SPRT's chance of promoting a candidate at H0."""
    beta: float = checked(0.05, gt=0, lt=1)
    """The SPRT's chance of rejecting a candidate at H1."""
    draws: DrawRule = checked("half")
    """A draw is half a win (``half``), a failure to win (``loss``, the paper's count of wins),
    or left out of the score (``ignore``: wins over decisive games; games still count towards
    ``games`` and ``min_games``)."""
    both_lost: BothLostRule = checked("ignore")
    """N players: a comparison in which the candidate and the copy both lost is left out
    (``ignore``: only the games one of the two won compare them; see the module docstring) or
    counts as a draw (``draw``, under the draw rule). Two players never both lose."""
    sprt_model: SprtModel = checked("pentanomial")
    """One SPRT sample per set (``pentanomial``) or per comparison (``trinomial``). When
    comparisons may be left out (``ignore`` draws, or ``ignore`` both-lost comparisons with more
    than two players) a set has no score: two players then take the trinomial model, N players one
    sample per game (the candidate's share of the win; the module docstring)."""
    in_order: bool = checked(True)
    """Count complete sets in index order (a prefix of the schedule) rather than as they
    complete; see the module docstring."""

    def __post_init__(self) -> None:
        check_fields(self)
        if self.min_games > self.games:
            raise FieldError("min_games", f"must be at most games ({self.games}), got {self.min_games}")
        if not self.elo0 < self.elo1:
            raise FieldError("elo1", f"must be above elo0 ({self.elo0}), got {self.elo1}")
        if not self.alpha + self.beta < 1:
            raise FieldError("beta", f"must be below 1 - alpha ({1 - self.alpha:g}), got {self.beta}")

    @property
    def threshold_exact(self) -> Fraction:
        return _exact(self.threshold)

    @property
    def threshold_elo(self) -> float:
        return elo_from_score(float(self.threshold_exact))

    @property
    def p0(self) -> float:
        """The expected score under H0."""
        return score_from_elo(self.threshold_elo + self.elo0)

    @property
    def p1(self) -> float:
        """The expected score under H1."""
        return score_from_elo(self.threshold_elo + self.elo1)

    @property
    def lower_bound(self) -> float:
        """Wald's bound for accepting H0 (reject)."""
        return math.log(self.beta / (1 - self.alpha))

    @property
    def upper_bound(self) -> float:
        """Wald's bound for accepting H1 (promote)."""
        return math.log((1 - self.beta) / self.alpha)


@dataclass(frozen=True)
class GateResult:
    """Where a gate stands: counts over the counted games, score, decision and why."""

    wins: int
    draws: int
    losses: int
    games: int
    """Counted games (complete sets only)."""
    score: float
    """The score under the draw rule; the decision was taken on its exact value."""
    decision: Decision
    llr: float | None
    """The SPRT's log-likelihood ratio (None without SPRT)."""
    reason: str
    pending_games: int = 0
    """Games received that do not count (yet): incomplete sets, or sets after a gap."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# The GSPRT
# ---------------------------------------------------------------------------------------------


def _solve_secular(values: Sequence[float], probs: Sequence[float], s: float) -> float:
    """The root ``x`` of ``sum p_i a_i / (1 + x a_i) = 0`` with ``a_i = values_i - s``.

    The function decreases on the interval where every ``1 + x a_i > 0``, so a Newton step kept
    inside a shrinking bracket (bisection when it leaves it) converges in a few steps.
    """
    a = [v - s for v in values]
    lo, hi = -1.0 / max(a), -1.0 / min(a)  # the open interval where all denominators are > 0
    x = 0.0
    for _ in range(200):
        f = df = 0.0
        for ai, pi in zip(a, probs):
            d = 1.0 + x * ai
            f += pi * ai / d
            df -= pi * ai * ai / (d * d)
        if f > 0:
            lo = x
        else:
            hi = x
        step = x - f / df if df < 0 else (lo + hi) / 2
        if not lo < step < hi:
            step = (lo + hi) / 2
        if abs(step - x) <= 1e-15 * max(1.0, abs(x)):
            return step
        x = step
    return x


def gsprt_llr(counts: Sequence[float], s0: float, s1: float, values: Sequence[float] | None = None) -> float:
    """fishtest's generalized LLR of ``s = s1`` against ``s = s0`` (module docstring).

    ``counts[i]`` is how often outcome ``values[i]`` was seen; by default the outcomes are
    ``i / (len(counts) - 1)``: ``(L, D, W)`` for games, ``(LL, LD+DL, LW+DD+WL, DW+WD, WW)`` for
    pairs. ``values`` (ascending, from 0 to 1) names other outcomes: a game's share of the win
    for N players. Zero when nothing was seen.
    """
    if len(counts) < 2:
        raise ValueError("counts needs at least two outcome classes")
    if not 0 < s0 < 1 or not 0 < s1 < 1:
        raise ValueError(f"s0={s0}, s1={s1} must lie in (0, 1)")
    if values is None:
        values = [i / (len(counts) - 1) for i in range(len(counts))]
    elif len(values) != len(counts) or values[0] != 0 or values[-1] != 1 or any(
            a >= b for a, b in zip(values, values[1:])):
        raise ValueError(f"values {list(values)} must ascend from 0 to 1, one per outcome class of counts")
    if sum(counts) <= 0:
        return 0.0
    regular = [c if c > 0 else _REGULARIZE for c in counts]
    n = sum(regular)
    probs = [c / n for c in regular]
    x0 = _solve_secular(values, probs, s0)
    x1 = _solve_secular(values, probs, s1)
    # log p_i(s1) - log p_i(s0) = log(1 + x0 a0_i) - log(1 + x1 a1_i): the p_i cancel.
    llr = 0.0
    for v, p in zip(values, probs):
        llr += p * (math.log1p(x0 * (v - s0)) - math.log1p(x1 * (v - s1)))
    return n * llr


# ---------------------------------------------------------------------------------------------
# The gate
# ---------------------------------------------------------------------------------------------


class Gate:
    """Consumes the games of a candidate against the best model and decides.

    A match of N players (two are N = 2) seats the candidate and N-1 copies of the best; a *set*
    is N games, one per seat rotation, sharing a random opening (``evaluator.arena``; for two
    players a set is a pair, the colour-swapped games). A game gives N-1 comparisons, the candidate
    against each copy: ahead (its entry of the result vector is larger) is a win, level a draw,
    behind a loss; level at 0 (another player won) is left out unless ``both_lost="draw"``. The
    score is the candidate's share of the counted comparisons under the draw rule; a fair
    candidate scores 1/2 for every N, a better one further from it the fewer comparisons are
    left level (the module docstring).

    Feed each game as it finishes with ``record(set, rotation, scores)`` (``scores`` the result
    vector by player, the candidate first: what ``play_match``'s ``on_game`` gives), in any order.
    Sets are counted whole (see the module docstring), ``GateConfig.games`` rounded down to whole
    sets. The SPRT takes one sample per set, its half points out of ``2 N (N-1)`` (for two
    players the pentanomial model), or one per comparison (``sprt_model="trinomial"``, and always
    for two players with ``draws="ignore"``); when comparisons may be left out with more than two
    players, one per game, the candidate's share of the win. Once the
    decision is ``promote`` or ``reject`` it is final: later games are checked and kept but
    change nothing.
    """

    def __init__(self, config: GateConfig | None = None, players: int = 2) -> None:
        self.config = config if config is not None else GateConfig()
        if players < 2:
            raise ValueError(f"players={players}: a gate compares a candidate with at least one copy of the best")
        self.players = players
        self.sets = self.config.games // players
        if self.sets < 1:
            raise ValueError(f"games={self.config.games} is less than one set of {players} games (one per seat "
                             "rotation)")
        self.min_sets = -(-self.config.min_games // players)
        # Comparisons may be left out of a set, so it has no fixed number of half points.
        self._leaves_out = self.config.draws == "ignore" or (self.config.both_lost == "ignore" and players > 2)
        # With N > 2 the comparisons of one game are not independent (a game the candidate won
        # is N-1 won comparisons), so the SPRT then samples games: the candidate's share of each.
        self._per_game = players > 2 and self._leaves_out
        self._share_values = [0.0] + [1 / k for k in range(players, 0, -1)]  # 0, 1/N, ..., 1/2, 1
        self._received: dict[int, list[tuple[int, int, int, int | None] | None]] = {}  # wins, draws, left out, share
        self._next_set = 0  # in_order: the first set not counted yet
        self._counted_sets = 0
        self._wins = self._draws = self._losses = 0
        self._trinomial = [0, 0, 0]  # counted comparisons by half points under the draw rule: L, D, W
        self._by_set_points = [0] * (2 * players * (players - 1) + 1)  # counted sets by their half points
        self._by_share = [0] * (players + 1)  # counted games by the candidate's share, as _share_values
        self._decision: Decision = "continue"
        self._reason = "no complete set yet"
        self._llr: float | None = 0.0 if self.config.sprt else None

    # ------------------------------------------------------------------ feeding

    @property
    def games(self) -> int:
        """The most games a match schedules (whole sets)."""
        return self.sets * self.players

    def record(self, set_index: int, rotation: int, scores: Sequence[float]) -> GateResult:
        """Record game ``rotation`` of set ``set_index``: ``scores`` by player, the candidate first;
        returns the gate's state after it."""
        if not 0 <= set_index < self.sets:
            raise ValueError(f"set={set_index} outside the match's {self.sets} sets")
        if not 0 <= rotation < self.players:
            raise ValueError(f"rotation={rotation} must be in 0..{self.players - 1}")
        if len(scores) != self.players:
            raise ValueError(f"scores has {len(scores)} entries; the game has {self.players} players")
        slot = self._received.setdefault(set_index, [None] * self.players)
        if slot[rotation] is not None:
            # A game counted twice is a bug upstream (a retried task): say so, never double count.
            raise ValueError(f"game {rotation} of set {set_index} was already recorded")
        share = self._share_class(scores) if self._per_game else None
        mine, others = scores[0], scores[1:]
        both_lost = sum(mine == s == 0 for s in others) if self.config.both_lost == "ignore" else 0
        slot[rotation] = (sum(mine > s for s in others), sum(mine == s for s in others) - both_lost, both_lost, share)
        if all(g is not None for g in slot):
            self._advance(set_index)
        return self.result()

    def _share_class(self, scores: Sequence[float]) -> int | None:
        """The index in ``_share_values`` of the candidate's share of the win in a game: 0 lost,
        ``1/k`` a win shared by k; a drawn game (every entry equal) under the draw rule: ``1/N``
        (``half``), 0 (``loss``) or None (``ignore``: no sample)."""
        if len(set(scores)) == 1:
            return {"half": 1, "loss": 0, "ignore": None}[self.config.draws]
        mine = scores[0]
        if mine == 0:
            return 0
        k = round(1 / mine) if mine > 0 else 0
        if not 1 <= k <= self.players or abs(mine * k - 1) > 1e-9:
            raise ValueError(f"scores {tuple(scores)}: the candidate's entry {mine} is not 0 or a share 1/k of a win")
        return self.players + 1 - k

    def feed(self, games: Iterable[Sequence[float]]) -> GateResult:
        """Record result vectors (by player, the candidate first) in game order."""
        for index, scores in enumerate(games):
            self.record(index // self.players, index % self.players, scores)
        return self.result()

    # ------------------------------------------------------------------ state

    @property
    def decision(self) -> Decision:
        return self._decision

    @property
    def finished(self) -> bool:
        return self._decision != "continue"

    @property
    def counted_games(self) -> int:
        return self._counted_sets * self.players

    @property
    def pending_games(self) -> int:
        received = sum(g is not None for slot in self._received.values() for g in slot)
        return received - self.counted_games

    @property
    def score(self) -> Fraction:
        """The exact score of the counted comparisons under the draw rule (0 when nothing counts)."""
        w, d, n = self._wins, self._draws, self._wins + self._draws + self._losses
        rule = self.config.draws
        if rule == "half":
            return Fraction(2 * w + d, 2 * n) if n else Fraction(0)
        if rule == "loss":
            return Fraction(w, n) if n else Fraction(0)
        decisive = w + self._losses
        return Fraction(w, decisive) if decisive else Fraction(0)

    @property
    def llr(self) -> float | None:
        return self._llr

    def result(self) -> GateResult:
        return GateResult(
            wins=self._wins, draws=self._draws, losses=self._losses, games=self.counted_games,
            score=float(self.score), decision=self._decision, llr=self._llr, reason=self._reason,
            pending_games=self.pending_games,
        )

    # ------------------------------------------------------------------ counting

    def _advance(self, completed: int) -> None:
        """Count what the completion of set ``completed`` makes countable, deciding after each
        counted set (so the stopping point is a set boundary)."""
        if self.finished:
            return
        if not self.config.in_order:
            self._count(completed)
            self._decide()
            return
        while not self.finished:
            slot = self._received.get(self._next_set)
            if slot is None or any(g is None for g in slot):
                break
            self._count(self._next_set)
            self._next_set += 1
            self._decide()

    def _count(self, set_index: int) -> None:
        draw_points = {"half": 1, "loss": 0, "ignore": None}[self.config.draws]
        points = 0
        whole = True  # every comparison of the set has a value under the draw rule
        for game in self._received[set_index]:
            assert game is not None
            wins, draws, left_out, share = game
            if share is not None:
                self._by_share[share] += 1
            losses = self.players - 1 - wins - draws - left_out
            whole = whole and not left_out
            self._wins, self._draws, self._losses = self._wins + wins, self._draws + draws, self._losses + losses
            self._trinomial[2] += wins
            self._trinomial[0] += losses
            if draw_points is None:
                whole = whole and not draws
            else:
                self._trinomial[draw_points] += draws
            points += 2 * wins + (draw_points or 0) * draws
        if whole:
            self._by_set_points[points] += 1
        self._counted_sets += 1

    def _game_share(self, score: float) -> float:
        """The candidate's expected share of the wins of N-player games at a comparison score of
        ``score`` (Luce's model: strength ratio ``r = score / (1 - score)`` to each copy, so it
        wins ``r / (r + N - 1)`` of the games)."""
        return score / (score + (self.players - 1) * (1 - score))

    def _sprt_llr(self) -> float:
        cfg = self.config
        if self._per_game:
            return gsprt_llr(self._by_share, self._game_share(cfg.p0), self._game_share(cfg.p1),
                             values=self._share_values)
        if cfg.sprt_model == "pentanomial" and not self._leaves_out:
            return gsprt_llr(self._by_set_points, cfg.p0, cfg.p1)
        return gsprt_llr(self._trinomial, cfg.p0, cfg.p1)

    def _decide(self) -> None:
        cfg = self.config
        score = self.score
        reached = score >= cfg.threshold_exact
        if cfg.sprt:
            self._llr = self._sprt_llr()
        games, comparisons = self.counted_games, self._wins + self._draws + self._losses
        shown = f"score {float(score):.4f} ({score}) over {games} games"
        if comparisons != games:
            shown += f" ({comparisons} comparisons)"
        if self._counted_sets >= self.sets:
            self._decision = "promote" if reached else "reject"
            self._reason = f"{shown} {'>=' if reached else '<'} threshold {cfg.threshold_exact} after all games"
            return
        if not cfg.sprt:
            self._reason = f"{shown}; {self.games - games} games to go"
            return
        assert self._llr is not None
        if self._counted_sets < self.min_sets:
            self._reason = f"{shown}, LLR {self._llr:.3f}; no SPRT decision before {self.min_sets * self.players} games"
        elif self._llr >= cfg.upper_bound and reached:
            self._decision = "promote"
            self._reason = f"SPRT accepts H1: LLR {self._llr:.3f} >= {cfg.upper_bound:.3f}, {shown}"
        elif self._llr <= cfg.lower_bound and not reached:
            self._decision = "reject"
            self._reason = f"SPRT accepts H0: LLR {self._llr:.3f} <= {cfg.lower_bound:.3f}, {shown}"
        elif self._llr >= cfg.upper_bound or self._llr <= cfg.lower_bound:
            self._reason = f"LLR {self._llr:.3f} past a bound but {shown} is on the other side of the threshold"
        else:
            self._reason = f"{shown}, LLR {self._llr:.3f} within ({cfg.lower_bound:.3f}, {cfg.upper_bound:.3f})"


def gate_results(games: Iterable[Sequence[float]], config: GateConfig | None = None, players: int = 2) -> GateResult:
    """Gate a finished match: its result vectors by player in game order, the candidate first (for
    example ``[g.player_scores for g in match.played]`` with the candidate as player A)."""
    return Gate(config, players).feed(games)
