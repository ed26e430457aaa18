"""``hopzero play`` as a person uses it: typed moves, mistakes answered, the game to its end."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

from ccengine import format_move, move_path, new_state, preset
from ccengine.reference import is_witness_path
from hopzero.play import play_terminal


def test_a_whole_game_with_typing_mistakes():
    """A scripted person: two mistakes, then asks for the legal moves and plays the first."""
    rules = preset("small-5-6")
    out = io.StringIO()
    script = ["not a move", "1.1-2.1"]
    asked = [False]

    def read(prompt: str) -> str:
        if script:
            return script.pop(0)
        if not asked[0]:
            asked[0] = True
            return "moves"
        asked[0] = False
        listed = out.getvalue().rstrip().splitlines()[-1]  # the answer to "moves"
        return listed.split(", ")[0]

    result = play_terminal(rules, "greedy-stochastic", human_side=0, seed=5, read=read, out=out)
    text = out.getvalue()
    assert "not a move:" in text
    assert "illegal: that piece is not yours" in text
    assert "computer plays" in text and "thinking: top moves" in text
    assert "you play x (south point, player 0 of 2)" in text
    assert result in ((1.0, 0.0), (0.0, 1.0), (0.5, 0.5))
    assert any(end in text for end in ("You win!", "Player(s) 1 win (", "The game is a draw ("))


def test_play_command_quits_cleanly_on_end_of_input():
    exe = Path(sys.executable).with_name("hopzero")
    proc = subprocess.run(
        [str(exe), "play", "--preset", "cc49", "--player", "greedy"],
        input="12.1-10.1\nbogus\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "computer plays" in proc.stdout and "not a move:" in proc.stdout and "You resign." in proc.stdout
    assert "Traceback" not in proc.stderr


def test_play_rejects_an_unknown_player_in_one_line():
    exe = Path(sys.executable).with_name("hopzero")
    proc = subprocess.run([str(exe), "play", "--player", "deep-blue"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "unknown player" in proc.stderr


def test_a_whole_star2_game_typed_with_hop_paths():
    """A scripted person on the star, as o (the computer opens): garbled and illegal moves first,
    then greedy moves typed as whole witness paths; one hop chain first with a wrong path."""
    rules = preset("star2")
    out = io.StringIO()
    shadow = new_state(rules)  # the person's view of the game, from what the terminal showed
    seen = [0]
    mistakes = ["1.1-2.1", "111-60", "moves", "5-17"]
    typed_chains: list[list[int]] = []

    def read(prompt: str) -> str:
        shown = [line.split()[2] for line in out.getvalue().splitlines() if line.startswith("computer plays ")]
        for text in shown[seen[0] :]:
            path = [int(c) for c in text.split("-")]
            assert is_witness_path(rules, shadow.board, path), text  # the computer shows its path
            shadow.play((path[0], path[-1]))
        seen[0] = len(shown)
        if mistakes:
            return mistakes.pop(0)
        move = max(shadow.legal_moves(), key=lambda m: (rules.geometry.forward_distance(1, m), m))
        path = move_path(rules, shadow.board, move)
        if len(path) > 2 and not typed_chains:
            wrong = next(
                [path[0], x, path[-1]]
                for x in range(rules.cells)
                if shadow.board[x] == -1 and not is_witness_path(rules, shadow.board, [path[0], x, path[-1]])
            )
            typed_chains.append(path)
            return "-".join(map(str, wrong))
        if len(path) > 2:
            typed_chains.append(path)
        shadow.play(move)
        return "-".join(map(str, path))

    result = play_terminal(rules, "greedy-stochastic", human_side=1, seed=3, read=read, out=out)
    text = out.getvalue()
    assert "you play o (south point, player 1 of 2)" in text and "118 119" in text  # the star with its numbers
    assert "not a move: move '1.1-2.1'" in text
    assert "illegal: the piece cannot reach that cell" in text
    assert "illegal: that piece is not yours" in text
    assert "illegal: the path " in text and "is not a chain of single hops" in text
    assert len(typed_chains) >= 2  # the refused path, then chains typed whole and accepted
    assert int(re.findall(r"^ply (\d+),", text, re.MULTILINE)[-1]) > 20
    assert result in ((1.0, 0.0), (0.0, 1.0), (0.5, 0.5))
    assert any(end in text for end in ("You win!", "Player(s) 0 win (", "The game is a draw ("))


def test_play_command_on_the_star():
    exe = Path(sys.executable).with_name("hopzero")
    proc = subprocess.run(
        [str(exe), "play", "--preset", "star2", "--player", "greedy", "--side", "o"],
        input="3-14\n111-102\n112-60\nbogus\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.endswith("98  99 100 101 102 103 104 105 106 107 108 109 110") for line in lines)
    board = [line for line in lines if re.fullmatch(r"[ .xoXO*0-9]+", line)]
    assert len(board) == 4 * 17 and max(map(len, board)) <= 80  # the board and its numbers fit a terminal
    assert proc.stdout.count("computer plays") == 2
    assert "illegal: that piece is not yours" in proc.stdout
    assert "illegal: the piece cannot reach" in proc.stdout and "not a move:" in proc.stdout
    assert "You resign." in proc.stdout and "Traceback" not in proc.stderr


def test_a_diamond_game_shows_and_takes_hop_chains_as_paths():
    """On the diamond the computer shows its moves as paths in both notations, and the person may
    type a hop chain's path, which is checked leg by leg."""
    rules = preset("cc49")
    out = io.StringIO()
    shadow = new_state(rules)
    seen = [0]
    typed: list[str] = []

    def read(prompt: str) -> str:
        shown = re.findall(r"^computer plays \S+ \((\S+)\)$", out.getvalue(), re.MULTILINE)
        for text in shown[seen[0] :]:
            path = [int(c) for c in text.split("-")]
            assert is_witness_path(rules, shadow.board, path), text
            shadow.play((path[0], path[-1]))
        seen[0] = len(shown)
        if len(typed) == 2 or shadow.ply > 60:
            return "quit"
        chains = [m for m in shadow.legal_moves() if len(move_path(rules, shadow.board, m)) > 2]
        if not chains:  # not yet: the first legal move, as its names
            move = shadow.legal_moves()[0]
            shadow.play(move)
            return format_move(rules, move)
        path = move_path(rules, shadow.board, chains[0])
        if not typed:  # first the chain's ends with a cell between them that no hop lands on
            wrong = next(x for x in range(rules.cells)
                         if not is_witness_path(rules, shadow.board, [path[0], x, path[-1]]))
            typed.append(f"{path[0]}-{wrong}-{path[-1]}")
            return typed[-1]
        typed.append("-".join(format_move(rules, [c]) for c in path))
        shadow.play(chains[0])
        return typed[-1]

    scores = play_terminal(rules, "greedy", human_side=1, seed=2, read=read, out=out)
    text = out.getvalue()
    assert scores == (1.0, 0.0)  # the person resigned
    assert re.search(r"^computer plays \d+\.\d+-\d+\.\d+(-\d+\.\d+)* \(\d+-\d+(-\d+)*\)$", text, re.MULTILINE)
    assert len(typed) == 2 and "is not a chain of single hops" in text
    assert text.count("You resign.") == 1 and "illegal: the piece" not in text
