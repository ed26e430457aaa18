"""``alphabeta`` (paranoid search) for three players behind the engine protocol and in the
terminal game: a real ``hopzero engine --preset star3`` subprocess plays seat 0 of whole games
refereed by the reference engine, and finds a win a hand-built position offers."""

from __future__ import annotations

import io

import pytest
from ccp_helpers import Engine
from test_star_multi import _almost_home, _board

from ccengine import preset
from ccengine.players import GreedyPlayer
from ccengine.reference import ReferenceState, is_witness_path
from hopzero.play import play_terminal

STAR3 = preset("star3")


@pytest.fixture
def star3_engine():
    """A ``hopzero engine --preset star3`` subprocess factory; each killed at the end if still running."""
    started: list[Engine] = []

    def start(spec: str) -> Engine:
        started.append(Engine("--preset", "star3", "--player", spec))
        return started[-1]

    yield start
    for e in started:
        if e.proc.poll() is None:
            e.proc.kill()
        e.proc.wait()


def _cells(board) -> str:
    return "".join("." if v == -1 else str(v) for v in board)


def _bestmove(e) -> list[int]:
    reply = e.until("bestmove")[-1].split()
    assert len(reply) == 2 and reply[1] != "pass", reply
    return [int(c) for c in reply[1].split("-")]


@pytest.mark.parametrize("seat", [0, 2])
def test_alphabeta_engine_plays_a_whole_star3_game(star3_engine, seat):
    e = star3_engine("alphabeta:depth=2")
    e.send("ccp")
    e.until("ccpok")
    e.send("newgame")
    ref = ReferenceState(STAR3)
    others = {p: GreedyPlayer(STAR3, p) for p in range(3) if p != seat}
    sent: list[str] = []
    while not ref.is_terminal():
        if ref.to_move == seat:
            e.send("position startpos moves " + " ".join(sent) if sent else "position startpos")
            e.send("go")
            path = _bestmove(e)
            move = (path[0], path[-1])
            assert move in ref.legal_moves(), f"ply {ref.ply}: illegal bestmove {path}"
            assert is_witness_path(STAR3, ref.board, path)
        else:
            move = others[ref.to_move].select(ref)
        ref.play(move)
        sent.append(f"{move[0]}-{move[1]}")
    assert sum(ref.scores()) == pytest.approx(1.0)


def test_alphabeta_engine_takes_the_win_a_position_offers(star3_engine):
    cells, fill = _almost_home(STAR3, 1)
    board = _board(STAR3, {1: cells}, near=tuple(cells))
    e = star3_engine("alphabeta:depth=3")
    e.send("ccp")
    e.until("ccpok")
    e.send(f"position cells {_cells(board)} player 1 ply 91")
    e.send("go")
    path = _bestmove(e)
    assert (path[0], path[-1]) == fill


def test_the_terminal_game_plays_alphabeta_against_a_person():
    out = io.StringIO()
    scores = play_terminal(STAR3, "alphabeta:depth=1", human_side=1, seed=0, read=lambda prompt: "quit", out=out)
    assert "computer plays " in out.getvalue()  # seat 0 moved before the person resigned
    assert scores == (0.5, 0.0, 0.5)
