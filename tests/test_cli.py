"""The installed ``hopzero`` command: JSON shapes other tools read, and one-line argument errors."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ccengine import ReferenceState, format_position, preset, start_position
from ccengine.reference import perft


def hopzero_command():
    """The console script installed beside this Python (or on PATH); ``python -m`` as a last resort."""
    beside = Path(sys.executable).parent / "hopzero"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("hopzero")
    if found:
        return [found]
    if os.environ.get("CI"):
        pytest.fail("the hopzero command is not installed (pip install .)")
    return [sys.executable, "-m", "hopzero.cli"]


def run(*args, check=True):
    proc = subprocess.run(hopzero_command() + list(args), capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def run_json(*args):
    proc = run(*args, "--json")
    return json.loads(proc.stdout)


START_CC49 = format_position(preset("cc49"), start_position(preset("cc49")))


# --- JSON shapes ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["cython", "reference"])
def test_perft_json(engine):
    rules = preset("small-4-3")
    data = run_json("perft", "--preset", "small-4-3", "--depth", "3", "--engine", engine)
    want = [perft(ReferenceState(rules), d) for d in (1, 2, 3)]
    assert data == {"preset": "small-4-3", "perft": want}


def test_perft_divide_from_a_position():
    pos = "..oo/...o/x.../xx.. x 0"
    data = run_json("perft", "--preset", "small-4-3", "--position", pos, "--depth", "2", "--divide")
    assert set(data) == {"preset", "perft", "divide"}
    assert all(len(row) == 3 for row in data["divide"])
    assert sum(n for _, _, n in data["divide"]) == data["perft"][-1]
    assert len(data["divide"]) == data["perft"][0]


def test_perft_after_moves_counts_from_the_new_position():
    first = run_json("perft", "--preset", "small-4-3", "--depth", "2", "--divide")
    s, e, n = first["divide"][0]
    after = run_json("perft", "--preset", "small-4-3", "--depth", "1", "--moves", f"{s}-{e}")
    assert after["perft"] == [n]


def test_match_json():
    data = run_json("match", "--preset", "paper", "--a", "greedy", "--b", "random", "--games", "4", "--seed", "1")
    assert {"a_wins", "b_wins", "draws", "mean_plies", "mean_legal_moves", "seat_wins"} <= set(data)
    assert data["a_wins"] + data["b_wins"] + data["draws"] == 4
    again = run_json(
        "match", "--preset", "paper", "--a", "greedy", "--b", "random", "--games", "4", "--seed", "1", "--workers", "2"
    )
    for key in ("a_wins", "b_wins", "draws", "mean_plies", "mean_legal_moves", "a_first", "a_second"):
        assert again[key] == data[key]


def test_match_parallel_plays_the_same_games_batched():
    args = ("match", "--preset", "small-4-3", "--a", "mcts:sims=16", "--b", "greedy", "--games", "6", "--seed", "2")
    one_at_a_time = run_json(*args)
    batched = run_json(*args, "--parallel", "6")
    assert batched["parallel"] == 6
    for key in ("a_wins", "b_wins", "draws", "mean_plies", "a_first", "a_second"):
        assert batched[key] == one_at_a_time[key]
    proc = run(*args, "--parallel", "6", "--workers", "2", check=False)
    assert proc.returncode == 2 and "--parallel" in proc.stderr


def test_match_text_shows_a_summary_and_progress():
    proc = run("match", "--preset", "small-5-3", "--a", "greedy", "--b", "random", "--games", "3", "--seed", "0")
    assert "greedy" in proc.stdout and "draws" in proc.stdout
    assert "game 3/3" in proc.stderr


def test_move_json():
    data = run_json("move", "--preset", "cc49", "--position", START_CC49, "--player", "greedy", "--seed", "3")
    assert set(data) == {"move"}
    assert tuple(data["move"]) in ReferenceState(preset("cc49")).legal_moves()


# --- errors: exit 2, one line on stderr, no traceback --------------------------------------


@pytest.mark.parametrize(
    "args, words",
    [
        (["perft", "--preset", "cc50", "--depth", "1"], ["unknown preset 'cc50'", "cc49"]),
        (["perft", "--depth", "0"], ["--depth", "at least 1"]),
        (["perft", "--depth", "two"], ["--depth", "not an integer"]),
        (["perft", "--position", "xx/oo x", "--depth", "1"], ["rows", "7"]),
        (["perft", "--depth", "1", "--moves", "0-1"], ["not legal", "legal:"]),
        (["perft", "--depth", "1", "--moves", "0-99"], ["off the board"]),
        (["move", "--position", START_CC49, "--player", "grandmaster"], ["unknown player", "greedy"]),
        (["move", "--position", START_CC49, "--player", "greedy:depth=2"], ["unknown option 'depth'"]),
        (["move", "--position", START_CC49.replace("x", "o", 1), "--player", "greedy"], ["pieces"]),
        (["match", "--a", "greedy", "--b", "nobody", "--games", "2"], ["unknown player 'nobody'", "random"]),
        (["match", "--a", "greedy", "--b", "random", "--games", "0"], ["--games"]),
        (["bench", "movegen", "--positions", "/nonexistent/positions.txt"], ["No such file"]),
        (["frobnicate"], ["invalid choice", "perft"]),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(args, words):
    proc = run(*args, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0]
    assert proc.stdout == ""


def test_endgames_prints_each_players_record_and_refuses_a_rhombus():
    data = run_json("endgames", "--players", "greedy", "greedy", "--positions", "2", "--seed", "1")
    assert data["preset"] == "star2" and data["family"] == "parked" and len(data["players"]) == 2
    assert all(p["positions"] == 2 and p["won"] + sum(p["drawn"].values()) + p["lost"] == 2 for p in data["players"])
    bad = run("endgames", "--preset", "cc49", "--players", "greedy", "greedy", check=False)
    assert bad.returncode == 2 and "built on the star" in bad.stderr


def test_match_plays_every_seat_order_when_asked():
    data = run_json("match", "--preset", "star3", "--players", "greedy", "greedy-stochastic", "random",
                    "--games", "6", "--seed", "2", "--seating", "permutations")
    assert data["seating"] == "permutations" and data["games"] == 6
    assert sorted(sum(r["by_seat"][s]["games"] for r in data["results"]) for s in range(3)) == [6, 6, 6]
    assert all(s["games"] == 2 for r in data["results"] for s in r["by_seat"])  # each seat twice
    bad = run("match", "--preset", "star3", "--players", "greedy", "greedy", "greedy", "--seating", "all", check=False)
    assert bad.returncode == 2 and "--seating" in bad.stderr
