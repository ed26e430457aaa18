"""The self-play actors' configuration (the ``selfplay`` and ``stage1`` sections of a run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plumbing.fields import FieldError, check_fields, checked

__all__ = ["SelfPlayConfig", "StageOneConfig"]


def _valid_opponent(spec: str) -> bool:
    """Whether ``spec`` may be ``selfplay.opponent``: empty, or a SPEC of a player without a network."""
    from learner.players import parse_spec

    if not spec:
        return True
    try:
        return "model" not in parse_spec(spec).kind.options
    except ValueError:
        return False


@dataclass(frozen=True, kw_only=True)
class SelfPlayConfig:
    """The self-play actors (stage 2 of the paper)."""

    actors: int = checked(0, ge=0)
    """Number of actors; 0 = as many as Ray's CPUs allow after the learner and evaluator."""
    actor_cpus: float = checked(1.0, gt=0)
    """Ray CPUs each actor asks for (fractional on a small box so everything is scheduled)."""
    games_per_actor: int = checked(32, ge=1)
    """Concurrent games per actor, searched in one batch (paper: 1 game per process)."""
    eval_cache: int = checked(0, ge=0)
    """Positions each actor's evaluation cache keeps, shared by its games (0: no cache, the
    default: self-play keeps its tree from move to move, and with history in the network's input
    a leaf almost never recurs: 0.1-0.4% hits, which do not pay for the lookups; see
    docs/BENCHMARKS.md "Inference backends and the evaluation cache")."""
    resign_threshold: float = checked(0.0, ge=0, le=1)
    """Resign when the root value stays below ``-resign_threshold`` (0 = never; paper: never)."""
    resign_playout_fraction: float = checked(0.1, ge=0, le=1)
    """Share of games that never resign, to measure how often resigning would be wrong."""
    full_search_prob: float = checked(1.0, gt=0, le=1)
    """KataGo's playout cap randomization (Wu 2019, "Accelerating Self-Play Learning in Go",
    its "Playout Cap Randomization"): the share of moves that get a full search
    (``search.num_simulations``, root noise) and are recorded as training positions; the others
    get a fast search of
    ``fast_simulations`` without noise that only chooses the move, and train nothing, neither
    policy nor value, as in KataGo (they stay in the record for the history planes). 1 (the
    default): every move is a full search. KataGo: 0.25."""
    fast_simulations: int = checked(0, ge=0)
    """Simulations of a fast search (with ``full_search_prob`` below 1; fewer than
    ``search.num_simulations``). KataGo: 100 against 600 for a full search."""
    surprise_weighting: bool = checked(False)
    """KataGo's policy surprise weighting (its g170 run; docs/KataGoMethods.md of its
    repository): each game's training positions share their total weight half evenly and half
    in proportion to the KL divergence of the search's policy target from the network's prior
    at the root (noise included, as KataGo), so that positions where the search overturned the
    prior train more. Written as the records' per-position ``weight``, which scales every loss
    term of the position. Off (the default): every position weighs 1."""
    opponent: str = checked("", test=_valid_opponent,
                            means="empty or a SPEC of a player without a network (greedy, alphabeta:depth=3, ...)")
    """An outside player that takes one seat, drawn at random, in an ``opponent_fraction`` share of
    the self-play games (empty: none). Its moves train nothing; the network's positions in those
    games train as usual, with the game's result as their value target. Self-play alone never
    punishes a weakness both sides share; a fixed opponent that exploits it does (AlphaStar's
    league trains against such exploiters: Vinyals et al. 2019, "Grandmaster level in StarCraft
    II using multi-agent reinforcement learning"). docs/TRAINING.md, "An outside opponent"."""
    opponent_fraction: float = checked(0.0, ge=0, le=1)
    """The share of self-play games against ``opponent`` (0, the default: self-play only)."""
    opponent_seats: int = checked(1, ge=1)
    """How many seats ``opponent`` takes in a game against it, drawn at random without repeats
    (1, the default); the network keeps the others, so it must be below the game's players. On
    four or six players the evaluation's table (the network against ``greedy`` at every other
    seat) is a game self-play alone never plays."""
    rules: dict[str, Any] = checked(factory=dict)
    """Rule options changed for the training games only (stage 1 and self-play), on top of the
    game's: e.g. ``adjudicate: distance`` scores a game cut off at ``max_plies`` by the rows each
    player advanced (any number of players) instead of as a draw, so that self-play learns to
    race (the paper's soft move limit). Evaluation (gate, greedy, Elo) always plays the game's
    own rules."""

    def __post_init__(self) -> None:
        check_fields(self)
        if self.opponent_fraction > 0 and not self.opponent:
            raise FieldError("opponent", f"must name a player when opponent_fraction is above 0 "
                                         f"({self.opponent_fraction})")
        if self.full_search_prob < 1 and self.fast_simulations < 1:
            raise FieldError("fast_simulations", f"must be at least 1 when full_search_prob is below 1 "
                                                 f"({self.full_search_prob}), got {self.fast_simulations}")


def _valid_teacher(spec: str) -> bool:
    from .heuristic import teacher_problem

    return teacher_problem(spec) is None


@dataclass(frozen=True, kw_only=True)
class StageOneConfig:
    """The paper's stage 1: supervised pretraining on greedy self-play (section 3.5)."""

    enabled: bool = checked(True)
    """Off = tabula rasa (then use the rules' ``progress_limit`` and distance adjudication)."""
    games: int = checked(15_000, ge=1)
    """Greedy self-play games in total (paper: "15,000 new games per iteration"; we read it as
    the total of one generation pass, see docs/TRAINING.md)."""
    start_mix: tuple[int, int, int] = checked((5, 3, 2), ge=0, test=any, means="3 integer weights >= 0, not all 0",
                                              bad=((0, 0, 0),))
    """Random starting positions : random initial moves : normal starts (paper: 5:3:2)."""
    random_moves: int = checked(3, ge=0)
    """Random initial moves per side in the "random initial moves" games (paper: 3)."""
    keep_fraction: float = checked(0.04, gt=0, le=1)
    """Share of positions kept, to break correlations (paper: 3-5%)."""
    steps: int = checked(3000, ge=1)
    """Learner steps on stage-1 data before self-play starts (off: ``enabled: false``)."""
    teacher: str = checked("greedy", test=_valid_teacher, means="greedy or an alphabeta SPEC (alphabeta:depth=2)",
                           bad=("minimax", "alphabeta:depth=0", "mcts:sims=8"))
    """Who plays the stage-1 games and gives their policy targets: ``greedy`` (the paper's) or an
    alpha-beta SPEC, whose chosen move is the target (``actors.heuristic``)."""
    keep_window: bool = checked(False)
    """On: the learner's window is not emptied when self-play starts; self-play's positions push
    the stage-1 positions out oldest first, so the first candidates do not learn from a few
    hundred self-play games alone. Off: self-play starts on an empty window and stage-1 games
    are never learnt from again."""

    def __post_init__(self) -> None:
        check_fields(self)
