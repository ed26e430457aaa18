"""Attack replays, referee area: ``hopzero engine`` under a referee that judges positions alone.

A rating list's referee (CCERL's) sends ``position cells ... player P ply N`` and ``go`` every
turn and judges each position from its cells: it knows nothing of the engine's history, so the
star's third repetition does not end its game. Whatever the engine believes about the end, it
must answer a legal move wherever the position has one; an engine of a game of three or six
players must follow its game across the other players' moves (its history planes and repetition
count depend on it). The referee is tests/referee_helpers.py, driving the installed command.
"""

from __future__ import annotations

import pytest
from ccp_helpers import engine  # noqa: F401 - engine is a fixture
from referee_helpers import cells_command, engines_for, play_game

from ccengine import new_state, preset
from ccengine.reference import ReferenceState

STAR2 = preset("star2")
#: What the engine says when only its history ends the game (then it plays on).
BELIEF = "info string the game is over in this engine's history (repetition"


def test_greedy_players_that_repeat_positions_never_forfeit_under_a_cells_only_referee():
    """Greedy against greedy on the star repeats positions: the engines' own histories reach a
    third repetition (they say so) while the referee's game goes on; no answer is a forfeit."""
    engines = engines_for(STAR2, ["greedy", "greedy"], [5, 6])
    try:
        games = [play_game(STAR2, engines) for _ in range(4)]
    finally:
        for e in engines:
            assert e.close() == 0
    assert [g.forfeit for g in games] == [None] * len(games)
    assert all(g.end_reason is not None for g in games)
    # the attack took place: some engine believed its game over and played on
    assert any(line.startswith(BELIEF) for g in games for line in g.info), [g.info for g in games]


def test_a_whole_three_player_game_under_a_cells_only_referee():
    rules = preset("star3")
    engines = engines_for(rules, ["greedy"] * rules.players, range(21, 21 + rules.players))
    try:
        game = play_game(rules, engines)
    finally:
        for e in engines:
            assert e.close() == 0
    assert game.forfeit is None and game.end_reason is not None, game


def _out_and_back(rules) -> list[tuple[int, int]]:
    """Two rounds that bring the start position back: every player steps a piece out, then back.
    Played twice from the start, the start position occurs a third time (a repetition draw)."""
    state = new_state(rules)
    outs = []
    for _ in range(rules.players):
        step = next(m for m in state.legal_moves() if m[1] in rules.geometry.step[m[0]])
        outs.append(step)
        state.play(step)
    return ([*outs, *(m[::-1] for m in outs)]) * 2


@pytest.mark.parametrize("name", ["star3", "star6"])
@pytest.mark.parametrize("form", ["positions", "moves-since-last"])
def test_the_engine_follows_its_game_across_the_other_players_moves(engine, name, form):
    """Seat 0's engine is sent the game only when it is to move: N plies apart. It recognises
    each position as its game after the N moves since (or is told them after the position it
    last saw), so the start position's third occurrence is a repetition in its history too."""
    rules = preset(name)
    moves = _out_and_back(rules)
    e = engine("--preset", name, "--player", "greedy")
    state = ReferenceState(rules)
    last = cells_command(state)
    e.send(last)
    for start in range(0, len(moves), rules.players):
        for m in moves[start:start + rules.players]:
            state.play(m)
        now = cells_command(state)
        if form == "positions":
            e.send(now)
        else:
            line = last + " moves " + " ".join(f"{s}-{t}" for s, t in moves[start:start + rules.players])
            assert len(line) < 4096
            e.send(line)
        last = now
    assert state.is_terminal() and state.end_reason == "repetition" and state.ply == 4 * rules.players
    e.send("go nodes 1")
    reply = e.until("bestmove")
    assert reply[0].startswith(BELIEF), reply
    path = [int(c) for c in reply[-1].split()[1].split("-")]
    assert (path[0], path[-1]) in new_state(rules).legal_moves()
    assert e.close() == 0
