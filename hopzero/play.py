"""``hopzero play``: a person plays against any player in the terminal.

On the star of three, four or six players the person takes one seat and the same SPEC plays
every other seat (each with its own random stream); the game ends with its score vector.

The board is drawn as the real diamond with cell names; the person types moves in the human
notation (``12.1-10.1``) or as cell indices (``41-27``). The 121-hole star is drawn as the star
with a second star of cell numbers beside it; moves are cell indices, ``s-e`` or a hop chain's
path ``s-a-b-e`` (each leg must be a hop the rules allow). Anything else is answered with the
reason and a new prompt. After each of its moves the computer shows its thinking when it has
any (a search player: its top moves with visit share and its estimated win chance).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from ccengine import PASS, NotationError, Rules, format_move, new_state, parse_human_move, render_board
from ccengine.notation import format_star_path, parse_move_path
from ccengine.players import Player, SeedLike
from learner.players import make_player
from ccengine.reference import is_witness_path, move_path
from ccengine.render import cell_name
from ccengine.star import POINT_NAMES

__all__ = ["play_terminal"]

Move = tuple[int, int]
_HELP = "type a move as 'R.P-R.P' (diamond row.position) or 's-e' (cell indices); 'moves' lists them; 'quit' ends"
_STAR_HELP = (
    "type a move as 's-e' or a hop chain's path 's-a-b-e' (the cell numbers of the star on the right); "
    "'moves' lists them; 'quit' ends"
)


def _help(rules: Rules) -> str:
    return _STAR_HELP if rules.is_star else _HELP


def _describe_result(result: int, human: int) -> str:
    if result == 0:
        return "The game is a draw."
    return "You win!" if (result == 1) == (human == 0) else "The computer wins."


def _describe_scores(scores: tuple[float, ...], human: int, reason: str | None) -> str:
    """A game of three or more players: who won, from the score vector."""
    winners = [p for p, x in enumerate(scores) if x > 0]
    if len(winners) == len(scores):
        return f"The game is a draw ({reason}): every player scores {scores[0]:.3g}."
    if winners == [human]:
        return "You win!"
    names = ", ".join(str(p) for p in winners)
    if human in winners:
        return f"You share the win with player(s) {', '.join(str(p) for p in winners if p != human)}."
    return f"Player(s) {names} win ({reason})."


def _mark(player: int) -> str:
    """How the board shows a player's pieces: ``x``, ``o``, then digits."""
    return "xo"[player] if player < 2 else str(player)


def _computers(rules: Rules, spec: str, human: int, seed: SeedLike) -> dict[int, Player]:
    """The computer players by seat: one for two players (seeded as given), else one per other
    seat, each with its own stream spawned from ``seed``."""
    players = rules.geometry.players
    if players == 2:
        return {1 - human: make_player(spec, rules, seed)}
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return {p: make_player(spec, rules, child) for p, child in enumerate(root.spawn(players)) if p != human}


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
) -> int | tuple[float, ...]:
    """Play one game, the person as ``human_side`` (a player number); returns the result: +1/0/-1
    for player 0 in a two-player game, the score vector in a game of more players (a person who
    resigns scores 0, the others share the win)."""
    players = rules.geometry.players
    if not 0 <= human_side < players:
        raise ValueError(f"human_side={human_side}: the {rules.name} game seats players 0..{players - 1}")
    computers = _computers(rules, player_spec, human_side, seed)
    state = new_state(rules)
    last: Move | None = None
    names = {p: "you" if p == human_side else f"computer ({player_spec})" for p in range(players)}
    if players == 2:
        # player 0 starts at the bottom of the diamond and at the top (north) of the star
        where = "top" if (human_side == 0) == rules.is_star else "bottom"
    else:
        where = f"{POINT_NAMES[rules.geometry.seats[human_side]]} point, player {human_side} of {players}"
    out.write(f"hopzero play: {rules.name}; you play {_mark(human_side)} ({where}). {_help(rules)}\n")
    while not state.is_terminal():
        out.write("\n" + render_board(rules, state.board, last_move=last, labels=True, color=color) + "\n")
        out.write(f"ply {state.ply}, {names[state.to_move]} to move ({_mark(state.to_move)})\n")
        if state.to_move == human_side:
            move = _ask_move(rules, state, read, out)
            if move is None:
                out.write("You resign.\n")
                if players == 2:
                    return 1 if human_side == 1 else -1
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
    if players == 2:
        out.write(_describe_result(state.result(), human_side) + "\n")
        return int(state.result())
    out.write(_describe_scores(state.scores(), human_side, state.end_reason) + "\n")
    return state.scores()


def _computer_move(rules: Rules, state: Any, move: Move) -> str:
    """The computer's move as the person types it: the star's as its witness path."""
    if rules.is_star:
        return format_star_path(move_path(rules, state.board, move))
    return f"{format_move(rules, move)} ({format_move(rules, move, style='index')})"


def _read_move(rules: Rules, text: str) -> tuple[int, ...]:
    """The cells of the move a person typed: its two ends, or on the star maybe a hop path."""
    if not rules.is_star:
        return parse_human_move(rules, text)
    return parse_move_path(rules, re.sub(r"\s*(?:->|-|\s)\s*", "-", text))


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
            path = _read_move(rules, text)
        except NotationError as exc:
            out.write(f"not a move: {exc}\n")
            continue
        move = (path[0], path[-1])
        if move not in legal:
            out.write(f"illegal: {_why_illegal(rules, state, move)}; 'moves' lists the legal ones\n")
            continue
        if len(path) > 2 and not is_witness_path(rules, state.board, path):
            out.write(f"illegal: the path {format_star_path(path)} is not a chain of single hops the rules allow "
                      f"(the move {format_star_path(move)} is legal: type it without the path)\n")
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
