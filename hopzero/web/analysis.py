"""What the analysis board knows about a game: an evaluation of every position, and the moves
marked as inaccuracies, mistakes and blunders.

**Evaluations.** Every position of a game gets an evaluation from the game's analysis engine
(:func:`evaluation`): every seat's expected share of the result (its win chance; the shares sum
to 1), the simulations behind it, and the top moves with their hop paths and principal
variations. A finished position's evaluation is its result, exactly. The database keeps them
whole; a room in memory keeps only their :func:`brief` (the shares and how they were found, a
few hundred bytes a position), which is what the graph and the marks need, so a long game's
lines of play do not sit in memory.

**Marks.** A move is judged by how much it cost its mover: the mover's share in the position
before the move less its share in the position after it. lichess marks an inaccuracy, a mistake
and a blunder at drops of 0.1, 0.2 and 0.3 of the winning chances on a scale of -1..1, which is
0.05, 0.10 and 0.15 of a two-player share, that is 10%, 20% and 30% of the fair share 1/2. With N
seats the fair share is 1/N, so the same fractions of it are the thresholds: a drop of at least
0.1/N, 0.2/N and 0.3/N (star3: 0.033, 0.067, 0.1; star6: 0.017, 0.033, 0.05). With two seats they
are exactly lichess's.
"""

from __future__ import annotations

from typing import Any

from .thinking import Thought

__all__ = ["MARKS", "TOP_STORED", "brief", "briefs", "evaluation", "exact_evaluation", "mark", "marks"]

#: ``(name, fraction of the fair share 1/N)``, the most severe first.
MARKS: tuple[tuple[str, float], ...] = (("blunder", 0.3), ("mistake", 0.2), ("inaccuracy", 0.1))
#: Top moves kept with a position's evaluation.
TOP_STORED = 4


def evaluation(thought: Thought, engine: str) -> dict[str, Any] | None:
    """The stored evaluation of a searched position (None when the player judged nothing)."""
    if thought.shares is None:
        return None
    return {"shares": list(thought.shares), "sims": thought.simulations, "engine": engine,
            "mover": thought.mover, "top": list(thought.top[:TOP_STORED]), "exact": False}


def exact_evaluation(scores: list[float], mover: int) -> dict[str, Any]:
    """The evaluation of a finished position: its result."""
    return {"shares": list(scores), "sims": 0, "engine": "result", "mover": mover, "top": [], "exact": True}


def brief(record: dict[str, Any]) -> dict[str, Any]:
    """What the graph and the marks need of an evaluation: the shares and how they were found."""
    return {"shares": record["shares"], "sims": record["sims"], "exact": record["exact"],
            "engine": record.get("engine")}


def briefs(evaluations: dict[int, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The briefs of a game's evaluations by ply (JSON keys), in order."""
    return {str(ply): brief(e) for ply, e in sorted(evaluations.items())}


def mark(drop: float, players: int) -> str | None:
    """The mark of a move that cost its mover ``drop`` of its share, among ``players`` seats."""
    for name, fraction in MARKS:
        if drop >= fraction / players:
            return name
    return None


def marks(evaluations: dict[int, dict[str, Any]], movers: list[int], players: int) -> dict[str, str]:
    """The marked moves of a game: move ``i`` (0-based, played by ``movers[i]``) is judged when
    positions ``i`` and ``i + 1`` both have evaluations."""
    out = {}
    for i, seat in enumerate(movers):
        before, after = evaluations.get(i), evaluations.get(i + 1)
        if before is None or after is None:
            continue
        name = mark(before["shares"][seat] - after["shares"][seat], players)
        if name is not None:
            out[str(i)] = name
    return out
