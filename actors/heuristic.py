"""Stage-1 data (seed paper section 3.5, "Training on heuristic-guided self-plays"): greedy
self-play games as supervised targets for the network's first training stage.

``teacher`` picks the heuristic: ``greedy`` (the paper's, the default, described below) or an
``alphabeta`` SPEC (``alphabeta:depth=2``; ``ccengine.alphabeta``), whose games are far stronger
on the star, where greedy against greedy ends half its games in repetition and never learns to
clear its own home (docs/STRENGTH.md, ``star2``). With a search teacher both sides play the
search's move and the target is that move alone (one-hot); everything else (starts, keep mask,
values, discarded draws) is the same.

Both sides play the deterministic greedy player of the paper (section 3.2; RULES.md "Forward
distance and the greedy players"): a move of largest forward distance ``psi``, ties to the least
advanced start cell ("the last checker"), then uniform. The paper used this agent because it beat
the stochastic one (9,908 to 9,766 of 20,000) and is "robust and deterministic".

Each game starts in one of three ways, drawn per game with weights ``start_mix`` (paper 5:3:2):

1. **random position**: the 2k pieces on 2k distinct cells drawn uniformly from the *whole*
   board, the first k for player 0; player 0 to move. This is what the paper's released code
   does (``Board.randomise_initial_state``: 12 of the 49 cells) and what the paper's count says:
   C(49, 12) = 9.2e10, its "more than 9 x 10^10 possible starting states". A drawn position that
   is already over (a win condition holds) is drawn again.
2. **random initial moves**: the normal start, then ``random_moves`` uniformly random moves per
   side (paper: 3 each, ``INITIAL_RANDOM_MOVES = 6`` plies in its code). Those plies have no
   greedy target and are not recorded as positions; they travel as ``start_pieces`` history.
3. **normal start**.

Targets (paper: "the policy ground truth is calculated by assigning the reciprocal of number of
moves with most forward distance to the corresponding optimal move indices"): uniform over
*every* legal move of largest ``psi`` (not only the last checker's: the tie-break is how the
greedy player picks, the target is what the heuristic rates best). A pass-only position has no
target. ``root_shares`` is the game's result vector at every position (the paper's value label;
there is no search). ``model_version`` is -1. Three or more players: every player is greedy, a
random position holds each player's k pieces, the random opening is ``random_moves`` per player,
and the result is the result vector (``scores`` and ``root_shares`` of the record); a game that
ends in a draw (equal shares) or at ``max_plies`` is discarded as with two.

Only ``keep_fraction`` of the positions are for training (paper: "around 3-5%"): the record holds
the whole game (the other positions give the kept ones their history planes) with a ``keep``
mask. Drawn games (``max_plies`` reached without a winner, e.g. blocked pieces) are discarded, as
in the paper (its code stops a game after 0.1 s; we stop at ``max_plies``, the same without a
clock), and counted. A game whose keep mask came out empty carries nothing and is counted but not
returned (``return_unkept=True`` returns it anyway).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ccengine.encoding import PieceTracker
from ccengine.engines import new_state, state_class
from ccengine.game_loop import play_game
from ccengine.rules import PASS, Rules
from learner.records import MAX_START_HISTORY, GameRecord, make_record, versions_now

__all__ = ["START_KINDS", "HeuristicWorker", "greedy_targets", "random_start_board", "teacher_player", "teacher_problem"]

#: The three kinds of game starts, in the order of ``start_mix``.
START_KINDS: tuple[str, str, str] = ("random_position", "random_moves", "normal")

Move = tuple[int, int]


class _Choice:
    """The seat of every teacher game: it plays the move ``HeuristicWorker.play_game`` chose for the
    position when it recorded the position's target."""

    move: Move = PASS

    def select(self, state: Any) -> Move:
        return self.move


def greedy_targets(rules: Rules, player: int, moves: Sequence[Move]) -> tuple[list[int], list[int]]:
    """``(best, chosen_from)``: positions in ``moves`` of every move of largest ``psi`` (the
    target), and of those the greedy player chooses among (least advanced start cell).

    Same order of keys as :func:`ccengine.players.greedy_candidates`; the pass has no ``psi``
    and gives ``([], [0])``.
    """
    if len(moves) == 1 and tuple(moves[0]) == PASS:
        return [], [0]
    advance = rules.geometry.advances[player]   # psi of (s, e) is advance[e] - advance[s], any board
    best_psi = None
    best: list[int] = []
    for i, (s, e) in enumerate(moves):
        psi = advance[e] - advance[s]
        if best_psi is None or psi > best_psi:
            best_psi, best = psi, [i]
        elif psi == best_psi:
            best.append(i)
    last = min(advance[moves[i][0]] for i in best)
    chosen_from = [i for i in best if advance[moves[i][0]] == last]
    return best, chosen_from


def teacher_problem(spec: str) -> str | None:
    """What is wrong with ``spec`` as a stage-1 teacher (None: ``greedy`` or a valid ``alphabeta``
    SPEC). The one check behind the config field and :func:`teacher_player`."""
    from learner.players import parse_spec

    if spec == "greedy":
        return None
    if spec.split(":", 1)[0] != "alphabeta":
        return f"stage1.teacher={spec!r}: valid are greedy and alphabeta[:depth=D,...]"
    try:
        parse_spec(spec)
    except ValueError as exc:
        return f"stage1.teacher={spec!r}: {exc}"
    return None


def teacher_player(spec: str, rules: Rules) -> Any:
    """The stage-1 teacher of an ``alphabeta`` SPEC: its player (deterministic, so no seed);
    ``ValueError`` naming the problem for any other SPEC (``greedy`` is built in, not a player)."""
    from learner.players import make_player

    problem = teacher_problem(spec) if spec != "greedy" else "stage1.teacher='greedy' is not a search player"
    if problem:
        raise ValueError(problem)
    return make_player(spec, rules)


def random_start_board(rules: Rules, rng: np.random.Generator, *, engine: str = "cython", tries: int = 1000) -> Any:
    """A state with each player's k pieces on distinct uniformly drawn cells anywhere on the
    board, player 0 to move, not already over (drawn again until it is not)."""
    cls = state_class(engine)
    k, cells, players = rules.k, rules.cells, rules.players
    for _ in range(tries):
        chosen = rng.choice(cells, size=players * k, replace=False)
        board = [-1] * cells
        for p in range(players):
            for c in chosen[p * k:(p + 1) * k]:
                board[int(c)] = p
        state = cls(rules, board, 0, 0)
        if not state.is_terminal():
            return state
    raise RuntimeError(f"no non-terminal random position in {tries} draws on {rules.name}")


class HeuristicWorker:
    """Greedy self-play games as stage-1 records: ``generate(n_games) -> list[GameRecord]``.

    ``start_mix``: weights of random position / random initial moves / normal start (paper
    5:3:2). ``random_moves``: random moves per side in the second kind (paper 3).
    ``keep_fraction``: probability that a position is kept for training (paper 3-5%).
    ``max_plies``: a game not decided by then is a draw (default: the rules' ``max_plies``).
    ``seed``: everything follows from it (the same seed gives the same records).
    """

    def __init__(
        self,
        rules: Rules,
        *,
        run_id: str,
        config_hash: str,
        actor: str,
        seed: int,
        start_mix: Sequence[float] = (5, 3, 2),
        random_moves: int = 3,
        keep_fraction: float = 0.04,
        max_plies: int | None = None,
        return_unkept: bool = False,
        engine: str = "cython",
        teacher: str = "greedy",
    ) -> None:
        mix = np.asarray(start_mix, dtype=np.float64)
        if mix.shape != (3,) or (mix < 0).any() or mix.sum() <= 0:
            raise ValueError(f"start_mix={tuple(start_mix)} must be 3 non-negative weights, not all 0")
        if random_moves < 0:
            raise ValueError(f"random_moves={random_moves} must be >= 0")
        if not 0.0 <= keep_fraction <= 1.0:
            raise ValueError(f"keep_fraction={keep_fraction} must be in [0, 1]")
        self.rules = rules
        self.run_id = run_id
        self.config_hash = config_hash
        self.actor = actor
        self.seed = int(seed)
        self.start_mix = tuple(float(x) for x in mix)
        self._mix_p = mix / mix.sum()
        self.random_moves = int(random_moves)
        self.keep_fraction = float(keep_fraction)
        self.max_plies = rules.max_plies if max_plies is None else min(int(max_plies), rules.max_plies)
        self.return_unkept = return_unkept
        self.engine = engine
        self.teacher = teacher
        self._search_teacher = None if teacher == "greedy" else teacher_player(teacher, rules)
        self._rng = np.random.default_rng(self.seed)
        self._versions = versions_now()
        self._stats: dict[str, Any] = {
            "games": 0,
            "records": 0,
            "draws_discarded": 0,
            "ended_in_opening": 0,
            "unkept_discarded": 0,
            "positions": 0,
            "kept_positions": 0,
            "plies": 0,
            "wins_first": 0,
            "wins_second": 0,
            "seconds": 0.0,
            "starts": {kind: 0 for kind in START_KINDS},
            "records_by_start": {kind: 0 for kind in START_KINDS},
        }

    # -- one game --------------------------------------------------------------------------------

    def play_game(self, kind: str, seed: int) -> GameRecord | None:
        """One teacher self-play game from a start of ``kind``; its record, or None (a draw, a
        game decided in its random opening, or no position kept without ``return_unkept``)."""
        rules = self.rules
        rng = np.random.default_rng(seed)
        stats = self._stats
        stats["games"] += 1
        stats["starts"][kind] += 1
        start = random_start_board(rules, rng, engine=self.engine) if kind == "random_position" else None
        state = start if start is not None else new_state(rules, engine=self.engine)
        tracker = PieceTracker(rules, state.board, state.to_move)
        opening = self.random_moves if kind == "random_moves" else 0
        history: list[np.ndarray] = []  # piece lists of the random-opening states, oldest first
        pieces: list[np.ndarray] = []
        to_move: list[int] = []
        policies: list[tuple[list[int], list[float]]] = []
        teacher = _Choice()

        def on_position(state: Any, moves: list[Move]) -> None:
            if state.ply < rules.players * opening:
                history.append(tracker.current)
                return
            mover = state.to_move
            if self._search_teacher is not None:
                pick = moves.index(tuple(self._search_teacher.select(state)))
                best, chosen_from = ([] if moves[pick] == PASS else [pick]), [pick]
            else:
                best, chosen_from = greedy_targets(rules, mover, moves)
            pieces.append(tracker.current)
            to_move.append(mover)
            policies.append(([tracker.id_of(moves[i][0]) * rules.cells + moves[i][1] for i in best],
                             [1.0 / len(best)] * len(best)))
            pick = chosen_from[0] if len(chosen_from) == 1 else chosen_from[int(rng.integers(len(chosen_from)))]
            teacher.move = moves[pick]

        game = play_game(rules, [teacher] * rules.players, opening_rng=rng, random_opening=opening, state=state,
                         max_plies=self.max_plies, on_position=on_position, on_move=lambda _, move: tracker.play(move))
        stats["plies"] += game.plies
        scores = game.scores
        if not scores or len(set(scores)) == 1:  # cut off at max_plies, or a draw
            stats["draws_discarded"] += 1
            return None
        if scores[0] > 0 or scores[1] > 0:
            stats["wins_first" if scores[0] > 0 else "wins_second"] += 1
        if not pieces:
            stats["ended_in_opening"] += 1
            return None
        t = len(pieces)
        keep = rng.random(t) < self.keep_fraction
        stats["positions"] += t
        if not keep.any() and not self.return_unkept:
            stats["unkept_discarded"] += 1
            return None
        stats["kept_positions"] += int(keep.sum())
        stats["records"] += 1
        stats["records_by_start"][kind] += 1
        return make_record(
            run_id=self.run_id,
            rules=rules,
            config_hash=self.config_hash,
            model_version=-1,
            actor=self.actor,
            seed=seed,
            pieces=np.asarray(pieces, dtype=np.int8),
            to_move=to_move,
            policies=policies,
            scores=scores,
            root_shares=np.tile(np.asarray(scores, np.float32), (t, 1)),  # no search: the game's result
            plies=game.plies,
            start_pieces=np.asarray(history[::-1][:MAX_START_HISTORY], dtype=np.int8) if history else None,
            keep=keep,
            versions=self._versions,
            prob_dtype="float32",
        )

    # -- many games ------------------------------------------------------------------------------

    def generate(self, n_games: int) -> list[GameRecord]:
        """Play ``n_games`` games; return the records of those that count (decisive, with a kept
        position). The start kind of each game is drawn with weights ``start_mix``."""
        t0 = time.perf_counter()
        kinds = self._rng.choice(3, size=n_games, p=self._mix_p)
        seeds = self._rng.integers(2**63, size=n_games)
        out: list[GameRecord] = []
        for kind, seed in zip(kinds, seeds):
            rec = self.play_game(START_KINDS[int(kind)], int(seed))
            if rec is not None:
                out.append(rec)
        self._stats["seconds"] += time.perf_counter() - t0
        return out

    def stats(self) -> dict[str, Any]:
        """Counters since construction, JSON-ready."""
        s = dict(self._stats)
        s["starts"] = dict(s["starts"])
        s["records_by_start"] = dict(s["records_by_start"])
        games, secs = s["games"], s["seconds"]
        s["games_per_s"] = games / secs if secs else 0.0
        s["mean_plies"] = s["plies"] / games if games else 0.0
        s["actor"] = self.actor
        return s
