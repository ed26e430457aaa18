"""``hopzero play`` as a person uses it: typed moves, mistakes answered, the game to its end."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from ccengine import preset
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
    assert result in (-1, 0, 1)
    assert any(end in text for end in ("You win!", "The computer wins.", "The game is a draw."))


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
