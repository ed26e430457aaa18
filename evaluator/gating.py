"""Gating: a candidate replaces the best model only when it scores at least 55% against it.

The rule (the seed paper's gate, ``M`` must beat ``M*`` "by more than 55%", hardened the way
Leela Zero's gate had to be):

- **Pairs.** Every opening is played twice with the seats swapped (``evaluator.arena`` does
  this: games ``2p`` and ``2p + 1`` form pair ``p``). Results are counted a complete pair at a
  time. A game whose partner is still running does not count, so the games that finish first
  (short games, often won by a network that is good at quick kills) cannot decide a match
  (leela-zero issues #764 and #78: 10:1 early SPRT passes that ended near 50%).
- **Pair order.** By default (``in_order=True``) pairs are counted in index order: pair ``p``
  counts only once pairs ``0..p-1`` are complete. The counted games are then a prefix of the
  schedule that does not depend on how long anything took, so the decision, and the point where
  an SPRT stops, are the same for every order of arrival.
- **Fixed length.** After ``games`` counted games the candidate is promoted iff its score
  ``(wins + draws / 2) / games >= threshold``, compared exactly (fractions): 11/20 promotes.
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
independent; ``sprt_model="trinomial"`` treats games as independent.

The paper's own gate (24 games, at least 14 wins) is
``GateConfig(games=24, threshold=Fraction(14, 24), draws="loss")``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Literal

from ccengine.fields import FieldError, check_fields, checked
from evaluator.elo import elo_from_score, score_from_elo

__all__ = [
    "Decision",
    "Gate",
    "GateConfig",
    "GateResult",
    "MultiGate",
    "gsprt_llr",
    "gate_results",
]

Decision = Literal["promote", "reject", "continue"]
DrawRule = Literal["half", "loss", "ignore"]
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
    """The most games counted (even: whole pairs); the fixed rule decides here."""
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
    sprt_model: SprtModel = checked("pentanomial")
    """One SPRT sample per pair (``pentanomial``) or per game (``trinomial``); ``ignore`` draws
    always use the trinomial model (a pair with a draw has no pair score then)."""
    in_order: bool = checked(True)
    """Count complete pairs in index order (a prefix of the schedule) rather than as they
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
    def pairs(self) -> int:
        """The most pairs a match schedules."""
        return self.games // 2

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
    """Counted games (complete pairs only)."""
    score: float
    """The score under the draw rule; the decision was taken on its exact value."""
    decision: Decision
    llr: float | None
    """The SPRT's log-likelihood ratio (None without SPRT)."""
    reason: str
    pending_games: int = 0
    """Games received that do not count (yet): half pairs, or pairs after a gap."""

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


def gsprt_llr(counts: Sequence[float], s0: float, s1: float) -> float:
    """fishtest's generalized LLR of ``s = s1`` against ``s = s0`` (module docstring).

    ``counts[i]`` is how often outcome ``i / (len(counts) - 1)`` was seen: ``(L, D, W)`` for
    games, ``(LL, LD+DL, LW+DD+WL, DW+WD, WW)`` for pairs. Zero when nothing was seen.
    """
    if len(counts) < 2:
        raise ValueError("counts needs at least two outcome classes")
    if not 0 < s0 < 1 or not 0 < s1 < 1:
        raise ValueError(f"s0={s0}, s1={s1} must lie in (0, 1)")
    if sum(counts) <= 0:
        return 0.0
    regular = [c if c > 0 else _REGULARIZE for c in counts]
    n = sum(regular)
    k = len(regular) - 1
    values = [i / k for i in range(k + 1)]
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


class _Decides:
    """What both gates say of their state: the decision so far, final once not ``continue``."""

    _decision: Decision

    @property
    def decision(self) -> Decision:
        return self._decision

    @property
    def finished(self) -> bool:
        return self._decision != "continue"


class Gate(_Decides):
    """Consumes game results of a candidate against the best model and decides.

    Feed each game as it finishes with ``record(pair, game, result)`` (``game`` is 0 or 1 within
    the pair, ``result`` is +1 / 0 / -1 from the candidate's side), in any order. Once the
    decision is ``promote`` or ``reject`` it is final: later games are checked and kept but
    change nothing.
    """

    def __init__(self, config: GateConfig | None = None) -> None:
        self.config = config if config is not None else GateConfig()
        self._received: dict[int, list[int | None]] = {}
        self._next_pair = 0  # in_order: the first pair not counted yet
        self._wins = self._draws = self._losses = 0
        self._trinomial = [0, 0, 0]  # counted games by value under the draw rule: L, D, W
        self._pentanomial = [0, 0, 0, 0, 0]  # counted pairs by the pair's half points, 0..4
        self._decision: Decision = "continue"
        self._reason = "no complete pair yet"
        self._llr: float | None = 0.0 if self.config.sprt else None

    # ------------------------------------------------------------------ feeding

    def record(self, pair: int, game: int, result: int) -> GateResult:
        """Record game ``game`` (0 or 1) of pair ``pair``; returns the gate's state after it."""
        if not 0 <= pair < self.config.pairs:
            raise ValueError(f"pair={pair} outside the match's {self.config.pairs} pairs")
        if game not in (0, 1):
            raise ValueError(f"game={game} must be 0 or 1 (the game within its pair)")
        if result not in (-1, 0, 1):
            raise ValueError(f"result={result} must be +1, 0 or -1 (from the candidate's side)")
        slot = self._received.setdefault(pair, [None, None])
        if slot[game] is not None:
            # A game counted twice is a bug upstream (a retried task): say so, never double count.
            raise ValueError(f"game {game} of pair {pair} was already recorded")
        slot[game] = int(result)
        if slot[0] is not None and slot[1] is not None:
            self._advance(pair)
        return self.result()

    def record_pair(self, pair: int, first: int, second: int) -> GateResult:
        """Record both games of a pair at once."""
        self.record(pair, 0, first)
        return self.record(pair, 1, second)

    def feed(self, results: Iterable[int]) -> GateResult:
        """Record results in game order (game ``i`` is game ``i % 2`` of pair ``i // 2``), as in
        ``MatchResult.a_results``."""
        for index, result in enumerate(results):
            self.record(index // 2, index % 2, result)
        return self.result()

    # ------------------------------------------------------------------ state

    @property
    def counted_games(self) -> int:
        return self._wins + self._draws + self._losses

    @property
    def pending_games(self) -> int:
        received = sum(g is not None for slot in self._received.values() for g in slot)
        return received - self.counted_games

    @property
    def score(self) -> Fraction:
        """The exact score of the counted games under the draw rule (0 when nothing counts)."""
        w, d, n = self._wins, self._draws, self.counted_games
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
            wins=self._wins,
            draws=self._draws,
            losses=self._losses,
            games=self.counted_games,
            score=float(self.score),
            decision=self._decision,
            llr=self._llr,
            reason=self._reason,
            pending_games=self.pending_games,
        )

    # ------------------------------------------------------------------ counting

    def _advance(self, completed: int) -> None:
        """Count what the completion of pair ``completed`` makes countable, deciding after each
        counted pair (so the stopping point is a pair boundary)."""
        if self.finished:
            return
        if not self.config.in_order:
            self._count(completed)
            self._decide()
            return
        while not self.finished:
            slot = self._received.get(self._next_pair)
            if slot is None or slot[0] is None or slot[1] is None:
                break
            self._count(self._next_pair)
            self._next_pair += 1
            self._decide()

    def _game_value(self, result: int) -> int | None:
        """A game's value in half points under the draw rule (None: left out)."""
        if result > 0:
            return 2
        if result < 0:
            return 0
        return {"half": 1, "loss": 0, "ignore": None}[self.config.draws]

    def _count(self, pair: int) -> None:
        first, second = self._received[pair]
        assert first is not None and second is not None
        for r in (first, second):
            self._wins += r > 0
            self._draws += r == 0
            self._losses += r < 0
            value = self._game_value(r)
            if value is not None:
                self._trinomial[value] += 1
        v1, v2 = self._game_value(first), self._game_value(second)
        if v1 is not None and v2 is not None:
            self._pentanomial[v1 + v2] += 1

    def _sprt_llr(self) -> float:
        cfg = self.config
        if cfg.sprt_model == "pentanomial" and cfg.draws != "ignore":
            counts: Sequence[int] = self._pentanomial
        else:
            counts = self._trinomial
        return gsprt_llr(counts, cfg.p0, cfg.p1)

    def _decide(self) -> None:
        cfg = self.config
        n = self.counted_games
        score = self.score
        reached = score >= cfg.threshold_exact
        if cfg.sprt:
            self._llr = self._sprt_llr()
        shown = f"score {float(score):.4f} ({score}) over {n} games"
        if n >= cfg.games:
            self._decision = "promote" if reached else "reject"
            relation = ">=" if reached else "<"
            self._reason = f"{shown} {relation} threshold {cfg.threshold_exact} after all games"
            return
        if not cfg.sprt:
            self._reason = f"{shown}; {cfg.games - n} games to go"
            return
        assert self._llr is not None
        if n < cfg.min_games:
            self._reason = f"{shown}, LLR {self._llr:.3f}; no SPRT decision before {cfg.min_games} games"
            return
        if self._llr >= cfg.upper_bound:
            if reached:
                self._decision = "promote"
                self._reason = f"SPRT accepts H1: LLR {self._llr:.3f} >= {cfg.upper_bound:.3f}, {shown}"
                return
            self._reason = f"LLR {self._llr:.3f} past the upper bound but {shown} is below the threshold"
            return
        if self._llr <= cfg.lower_bound:
            if not reached:
                self._decision = "reject"
                self._reason = f"SPRT accepts H0: LLR {self._llr:.3f} <= {cfg.lower_bound:.3f}, {shown}"
                return
            self._reason = f"LLR {self._llr:.3f} past the lower bound but {shown} is at the threshold"
            return
        self._reason = f"{shown}, LLR {self._llr:.3f} within ({cfg.lower_bound:.3f}, {cfg.upper_bound:.3f})"


def gate_results(results: Iterable[int], config: GateConfig | None = None) -> GateResult:
    """Gate a finished match: ``results`` in game order from the candidate's side (for example
    ``MatchResult.a_results`` with the candidate as player A)."""
    return Gate(config).feed(results)


# ---------------------------------------------------------------------------------------------
# The N-player gate
# ---------------------------------------------------------------------------------------------


class MultiGate(_Decides):
    """The gate of an N-player game (N > 2): the candidate against N-1 copies of the best.

    A *set* is ``N`` games, one per seat rotation, that share a random opening
    (``evaluator.arena.play_multi_match`` with the candidate as player 0); a game gives ``N-1``
    pairwise comparisons, the candidate against each copy of the best: ahead (its entry of the
    result vector is larger) is a win, level a draw, behind a loss. The score is the
    candidate's share of those comparisons, ``(wins + draws / 2) / comparisons``; a fair
    candidate scores 1/2, so the 55% threshold means what it means for two players.

    Counted a complete set at a time, in set order (as :class:`Gate` counts pairs). Fixed length:
    ``games // N`` sets (``GateConfig.games`` rounded down to whole sets: 40 games of star3 are 13
    sets, 39 games), then promote iff the score is at least the threshold (exactly). SPRT
    (``sprt=True``): fishtest's GSPRT (:func:`gsprt_llr`) with one sample per set, the set's score
    ``points / (2 N (N-1))`` in ``2 N (N-1) + 1`` classes (the pentanomial model generalised: the
    comparisons of one set are not independent), the same hypotheses, bounds and
    ``min_games`` (rounded up to whole sets), and the same rule that a promotion needs the score
    at the threshold and a rejection a score below it.

    ``record(set, rotation, scores)`` takes each game as ``play_multi_match``'s ``on_game`` gives it.
    """

    def __init__(self, config: GateConfig | None, players: int) -> None:
        self.config = config if config is not None else GateConfig()
        if players < 3:
            raise ValueError(f"players={players}: the N-player gate is for three or more (two: Gate)")
        if self.config.draws == "ignore":
            raise ValueError("the N-player gate counts a level finish as half (draws='half') or nothing "
                             "(draws='loss'), not 'ignore'")
        self.players = players
        self.sets = self.config.games // players
        if self.sets < 1:
            raise ValueError(f"games={self.config.games} is less than one set of {players} games (one per seat "
                             "rotation)")
        self.min_sets = -(-self.config.min_games // players)
        self._received: dict[int, list[int | None]] = {}
        self._next_set = 0
        self._wins = self._draws = self._losses = self._games = 0
        self._classes = [0] * (2 * players * (players - 1) + 1)  # counted sets by their half points
        self._decision: Decision = "continue"
        self._reason = "no complete set yet"
        self._llr: float | None = 0.0 if self.config.sprt else None

    @property
    def games(self) -> int:
        """The most games a match schedules (whole sets)."""
        return self.sets * self.players

    def record(self, set_index: int, rotation: int, scores: Sequence[float]) -> GateResult:
        """Record game ``rotation`` of set ``set_index``: ``scores`` by player, the candidate first."""
        if not 0 <= set_index < self.sets:
            raise ValueError(f"set={set_index} outside the match's {self.sets} sets")
        if not 0 <= rotation < self.players:
            raise ValueError(f"rotation={rotation} must be in 0..{self.players - 1}")
        if len(scores) != self.players:
            raise ValueError(f"scores has {len(scores)} entries; the game has {self.players} players")
        slot = self._received.setdefault(set_index, [None] * self.players)
        if slot[rotation] is not None:
            raise ValueError(f"game {rotation} of set {set_index} was already recorded")
        # Keep wins, draws, losses of the game's comparisons (points under the draw rule follow).
        mine = scores[0]
        w = sum(mine > s for s in scores[1:])
        d = sum(mine == s for s in scores[1:])
        slot[rotation] = w * 100 + d  # packed: a game has at most 5 comparisons
        self._advance()
        return self.result()

    def feed(self, games: Iterable[Sequence[float]]) -> GateResult:
        """Record result vectors (by player, candidate first) in game order."""
        for index, scores in enumerate(games):
            self.record(index // self.players, index % self.players, scores)
        return self.result()

    @property
    def score(self) -> Fraction:
        """The exact share of the counted comparisons (0 when nothing counts)."""
        n = self._wins + self._draws + self._losses
        level = self._draws if self.config.draws == "half" else 0
        return Fraction(2 * self._wins + level, 2 * n) if n else Fraction(0)

    def result(self) -> GateResult:
        received = sum(g is not None for slot in self._received.values() for g in slot)
        return GateResult(wins=self._wins, draws=self._draws, losses=self._losses, games=self._games,
                          score=float(self.score), decision=self._decision, llr=self._llr, reason=self._reason,
                          pending_games=received - self._games)

    def _advance(self) -> None:
        while not self.finished:
            slot = self._received.get(self._next_set)
            if slot is None or any(g is None for g in slot):
                return
            points = 0
            for packed in slot:
                assert packed is not None
                w, d = divmod(packed, 100)
                self._wins += w
                self._draws += d
                self._losses += self.players - 1 - w - d
                points += 2 * w + (d if self.config.draws == "half" else 0)
            self._games += self.players
            self._classes[points] += 1
            self._next_set += 1
            self._decide()

    def _decide(self) -> None:
        cfg = self.config
        sets = self._next_set
        score = self.score
        reached = score >= cfg.threshold_exact
        comparisons = self._wins + self._draws + self._losses
        shown = f"score {float(score):.4f} ({score}) over {comparisons} comparisons in {self._games} games"
        if cfg.sprt:
            self._llr = gsprt_llr(self._classes, cfg.p0, cfg.p1)
        if sets >= self.sets:
            self._decision = "promote" if reached else "reject"
            self._reason = f"{shown} {'>=' if reached else '<'} threshold {cfg.threshold_exact} after all games"
            return
        if not cfg.sprt:
            self._reason = f"{shown}; {self.games - self._games} games to go"
            return
        assert self._llr is not None
        if sets < self.min_sets:
            self._reason = f"{shown}, LLR {self._llr:.3f}; no SPRT decision before {self.min_sets} sets"
        elif self._llr >= cfg.upper_bound and reached:
            self._decision = "promote"
            self._reason = f"SPRT accepts H1: LLR {self._llr:.3f} >= {cfg.upper_bound:.3f}, {shown}"
        elif self._llr <= cfg.lower_bound and not reached:
            self._decision = "reject"
            self._reason = f"SPRT accepts H0: LLR {self._llr:.3f} <= {cfg.lower_bound:.3f}, {shown}"
        else:
            self._reason = f"{shown}, LLR {self._llr:.3f} within ({cfg.lower_bound:.3f}, {cfg.upper_bound:.3f})"
