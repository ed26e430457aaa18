"""A cells-only referee, as a rating list runs one: it drives one ``hopzero engine`` subprocess per
seat, sends ``position cells <CELLS> player P ply N`` and ``go`` before every move, and judges
every position from its cells, player and ply alone, never from the game's history (so it knows
no repetition rule). An answer that is not a legal move of the position it was sent (``bestmove
pass`` where the position has a move, an illegal move, a path that is not a witness path) is a
forfeit: the game ends there, lost by the engine that gave it.

Used by tests/test_attacks_referee.py; ``python tests/referee_helpers.py --games N`` plays more
games than the test does and prints the tally as JSON (docs/RELIABILITY.md records a run).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccp_helpers import Engine

from ccengine import preset
from ccengine.reference import ReferenceState, is_witness_path


@dataclass
class Forfeit:
    """An answer the referee could not play: which seat, where, and what it said."""

    seat: int
    ply: int
    position: str
    reply: list[str]


@dataclass
class Game:
    """What one refereed game came to."""

    plies: int
    end_reason: str | None
    forfeit: Forfeit | None
    info: list[str] = field(default_factory=list)
    """The engines' ``info string`` lines (their beliefs, e.g. about the game's end)."""


def cells_command(state: ReferenceState) -> str:
    cells = "".join("." if v < 0 else str(v) for v in state.board)
    return f"position cells {cells} player {state.to_move} ply {state.ply}"


def play_game(rules, engines: Sequence[Engine], go: str = "go nodes 16") -> Game:
    """One game from the start between ``engines`` (seat i is ``engines[i]``), refereed from
    cells alone; ends at the end the position shows, or at the first forfeit."""
    for e in engines:
        e.send("newgame")
    board, to_move, ply = None, 0, 0
    info: list[str] = []
    while True:
        judge = ReferenceState(rules, board, to_move, ply)  # no history: cells, player and ply
        if judge.is_terminal():
            return Game(ply, judge.end_reason, None, info)
        e = engines[to_move]
        command = cells_command(judge)
        e.send(command)
        e.send(go)
        reply = e.until("bestmove")
        info += [line for line in reply if line.startswith("info string")]
        words = reply[-1].split()
        path = [int(c) for c in words[1].split("-")] if len(words) == 2 and words[1] != "pass" else []
        legal = len(path) >= 2 and (path[0], path[-1]) in judge.legal_moves()
        if not legal or not is_witness_path(rules, judge.board, path):
            return Game(ply, None, Forfeit(to_move, ply, command, reply), info)
        judge.play((path[0], path[-1]))
        board, to_move, ply = judge.board, judge.to_move, judge.ply


def engines_for(rules, players: Sequence[str], seeds: Sequence[int]) -> list[Engine]:
    """One ``hopzero engine`` subprocess per seat, introduced with ``ccp``."""
    out = []
    for player, seed in zip(players, seeds, strict=True):
        e = Engine("--preset", rules.name, "--player", player, "--seed", str(seed))
        e.send("ccp")
        e.until("ccpok")
        out.append(e)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="play refereed games through `hopzero engine`, count forfeits")
    parser.add_argument("--preset", default="star2")
    parser.add_argument("--players", nargs="+", default=["greedy", "greedy"], metavar="SPEC")
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--go", default="go nodes 16")
    args = parser.parse_args(argv)
    rules = preset(args.preset)
    start = time.perf_counter()
    engines = engines_for(rules, args.players, [args.seed + i for i in range(len(args.players))])
    try:
        games = [play_game(rules, engines, args.go) for _ in range(args.games)]
    finally:
        for e in engines:
            e.close()
    believed_over = sum(any("game is over" in line for line in g.info) for g in games)
    print(json.dumps({
        "preset": args.preset, "players": args.players, "go": args.go, "seed": args.seed, "games": len(games),
        "forfeits": sum(g.forfeit is not None for g in games),
        "games_the_engine_believed_over": believed_over,
        "plies": sum(g.plies for g in games),
        "ends": dict(Counter(g.end_reason or "forfeit" for g in games)),
        "seconds": round(time.perf_counter() - start, 1),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
