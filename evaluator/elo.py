"""An Elo ladder anchored at ``greedy`` = 0.

Matches between named players (model versions, ``greedy``, ``random``) are recorded as
wins / draws / losses. Ratings are the maximum-likelihood fit of the Bradley-Terry model on the
Elo scale, a draw counting as half a win and half a loss:

    P(i scores against j) = L(r_i - r_j),  L(d) = 1 / (1 + 10 ** (-d / 400)),
    log-likelihood = sum over pairs s_ij log L(r_i - r_j) + (n_ij - s_ij) log L(r_j - r_i),

with ``s_ij`` = wins + draws / 2 of ``i`` against ``j`` over ``n_ij`` games, and the anchor's
rating fixed at 0 (the likelihood only sees differences). The fit is Newton's method on the
other ratings (the log-likelihood is concave in them), with step halving. Standard errors are
the square roots of the diagonal of the inverse observed information, i.e. relative to the
anchor: the anchor's own error is 0 by construction.

A player who wins or loses every game has no finite maximum; as BayesElo does, every pair that
played gets ``prior_draws`` virtual draws (default 1), which keeps such ratings finite and
barely moves the others. Players not connected to the anchor by played games cannot be rated
against it and are left out of the fit.

The ladder is stored as JSON (never pickle) and fits deterministically: players and pairs are
processed in sorted order.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from plumbing.run_files import atomic_write_text

__all__ = ["Z95", "EloLadder", "MatchRecord", "Rating", "elo_from_score", "score_from_elo"]

#: The z of a two-sided 95% interval.
Z95 = 1.959964

_FORMAT = "hopzero.elo-ladder"
_FORMAT_VERSION = 1
_C = math.log(10.0) / 400.0  # Elo -> natural logit units


def score_from_elo(diff: float) -> float:
    """The expected score of an Elo difference: ``1 / (1 + 10 ** (-diff / 400))``."""
    return 1.0 / (1.0 + 10.0 ** (-diff / 400.0))


def elo_from_score(score: float) -> float:
    """The Elo difference of an expected score, ``-400 log10(1 / score - 1)``; infinite at 0
    and 1 (no finite rating explains a clean sweep)."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score={score} must lie in [0, 1]")
    if score == 0.0:
        return -math.inf
    if score == 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


@dataclass(frozen=True)
class MatchRecord:
    """Games between ``a`` and ``b``, counted from ``a``'s side."""

    a: str
    b: str
    wins: int
    draws: int
    losses: int

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses


@dataclass(frozen=True)
class Rating:
    name: str
    elo: float
    stderr: float
    """Approximate standard error relative to the anchor (0 for the anchor)."""
    games: int

    def interval95(self) -> tuple[float, float]:
        """The 95% interval the standard error gives (the games taken as independent)."""
        return self.elo - Z95 * self.stderr, self.elo + Z95 * self.stderr


class EloLadder:
    """Recorded matches and the ratings they imply."""

    def __init__(self, anchor: str = "greedy", prior_draws: float = 1.0) -> None:
        if prior_draws < 0:
            raise ValueError(f"prior_draws={prior_draws} must not be negative")
        self.anchor = anchor
        self.prior_draws = float(prior_draws)
        self.matches: list[MatchRecord] = []

    # ------------------------------------------------------------------ recording

    def record(self, a: str, b: str, wins: int, draws: int, losses: int) -> MatchRecord:
        """Record ``wins``/``draws``/``losses`` of ``a`` against ``b``."""
        if a == b:
            raise ValueError(f"a player cannot play itself on the ladder ({a!r})")
        if min(wins, draws, losses) < 0:
            raise ValueError(f"negative counts: wins={wins} draws={draws} losses={losses}")
        rec = MatchRecord(str(a), str(b), int(wins), int(draws), int(losses))
        self.matches.append(rec)
        return rec

    @property
    def players(self) -> list[str]:
        names = {self.anchor}
        for m in self.matches:
            names.update((m.a, m.b))
        return sorted(names)

    # ------------------------------------------------------------------ fitting

    def _pair_totals(self) -> dict[tuple[str, str], tuple[float, float]]:
        """Per unordered pair ``(i, j)`` with ``i < j``: games and ``i``'s score (draws half)."""
        totals: dict[tuple[str, str], list[float]] = {}
        for m in self.matches:
            if m.games == 0:
                continue
            score_a = m.wins + 0.5 * m.draws
            if m.a < m.b:
                key, score = (m.a, m.b), score_a
            else:
                key, score = (m.b, m.a), m.games - score_a
            t = totals.setdefault(key, [0.0, 0.0])
            t[0] += m.games
            t[1] += score
        return {k: (v[0], v[1]) for k, v in sorted(totals.items())}

    def _connected(self, pairs: Iterable[tuple[str, str]]) -> list[str]:
        """Players reachable from the anchor through played games, sorted."""
        neighbours: dict[str, set[str]] = {}
        for i, j in pairs:
            neighbours.setdefault(i, set()).add(j)
            neighbours.setdefault(j, set()).add(i)
        seen = {self.anchor}
        stack = [self.anchor]
        while stack:
            for other in neighbours.get(stack.pop(), ()):
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        return sorted(seen)

    def fit(self, max_iter: int = 100, tol: float = 1e-10) -> dict[str, Rating]:
        """Ratings of every player connected to the anchor (the anchor included, at 0)."""
        totals = self._pair_totals()
        names = self._connected(totals)
        index = {name: k for k, name in enumerate(names)}
        games_of = dict.fromkeys(names, 0)
        rows: list[tuple[int, int, float, float]] = []
        for (i, j), (n, s) in totals.items():
            if i in index and j in index:
                games_of[i] += int(n)
                games_of[j] += int(n)
                # The virtual draws: half a point each way per prior game.
                rows.append((index[i], index[j], n + self.prior_draws, s + 0.5 * self.prior_draws))
        if not rows:
            return {self.anchor: Rating(self.anchor, 0.0, 0.0, 0)}
        ii = np.array([r[0] for r in rows])
        jj = np.array([r[1] for r in rows])
        nn = np.array([r[2] for r in rows], dtype=np.float64)
        ss = np.array([r[3] for r in rows], dtype=np.float64)
        free = np.array([k for k in range(len(names)) if names[k] != self.anchor])
        theta = np.zeros(len(names))  # ratings in logit units (Elo * _C)

        def loglik(t: np.ndarray) -> float:
            d = t[ii] - t[jj]
            # log L(d) = -log(1 + e^-d), computed stably with logaddexp.
            return float(-(ss * np.logaddexp(0.0, -d) + (nn - ss) * np.logaddexp(0.0, d)).sum())

        def grad_info(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            d = t[ii] - t[jj]
            p = 1.0 / (1.0 + np.exp(-d))
            g_pair = ss - nn * p
            w = nn * p * (1.0 - p)
            g = np.zeros(len(names))
            np.add.at(g, ii, g_pair)
            np.add.at(g, jj, -g_pair)
            info = np.zeros((len(names), len(names)))  # minus the Hessian
            np.add.at(info, (ii, ii), w)
            np.add.at(info, (jj, jj), w)
            np.add.at(info, (ii, jj), -w)
            np.add.at(info, (jj, ii), -w)
            return g[free], info[np.ix_(free, free)]

        current = loglik(theta)
        for _ in range(max_iter):
            g, info = grad_info(theta)
            step = np.linalg.solve(info, g)
            t = 1.0
            while True:  # halve until the likelihood does not drop (Newton can overshoot)
                trial = theta.copy()
                trial[free] += t * step
                value = loglik(trial)
                if value >= current - 1e-12 or t < 1e-8:
                    break
                t *= 0.5
            theta, current = trial, value
            if float(np.max(np.abs(t * step))) < tol:
                break
        _, info = grad_info(theta)
        stderr = np.zeros(len(names))
        stderr[free] = np.sqrt(np.diag(np.linalg.inv(info)))
        return {
            name: Rating(name, float(theta[k] / _C), float(stderr[k] / _C), games_of[name])
            for k, name in enumerate(names)
        }

    def ratings(self) -> dict[str, float]:
        """Just the Elo numbers of :meth:`fit`."""
        return {name: r.elo for name, r in self.fit().items()}

    # ------------------------------------------------------------------ storage

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "anchor": self.anchor,
            "prior_draws": self.prior_draws,
            "matches": [asdict(m) for m in self.matches],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EloLadder:
        if data.get("format") != _FORMAT or data.get("version") != _FORMAT_VERSION:
            raise ValueError(f"not a {_FORMAT} v{_FORMAT_VERSION} document")
        ladder = cls(anchor=str(data["anchor"]), prior_draws=float(data["prior_draws"]))
        for m in data["matches"]:
            ladder.record(m["a"], m["b"], m["wins"], m["draws"], m["losses"])
        return ladder

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the ladder as JSON, atomically."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EloLadder:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
