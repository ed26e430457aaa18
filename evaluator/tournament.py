"""Round-robin tournaments between players and the rating ladder they give (``hopzero tournament``).

On a game of N players (two are N = 2), every N-player subset of the players (a *group*, in the
order of ``itertools.combinations`` over the player list; for two players, every pair) plays a
match of ``games`` games under the seed's protocol (``evaluator.arena.play_match``: whole sets
that share a random opening and seat the players every way the *seating* says, every rotation or
every order, so each player meets every opening from every seat) with the seed
``SeedSequence([seed, i, j, ...])`` of its players' indices: a tournament is reproducible from its
seed, and a group's games do not depend on the other groups.

A game gives N(N-1)/2 pairwise comparisons of finishing order: the player with the larger entry
of the result vector wins, equal entries (both lost, both shared the win, a draw) draw; for two
players that is the game itself. Those comparisons, summed over the groups, are the "games"
between two players that the ladder fits (and that the standings' games and score count). With
three or more players a player's comparisons within one game are not independent, so the fit's
standard errors would be too narrow: their intervals also take in a bootstrap over whole games
(each group's games resampled with replacement, the ladder fitted again, the 2.5th and 97.5th
percentiles of each rating), the wider of the two (the bootstrap alone collapses on a record that
every resample repeats, a player that lost every comparison).

Results are appended to a JSONL file as each game finishes: a header line (the format tag, the
preset, the players, the games per group, the seed, the opening length, the versions), then one
line per game ``{"group": [SPECs], "index", "scores": [result vector by the group's player]}``
(files written before by two-player tournaments hold ``{"a", "b", "index", "a_result"}`` lines,
read the same). Run again with the same file, a tournament plays only the games the file lacks; a
header that does not match the command is refused, and a line torn by a crash is dropped before
anything is appended.

Ratings: the Bradley-Terry fit of ``evaluator.elo.EloLadder`` on the Elo scale (a draw half a
win), anchored at ``random`` = 0 as CCERL anchors its list (at the first player when ``random``
does not play), with 95% intervals (1.96 standard errors relative to the anchor), and the same
ratings relative to ``greedy`` where it plays.

Published figures (``references``, ``--reference "LABEL=W-D-L"``): a result some other work
reports against ``greedy`` (the seed paper's agent: 271 wins, 1 abandoned game, 28 losses in 300)
is placed on the ladder at greedy's rating plus the Elo of that score, its interval combining
greedy's with the score's own (the normal approximation of a mean of W, D and L). Such a line is
no player of this tournament: it plays no game and does not move the fit; it is the question
"where would that result sit on our ladder", answered under the assumption that the greedy of
both works is the same player.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from learner.players import parse_spec
from ccengine.rules import Rules
from learner.records import versions_now

from .arena import check_match_options, play_match, set_seatings
from .elo import Z95, EloLadder, MatchRecord, Rating
from .results import pairing_line

__all__ = ["FORMAT", "Standing", "Tournament", "TournamentError", "TournamentResult", "write_outputs"]

FORMAT = "hopzero.tournament/1"
#: Resamples of the bootstrap that gives three or more players their intervals.
BOOTSTRAP = 200


class TournamentError(ValueError):
    """A tournament that cannot run as asked (bad players, a results file of another tournament)."""


@dataclass(frozen=True)
class Standing:
    """One player's line of the ladder: rating and 95% interval relative to the anchor, and
    relative to ``greedy`` where it played; games and score over the whole tournament."""

    player: str
    elo: float
    low: float
    high: float
    vs_greedy: float | None
    games: int
    score: float
    published: str | None = None
    """A published figure's record against greedy (``W-D-L``), for a line that played no game here."""


@dataclass(frozen=True)
class TournamentResult:
    """The pairs' results and the ladder (``to_dict`` is ``--json``'s output)."""

    preset: str
    players: tuple[str, ...]
    games_per_pair: int
    seed: int
    anchor: str
    pairs: tuple[MatchRecord, ...]
    """Each pair's comparisons (two players: games) from the side of its player listed first."""
    standings: tuple[Standing, ...]
    """Best first."""
    complete: bool = False
    """Whether every group played all its games."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "preset": self.preset, "players": list(self.players), "games_per_pair": self.games_per_pair,
            "seed": self.seed, "anchor": self.anchor, "complete": self.complete,
            "pairs": [asdict(p) for p in self.pairs], "standings": [asdict(s) for s in self.standings],
            "pairs_count": "pairwise comparisons",
        }

    def markdown(self) -> str:
        """The ladder and the cross table as Markdown (docs/STRENGTH.md)."""
        rel = "greedy" in self.players
        head = f"| # | player | Elo ({self.anchor} = 0) | 95% interval |" + (" vs greedy |" if rel else "")
        lines = [head + " games | score |", "|---" * (6 + rel) + "|"]
        for k, s in enumerate(self.standings, 1):
            vs = f" {s.vs_greedy:+.0f} |" if rel and s.vs_greedy is not None else (" |" if rel else "")
            name = f"{s.player} (published: {s.published} against greedy)" if s.published else f"`{s.player}`"
            lines.append(f"| {k} | {name} | {s.elo:.0f} | {s.low:.0f} .. {s.high:.0f} |{vs} {s.games} | "
                         f"{100 * s.score:.1f}% |")
        lines += ["", "| A | B | A wins | draws | B wins |", "|---|---|---|---|---|"]
        lines += [f"| `{p.a}` | `{p.b}` | {p.wins} | {p.draws} | {p.losses} |" for p in self.pairs]
        return "\n".join(lines) + "\n"

    def text(self) -> str:
        """The ladder for the terminal."""
        width = max(len(_label(s)) for s in self.standings)
        rel = "greedy" in self.players
        lines = [f"{self.preset}: {len(self.players)} players, {self.games_per_pair} games a group (ladder: pairwise "
                 "comparisons)"
                 + ("" if self.complete else " (incomplete)") + f"; Elo with {self.anchor} = 0, 95% interval"]
        for k, s in enumerate(self.standings, 1):
            vs = f"  greedy{s.vs_greedy:+6.0f}" if rel and s.vs_greedy is not None else ""
            lines.append(f"{k:3d}. {_label(s):<{width}}  {s.elo:6.0f}  [{s.low:6.0f} .. {s.high:6.0f}]{vs}  "
                         f"{s.games:5d} games  {100 * s.score:5.1f}%")
        return "\n".join(lines)


def _label(standing: Standing) -> str:
    return f"{standing.player} (published)" if standing.published else standing.player


def parse_reference(text: str) -> tuple[str, tuple[int, int, int]]:
    """``"LABEL=W-D-L"`` (a published record against greedy) as ``(label, (w, d, l))``."""
    label, sep, record = text.rpartition("=")
    parts = record.split("-")
    if not sep or not label.strip() or len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise TournamentError(f"reference {text!r}: give LABEL=W-D-L, a published record against greedy "
                              "(wins, draws, losses: say 'seed paper=271-1-28')")
    w, d, l = (int(p) for p in parts)
    if w + d + l == 0:
        raise TournamentError(f"reference {text!r}: a record of no games")
    return label.strip(), (w, d, l)


def _published_standing(label: str, record: tuple[int, int, int], greedy: Rating) -> Standing:
    """Where a published record against greedy sits on the ladder (module docstring)."""
    w, d, l = record
    n = w + d + l
    score = (w + 0.5 * d) / n
    clipped = min(max(score, 0.5 / n), 1 - 0.5 / n)  # a perfect record has no finite Elo: half a game off
    variance = (w * (1 - score) ** 2 + d * (0.5 - score) ** 2 + l * score**2) / n / n
    if variance == 0:  # all the same result: the binomial variance of the clipped score
        variance = clipped * (1 - clipped) / n
    delta = 400 * math.log10(clipped / (1 - clipped))
    delta_stderr = 400 / math.log(10) / (clipped * (1 - clipped)) * math.sqrt(variance)
    stderr = math.hypot(greedy.stderr, delta_stderr)
    elo = greedy.elo + delta
    return Standing(label, round(elo, 1), round(elo - Z95 * stderr, 1), round(elo + Z95 * stderr, 1),
                    round(delta, 1), n, round(score, 4), published=f"{w}-{d}-{l}")


class Tournament:
    """A round robin of ``players`` (SPECs) on ``rules``, its games logged to ``path``.

    ``games``: per group, a multiple of the players a game seats (every seat rotation).
    ``parallel``: games in flight in one process (a search side's waiting games are searched
    together); ``workers``: or processes.
    ``references``: published records against greedy to show on the ladder (``LABEL=W-D-L``).
    """

    def __init__(self, rules: Rules, players: list[str], *, games: int, seed: int, path: str | os.PathLike[str],
                 random_opening: int = 3, parallel: int = 1, workers: int = 1,
                 references: list[str] | None = None, seating: str = "rotations") -> None:
        players = [p.strip() for p in players]
        if len(players) < 2:
            raise TournamentError("a tournament needs at least two players")
        if len(set(players)) != len(players):
            raise TournamentError(f"a player is named twice: {sorted(p for p in players if players.count(p) > 1)[0]!r}")
        for spec in players:
            parse_spec(spec)  # a bad SPEC fails before any game (PlayerSpecError)
        self.n = rules.players
        try:
            self.set_size = len(set_seatings(self.n, seating))
        except ValueError as exc:
            raise TournamentError(str(exc)) from None
        if games < self.set_size or games % self.set_size:
            raise TournamentError(f"games={games}: give a multiple of {self.set_size} (every seating of {rules.name} "
                                  f"by {seating})")
        if len(players) < self.n:
            raise TournamentError(f"{rules.name} seats {self.n} players; give at least {self.n}")
        try:  # every group's match would refuse these; say so before the results file is made
            check_match_options(games=games, random_opening=random_opening, parallel=parallel, workers=workers)
        except ValueError as exc:
            raise TournamentError(str(exc)) from None
        self.references = [parse_reference(r) for r in references or []]
        # A published record is a two-player figure: one player's wins, draws and losses against greedy.
        if self.references and (self.n != 2 or "greedy" not in players):
            raise TournamentError("a published reference is a record against greedy: give it to a two-player "
                                  "tournament in which greedy plays")
        if {label for label, _ in self.references} & set(players):
            raise TournamentError("a reference's label names a player of the tournament; give it another")
        self.rules = rules
        self.players = players
        self.games = games
        self.seed = int(seed)
        self.random_opening = random_opening
        self.parallel = parallel
        self.workers = workers
        self.path = Path(path)
        self.anchor = "random" if "random" in players else players[0]
        self.seating = seating

    # ---- the results file -----------------------------------------------------------------------

    def header(self) -> dict[str, Any]:
        return {"format": FORMAT, "preset": self.rules.name, "players": self.players, "games": self.games,
                "seed": self.seed, "random_opening": self.random_opening, "seating": self.seating,
                "versions": versions_now()}

    def _identity(self, header: dict[str, Any]) -> tuple[Any, ...]:
        # files written before seatings were chosen played rotations
        return (*(header.get(k) for k in ("format", "preset", "players", "games", "seed", "random_opening")),
                header.get("seating", "rotations"))

    def load(self) -> dict[tuple[str, ...], dict[int, Any]]:
        """The finished games in the file by group: ``{(a, b, ...): {index: scores}}``. Starts the
        file (its header) when there is none; drops a torn last line."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.header()) + "\n", encoding="utf-8")
            return {}
        raw = self.path.read_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]
        if len(complete) < len(raw):
            with open(self.path, "r+b") as f:
                f.truncate(len(complete))
        lines = complete.decode("utf-8", errors="replace").splitlines()
        try:
            header = json.loads(lines[0])
        except (IndexError, json.JSONDecodeError):
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise TournamentError(f"{self.path}: not a hopzero tournament file (its first line is no {FORMAT} header)")
        if self._identity(header) != self._identity(self.header()):
            raise TournamentError(
                f"{self.path}: holds another tournament (preset {header.get('preset')!r}, players "
                f"{header.get('players')}, {header.get('games')} games a pair, seed {header.get('seed')}); "
                "give another file or the same command")
        done: dict[tuple[str, ...], dict[int, Any]] = {}
        groups = set(self.groups())
        for number, line in enumerate(lines[1:], 2):
            try:
                key, index, result = self._row(json.loads(line))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                raise TournamentError(f"{self.path}: line {number} is not a game of this tournament") from None
            if key not in groups or not 0 <= index < self.games:
                raise TournamentError(f"{self.path}: line {number} is not a game of this tournament")
            done.setdefault(key, {})[index] = result
        return done

    def _row(self, row: dict[str, Any]) -> tuple[tuple[str, ...], int, tuple[float, ...]]:
        """A results line's group, game index and result vector; ``ValueError`` for anything else."""
        if "a_result" in row:  # a line of a two-player tournament written before: A's +1 / 0 / -1
            result = int(row["a_result"])
            if result not in (-1, 0, 1):
                raise ValueError("a_result")
            return (row["a"], row["b"]), int(row["index"]), ((1 + result) / 2, (1 - result) / 2)
        scores = tuple(float(x) for x in row["scores"])
        if len(scores) != self.n or not all(0.0 <= x <= 1.0 for x in scores) or not math.isclose(sum(scores), 1.0):
            raise ValueError("scores")
        return tuple(row["group"]), int(row["index"]), scores

    def groups(self) -> list[tuple[str, ...]]:
        """Every group of players that plays a match, in the order they are played: every
        N-player subset (for two players, every pair)."""
        return list(itertools.combinations(self.players, self.n))

    def pairs(self) -> list[tuple[str, str]]:
        """Every pair of players, in the player list's order."""
        return list(itertools.combinations(self.players, 2))

    def group_seed(self, group: tuple[str, ...]) -> int:
        """The seed of ``group``'s match: its players' indices under the tournament's seed."""
        return int(np.random.SeedSequence([self.seed, *(self.players.index(p) for p in group)]).generate_state(1)[0])

    # ---- playing ----------------------------------------------------------------------------------

    def run(self, on_game: Callable[[tuple[str, ...], int, tuple[float, ...]], Any] | None = None) -> TournamentResult:
        """Play every game the results file lacks, appending each as it finishes, then rate.
        ``on_game(group, index, scores)`` is called after each game is written."""
        done = self.load()
        with open(self.path, "a", encoding="utf-8") as log:
            for group in self.groups():
                finished = done.setdefault(group, {})
                if len(finished) == self.games:
                    continue

                def record(set_index: int, rotation: int, scores: tuple[float, ...], group: tuple[str, ...] = group,
                           finished: dict[int, Any] = finished) -> None:
                    index = self.set_size * set_index + rotation
                    log.write(json.dumps({"group": list(group), "index": index, "scores": list(scores)}) + "\n")
                    log.flush()
                    finished[index] = tuple(scores)
                    if on_game is not None:
                        on_game(group, index, scores)

                play_match(self.rules, *group, games=self.games, seed=self.group_seed(group),
                           random_opening=self.random_opening, parallel=self.parallel, workers=self.workers,
                           on_game=record, skip=set(finished), seating=self.seating)
        return self.result(done)

    def result(self, done: dict[tuple[str, ...], dict[int, Any]] | None = None) -> TournamentResult:
        """The pairs and the ladder from the games played so far (the file's, by default): the
        pairwise comparisons of every game, summed by pair of players."""
        done = self.load() if done is None else done
        games = {group: list(done.get(group, {}).values()) for group in self.groups()}
        pairs = self._pairs(games)
        complete = all(len(done.get(g, {})) == self.games for g in self.groups())
        intervals = self._bootstrap(games) if self.n > 2 else None
        return TournamentResult(self.rules.name, tuple(self.players), self.games, self.seed, self.anchor,
                                tuple(pairs), tuple(self._standings(pairs, intervals)), complete=complete)

    def _pairs(self, games: dict[tuple[str, ...], list[tuple[float, ...]]]) -> list[MatchRecord]:
        """Every pair's comparisons over ``games`` (result vectors by group)."""
        counts = {pair: [0, 0, 0] for pair in self.pairs()}
        for group, vectors in games.items():
            for scores in vectors:
                for i, j in itertools.combinations(range(self.n), 2):
                    c = counts[(group[i], group[j])]  # combinations keep the player list's order
                    c[0 if scores[i] > scores[j] else 1 if scores[i] == scores[j] else 2] += 1
        return [MatchRecord(a, b, *counts[(a, b)]) for a, b in self.pairs()]

    def _fit(self, pairs: list[MatchRecord], anchor: str) -> dict[str, Rating]:
        ladder = EloLadder(anchor=anchor)
        for p in pairs:
            if p.games:
                ladder.record(p.a, p.b, p.wins, p.draws, p.losses)
        return ladder.fit()

    def _bootstrap(self, games: dict[tuple[str, ...], list[tuple[float, ...]]]) -> dict[str, tuple[float, float]]:
        """95% intervals of the ratings from ``BOOTSTRAP`` resamples of whole games (each group's
        games drawn again with replacement, its own count), so that the comparisons of one game
        stay together: with three or more players they are not independent, and the fit's own
        standard errors, which treat them as independent, are too narrow."""
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, len(self.players)]))
        drawn: dict[str, list[float]] = {name: [] for name in self.players}
        for _ in range(BOOTSTRAP):
            again = {g: [v[i] for i in rng.integers(len(v), size=len(v))] if v else [] for g, v in games.items()}
            for name, rating in self._fit(self._pairs(again), self.anchor).items():
                drawn[name].append(rating.elo)
        return {name: (float(np.percentile(x, 2.5)), float(np.percentile(x, 97.5)))
                for name, x in drawn.items() if len(x) == BOOTSTRAP}

    def _standings(self, pairs: list[MatchRecord],
                   intervals: dict[str, tuple[float, float]] | None = None) -> list[Standing]:
        ratings = self._fit(pairs, self.anchor)
        relative = self._fit(pairs, "greedy") if "greedy" in self.players else {}
        games = dict.fromkeys(self.players, 0)
        points = dict.fromkeys(self.players, 0.0)
        for p in pairs:
            games[p.a] += p.games
            games[p.b] += p.games
            points[p.a] += p.wins + 0.5 * p.draws
            points[p.b] += p.losses + 0.5 * p.draws
        out = []
        for name in self.players:
            r = ratings.get(name)
            if r is None:  # not connected to the anchor by games yet
                continue
            low, high = r.interval95()
            if intervals is not None and name in intervals:  # three or more players: the bootstrap's too
                low, high = min(low, intervals[name][0]), max(high, intervals[name][1])
            vs = relative.get(name)
            out.append(Standing(name, round(r.elo, 1), round(low, 1), round(high, 1),
                                None if vs is None else round(vs.elo, 1),
                                games[name], round(points[name] / games[name], 4) if games[name] else 0.0))
        if "greedy" in ratings:
            out += [_published_standing(label, record, ratings["greedy"]) for label, record in self.references]
        return sorted(out, key=lambda s: -s.elo)


def write_outputs(result: TournamentResult, out_dir: str | os.PathLike[str], *, random_opening: int) -> list[Path]:
    """``ladder.json``, ``ladder.md``, ``ladder.png`` (ratings with their intervals) and
    ``results.jsonl`` (one match-result line per pairing, ``evaluator.results``: what
    ``hopzero serve --results`` tabulates) in ``out_dir``; returns the files."""
    from plumbing.run_files import atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "ladder.json", json.dumps(result.to_dict(), indent=1) + "\n")
    atomic_write_text(out / "ladder.md", result.markdown())
    software = versions_now()
    lines = [pairing_line(result.preset, p.a, p.b, (p.wins, p.draws, p.losses), seed=result.seed,
                          random_opening=random_opening, software=software) for p in result.pairs if p.games]
    atomic_write_text(out / "results.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(reversed(result.standings))
    longest = max(len(_label(s)) for s in rows)  # the names take the figure's left side: widen it for long SPECs
    fig, ax = plt.subplots(figsize=(max(8.0, 4.5 + 0.075 * longest), 0.5 * len(rows) + 1.5), dpi=100)
    y = np.arange(len(rows))
    for published in (False, True):
        k = [i for i, s in enumerate(rows) if bool(s.published) == published]
        if k:
            ax.errorbar([rows[i].elo for i in k], y[k], xerr=[[rows[i].elo - rows[i].low for i in k],
                                                              [rows[i].high - rows[i].elo for i in k]],
                        fmt="o", capsize=4, mfc="white" if published else None)  # published: hollow
    ax.set_yticks(y, [_label(s) for s in rows])
    ax.axvline(0, color="grey", linestyle=":")
    ax.set_xlabel(f"Elo ({result.anchor} = 0), 95% interval")
    ax.set_title(f"{result.preset}: round robin, {result.games_per_pair} games a group, pairwise comparisons")
    fig.tight_layout()
    fig.savefig(out / "ladder.png")
    plt.close(fig)
    return [out / "ladder.json", out / "ladder.md", out / "ladder.png", out / "results.jsonl"]
