"""``hopzero play``: a person plays against any player in the terminal.

The person takes one seat and the same SPEC plays every other seat (each with its own random
stream, spawned from the seed); the game ends with its score vector, whatever the number of
players.

The board is drawn as the real board, the diamond with its row numbers or the 121-hole star,
with its cell numbers beside it. The person types a move as its two ends or as a hop chain's
path (each leg must be a hop the rules allow), its cells named as the board's notation names
them: ``12.1-10.1`` or cell indices ``41-27`` on the diamond, indices on the star. Anything else is
answered with the reason and a new prompt. After each of its moves the computer shows its
thinking when it has any (a search player: its top moves with visit share and its estimated win
chance).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from ccengine import PASS, NotationError, Rules, format_move, new_state, render_board
from ccengine.players import Player, SeedLike
from ccengine.reference import is_witness_path, move_path
from ccengine.render import PIECE_MARKS, cell_name, move_forms, parse_human_path
from ccengine.star import POINT_NAMES
from learner.players import make_player

__all__ = ["play_terminal"]

Move = tuple[int, int]


def _help(rules: Rules) -> str:
    return f"type a move as {move_forms(rules)}, or a hop chain's path 's-a-b-e'; 'moves' lists them; 'quit' ends"


def _describe_scores(scores: tuple[float, ...], human: int, reason: str | None) -> str:
    """Who won, from the score vector."""
    winners = [p for p, x in enumerate(scores) if x > 0]
    if len(winners) == len(scores):
        return f"The game is a draw ({reason}): every player scores {scores[0]:.3g}."
    if winners == [human]:
        return "You win!"
    if human in winners:
        return f"You share the win with player(s) {', '.join(str(p) for p in winners if p != human)}."
    return f"Player(s) {', '.join(str(p) for p in winners)} win ({reason})."


def _computers(rules: Rules, spec: str, human: int, seed: SeedLike) -> dict[int, Player]:
    """The computer players by seat, one per seat but the person's, each with its own stream
    spawned from ``seed`` (the seat's child)."""
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return {p: make_player(spec, rules, child) for p, child in enumerate(root.spawn(rules.players)) if p != human}


def _thinking(rules: Rules, player: Player, state: Any, top: int = 5) -> str | None:
    """The player's view of the position, or None when it has none to show."""
    analyze = getattr(player, "analyze", None)
    if analyze is None:
        return None
    value, policy = analyze(state)
    best = sorted(policy, key=lambda mp: -mp[1])[:top]
    shown = ", ".join(f"{format_move(rules, m)} {p:.0%}" for m, p in best)
    if not getattr(player, "judges_positions", False):  # heuristic players: no value estimate
        return f"thinking: top moves {shown}"
    return f"thinking: win chance {(value + 1) / 2:.0%}; top moves (visit share): {shown}"


def play_terminal(
    rules: Rules,
    player_spec: str,
    *,
    human_side: int = 0,
    seed: SeedLike = None,
    read: Callable[[str], str] = input,
    out: TextIO,
    color: bool = False,
) -> tuple[float, ...]:
    """Play one game, the person as ``human_side`` (a player number); returns its score vector,
    one entry per player summing to 1 (a person who resigns scores 0, the others share the win)."""
    players = rules.players
    if not 0 <= human_side < players:
        raise ValueError(f"human_side={human_side}: the {rules.name} game seats players 0..{players - 1}")
    computers = _computers(rules, player_spec, human_side, seed)
    state = new_state(rules)
    last: Move | None = None
    names = {p: "you" if p == human_side else f"computer ({player_spec})" for p in range(players)}
    where = f"{POINT_NAMES[rules.geometry.seats[human_side]]} point, player {human_side} of {players}"
    out.write(f"hopzero play: {rules.name}; you play {PIECE_MARKS[human_side]} ({where}). {_help(rules)}\n")
    while not state.is_terminal():
        out.write("\n" + render_board(rules, state.board, last_move=last, labels=True, color=color) + "\n")
        out.write(f"ply {state.ply}, {names[state.to_move]} to move ({PIECE_MARKS[state.to_move]})\n")
        if state.to_move == human_side:
            move = _ask_move(rules, state, read, out)
            if move is None:
                out.write("You resign.\n")
                return tuple(0.0 if p == human_side else 1.0 / (players - 1) for p in range(players))
        else:
            computer = computers[state.to_move]
            thoughts = _thinking(rules, computer, state)
            move = computer.select(state)
            out.write(f"computer plays {_computer_move(rules, state, move)}\n")
            if thoughts:
                out.write(thoughts + "\n")
        state.play(move)
        last = None if move == PASS else move
    out.write("\n" + render_board(rules, state.board, last_move=last, labels=True, color=color) + "\n")
    scores = tuple(float(x) for x in state.scores())
    out.write(_describe_scores(scores, human_side, state.end_reason) + "\n")
    return scores


def _computer_move(rules: Rules, state: Any, move: Move) -> str:
    """The computer's move as the person types it: its witness path (a step, or the hops of a
    chain), in names and, where the board's names are not its indices, in indices too."""
    if move == PASS:  # the rhombus's rule: a player with no other move passes
        return "pass"
    path = move_path(rules, state.board, move)
    names, indices = format_move(rules, path), format_move(rules, path, style="index")
    return names if names == indices else f"{names} ({indices})"


def _ask_move(rules: Rules, state: Any, read: Callable[[str], str], out: TextIO) -> Move | None:
    """Prompt until the person types a legal move; None when they quit."""
    legal = state.legal_moves()
    if legal == [PASS]:  # the rhombus only: the star has no pass (no legal move ends the game)
        out.write("you have no legal move and pass\n")
        return PASS
    while True:
        try:
            text = read("your move> ").strip()
        except EOFError:
            return None
        if text in ("quit", "resign", "q"):
            return None
        if text in ("help", "?", ""):
            out.write(_help(rules) + "\n")
            continue
        if text == "moves":
            out.write(", ".join(format_move(rules, m) for m in legal) + "\n")
            continue
        try:
            path = parse_human_path(rules, text)
        except NotationError as exc:
            out.write(f"not a move: {exc}\n")
            continue
        move = (path[0], path[-1])
        if move not in legal:
            out.write(f"illegal: {_why_illegal(rules, state, move)}; 'moves' lists the legal ones\n")
            continue
        if len(path) > 2 and not is_witness_path(rules, state.board, path):
            out.write(f"illegal: the path {format_move(rules, path)} is not a chain of single hops the rules allow "
                      f"(the move {format_move(rules, move)} is legal: type it without the path)\n")
            continue
        return move


def _why_illegal(rules: Rules, state: Any, move: Move) -> str:
    s, e = move
    if move == PASS:
        return "you may pass only when you have no move"
    if state.board[s] == -1:
        return f"there is no piece on {cell_name(rules, s)}"
    if state.board[s] != state.to_move:
        return "that piece is not yours"
    if state.board[e] != -1:
        return "the destination is occupied"
    return "the piece cannot reach that cell by a step or a chain of hops"
