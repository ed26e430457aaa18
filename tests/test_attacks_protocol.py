"""Attack replays, protocol area: numbers and garbage fed to ``hopzero engine`` and the CLI.

Each test replays one attack of the reliability review (docs/RELIABILITY.md) against
the real installed ``hopzero`` command: the engine over its stdin/stdout as a referee drives it,
the CLI as a person types it. Every bad input must give one short error line, change nothing,
and leave the engine running.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from ccp_helpers import REPLY_GUARD_S, cells_text, engine, hopzero  # noqa: F401 - engine is a fixture

from ccengine import NotationError, format_position, new_state, parse_position, parse_star_path, preset, start_position
from learner.players import make_player
from hopzero.cli import main
from hopzero.play import play_terminal

RULES = preset("cc49")
#: Longest error line accepted: a short excerpt of the input and the list of valid commands.
MAX_ERROR_LINE = 300


def _midgame():
    """A cc49 state six plies in, with player 0 to move (not the start: its legal moves differ)."""
    state = new_state(RULES)
    players = [make_player("greedy-stochastic", RULES, seed=s) for s in (1, 2)]
    for _ in range(6):
        state.play(players[state.to_move].select(state))
    return state


MID = _midgame()
MID_COMMAND = f"position cells {cells_text(MID)} player {MID.to_move} ply {MID.ply}"


def _snapshot(e) -> str:
    """The engine's view of its position: greedy-stochastic's analysis depends on every piece."""
    e.send("analyze topk 1000")
    return e.until("analysis")[-1]


def _legal(state, best_line: str) -> bool:
    path = [int(c) for c in best_line.split()[1].split("-")]
    return (path[0], path[-1]) in state.legal_moves()


# --- garbage and bad numbers on the protocol ----------------------------------------------------

GARBAGE = {
    "superscript-two topk": "analyze topk ²".encode(),
    "superscript-two nodes": "go nodes ²".encode(),
    "arabic-indic movetime": "go movetime ٣".encode(),
    "ply past int32": f"position cells {cells_text(MID)} player 0 ply 2147483648".encode(),
    "ply past the game": f"position cells {cells_text(MID)} player 0 ply 201".encode(),
    "negative ply": f"position cells {cells_text(MID)} player 0 ply -1".encode(),
    "negative nodes": b"go nodes -5",
    "plus sign": b"go nodes +5",
    "underscore digits": b"go nodes 1_000",
    "nodes zero": b"go nodes 0",
    "5000 digits": b"go nodes " + b"9" * 5000,
    "20 digits topk": b"analyze topk 99999999999999999999",
    "binary bytes": bytes(range(0, 9)) + b"\xff\xfe\x80",
    "NUL inside a command": b"position startpos\x00",
    "invalid utf-8": b"go nodes \xc3\x28",
    "empty line": b"",
    "blank line": b" \t ",
    "unknown command": b"fly",
    "illegal move after startpos": b"position startpos moves 0-48",
    "a hop path of non-hops": f"position cells {cells_text(MID)} player 0 ply 6 moves 1-2-3".encode(),
    "long unknown command": b"fly" + b"y" * 4000,
    "10 MB line": b"go nodes " + b"7" * 10_000_000,
    "10 MB token with spaces": b"fly " + b"a " * 5_000_000,
}


def test_garbage_gives_one_short_error_line_and_changes_nothing(engine):
    """Every attack line in turn, to one engine: one short error line each, the game untouched."""
    e = engine("--preset", "cc49", "--player", "greedy-stochastic")
    e.send(MID_COMMAND)
    before = _snapshot(e)
    for name, garbage in GARBAGE.items():
        e.send(garbage)
        e.send("isready")
        lines = e.until("readyok")
        assert len(lines) == 2 and lines[0].startswith("info string error "), (name, lines[0][:MAX_ERROR_LINE])
        assert len(lines[0]) <= MAX_ERROR_LINE, (name, lines[0][:MAX_ERROR_LINE])
        assert _snapshot(e) == before, name  # same position, same game
    e.send("go nodes 1")
    assert _legal(MID, e.until("bestmove")[-1])
    assert e.close() == 0
    assert "Traceback" not in e.stderr()


# --- the same on the star: COMPACT121 positions and moves with witness paths --------------------

STAR = preset("star2")


def _star_midgame():
    """A star2 state eight plies in, player 0 to move."""
    state = new_state(STAR)
    players = [make_player("greedy-stochastic", STAR, seed=s) for s in (1, 2)]
    for _ in range(8):
        state.play(players[state.to_move].select(state))
    return state


STAR_MID = _star_midgame()
_START121 = cells_text(new_state(STAR))
_MID121 = cells_text(STAR_MID)
#: Player 0 home (cells 111..120), player 1 in mid-board: won by player 0, whatever its history.
_WON121 = "".join("0" if i >= 111 else "1" if 40 <= i < 50 else "." for i in range(121))


def _star_cells(cells: str, player: str = "0", ply: str = "0") -> bytes:
    return f"position cells {cells} player {player} ply {ply}".encode()


#: Bad star input and a word its error line must contain (what is wrong, in the engine's words).
STAR_GARBAGE = {
    "120 cells": (_star_cells(_START121[:-1]), "has 120 characters"),
    "122 cells": (_star_cells(_START121 + "."), "has 122 characters"),
    "a rhombus board": (_star_cells(cells_text(new_state(RULES))), "has 49 characters"),
    "9 pieces of player 0": (_star_cells(_START121.replace("0", ".", 1)), "9 pieces of player 0"),
    "11 pieces of player 1": (_star_cells(_START121.replace(".", "1", 1)), "11 pieces of player 1"),
    "a piece of player 2": (_star_cells(_START121.replace("0", "2", 1)), "piece of player 2"),
    "a piece of player 5": (_star_cells(_MID121.replace("1", "5", 1)), "piece of player 5"),
    "rhombus letters": (_star_cells(_START121.replace("0", "x")), "contains 'x'"),
    "player 2": (_star_cells(_START121, player="2"), "player '2' is unknown"),
    "player 5": (_star_cells(_START121, player="5"), "player '5' is unknown"),
    "player x": (_star_cells(_START121, player="x"), "player 'x' is unknown"),
    "player 00": (_star_cells(_START121, player="00"), "player '00' is unknown"),
    "ply a word": (_star_cells(_START121, ply="ten"), "ply 'ten' is not an integer"),
    "ply past the star's limit": (_star_cells(_START121, ply="241"), "at most 240"),
    "negative ply": (_star_cells(_START121, ply="-1"), "at least 0"),
    "superscript ply": (_star_cells(_START121, ply="²"), "not ASCII"),
    "no ply": (f"position cells {_START121} player 0".encode(), "position must be"),
    "a move nobody can make": (b"position startpos moves 0-60", "not legal: no step or chain"),
    "the opponent's piece": (b"position startpos moves 111-102", "player 1's"),
    "an empty cell": (b"position startpos moves 10-22", "cell 10 is empty"),
    "a move onto a piece": (b"position startpos moves 3-7", "cell 7 is occupied"),
    "the second move illegal": (b"position startpos moves 3-14 3-16", "move 2 '3-16'"),
    "a hop path that is no path": (b"position startpos moves 3-14-16", "not a chain of legal single hops"),
    "a path that loops": (b"position startpos moves 3-16-3-16", "not a chain of legal single hops"),
    "a pass on the star": (b"position startpos moves pass", "the star has no pass"),
    "a cell off the star": (b"position startpos moves 3-121", "at most 120"),
    "a dangling dash": (b"position startpos moves 3-", "cell ''"),
    "one cell": (b"position startpos moves 3", "joined by '-'"),
    "3000-digit cell": (b"position startpos moves 3-" + b"9" * 3000, "(3000 characters)"),
    "a move after the game's end": (
        _star_cells(_WON121, player="1", ply="101") + b" moves 40-29",
        "move 1 '40-29' (ply 101, player 1): the game is already over (scores 1,0)",
    ),
}


def test_star_garbage_gives_one_named_error_line_and_changes_nothing(engine):
    """Every bad star line in turn, to one star2 engine: one short error line that names the
    problem, the position and game untouched, the engine still playing."""
    e = engine("--preset", "star2", "--player", "greedy-stochastic")
    e.send(f"position cells {_MID121} player {STAR_MID.to_move} ply {STAR_MID.ply}")
    before = _snapshot(e)
    for name, (garbage, words) in STAR_GARBAGE.items():
        e.send(garbage)
        e.send("isready")
        lines = e.until("readyok")
        assert len(lines) == 2 and lines[0].startswith("info string error "), (name, lines[0][:MAX_ERROR_LINE])
        assert words in lines[0] and len(lines[0]) <= MAX_ERROR_LINE, (name, lines[0][:MAX_ERROR_LINE])
        assert _snapshot(e) == before, name
    e.send("go nodes 1")
    assert _legal(STAR_MID, e.until("bestmove")[-1])
    assert e.close() == 0
    assert "Traceback" not in e.stderr()


def test_setoption_echoes_a_short_excerpt(engine):
    e = engine("--preset", "cc49", "--player", "greedy")
    e.send("setoption name " + "v" * 4000)
    e.send("isready")
    lines = e.until("readyok")
    assert len(lines) == 2 and lines[0].startswith("info string option ") and len(lines[0]) <= MAX_ERROR_LINE
    assert e.close() == 0


def test_crlf_line_endings_are_commands(engine):
    e = engine("--preset", "cc49", "--player", "greedy")
    e.send(b"isready\r")
    assert e.until("readyok") == ["readyok"]
    assert e.close() == 0


# --- go limits and stop -------------------------------------------------------------------------


def test_go_nodes_beyond_the_cap_is_searched_at_the_cap(engine):
    e = engine("--preset", "small-5-6", "--player", "mcts-rollout:sims=10", "--max-nodes", "50")
    e.send("position startpos")
    e.send("go nodes 2000000000")
    lines = e.until("bestmove")
    assert "info string go nodes 2000000000 capped at 50 (hopzero engine --max-nodes)" in lines
    assert _legal(new_state(preset("small-5-6")), lines[-1])
    assert e.close() == 0


def test_go_movetime_beyond_the_cap_is_searched_at_the_cap(engine):
    e = engine("--preset", "small-5-6", "--player", "mcts-rollout:sims=10", "--max-movetime-ms", "20")
    e.send("position startpos")
    e.send("go movetime 86400000")
    lines = e.until("bestmove")
    assert "info string go movetime 86400000 capped at 20 (hopzero engine --max-movetime-ms)" in lines
    assert e.close() == 0


def _searching_engine(engine):
    """An engine in a search that cannot end by itself within the test (a day's movetime)."""
    e = engine("--preset", "small-5-6", "--player", "mcts-rollout:sims=10", "--max-movetime-ms", "86400000")
    e.send("position startpos")
    e.send("go movetime 86400000")
    e.send("isready")  # answered between chunks of the running search: proves it is running
    assert e.until("readyok") == ["readyok"]
    return e


def test_stop_ends_a_search_in_progress_with_its_best_move(engine):
    e = _searching_engine(engine)
    e.send("stop")
    lines = e.until("bestmove")
    assert _legal(new_state(preset("small-5-6")), lines[-1])
    e.send("isready")
    assert e.until("readyok") == ["readyok"]
    assert e.close() == 0


def test_the_end_of_input_stops_a_search_in_progress(engine):
    """The referee is gone (stdin closed): the search stops after its chunk, the answer is
    written, the engine exits 0; it does not search on for the day it was given."""
    e = _searching_engine(engine)
    e.proc.stdin.close()
    assert e.proc.wait(timeout=REPLY_GUARD_S) == 0
    lines = e.until("bestmove")
    assert _legal(new_state(preset("small-5-6")), lines[-1])


def test_go_nodes_is_stoppable_too(engine):
    e = engine("--preset", "small-5-6", "--player", "mcts-rollout:sims=10", "--max-nodes", "2000000000")
    e.send("position startpos")
    e.send("go nodes 2000000000")
    e.send("isready")
    assert e.until("readyok") == ["readyok"]
    e.send("stop")
    assert _legal(new_state(preset("small-5-6")), e.until("bestmove")[-1])
    assert e.close() == 0


def test_quit_during_a_search_answers_and_exits(engine):
    e = _searching_engine(engine)
    e.send("quit")
    assert e.until("bestmove")[-1].startswith("bestmove ")
    assert e.proc.wait(timeout=REPLY_GUARD_S) == 0


def test_commands_sent_during_a_search_run_after_its_bestmove(engine):
    rules = preset("small-5-6")
    state = new_state(rules)
    players = [make_player("greedy-stochastic", rules, seed=s) for s in (3, 4)]
    for _ in range(4):
        state.play(players[state.to_move].select(state))
    e = _searching_engine(engine)
    e.send(f"position cells {cells_text(state)} player {state.to_move} ply {state.ply}")
    e.send("stop")  # for the running search: it comes before the next go
    e.send("go nodes 20")
    first = e.until("bestmove")[-1]
    assert _legal(new_state(rules), first)  # the search on the start position
    assert _legal(state, e.until("bestmove")[-1])  # the waiting go, on the new position
    assert e.close() == 0


def test_isready_waits_behind_commands_held_for_a_search(engine):
    e = _searching_engine(engine)
    e.send("fly")
    e.send("isready")
    e.send("stop")
    lines = e.until("readyok")
    assert lines[0].startswith("info time") or lines[0].startswith("bestmove"), lines
    assert [line.split()[0] for line in lines[-3:]] == ["bestmove", "info", "readyok"]
    assert lines[-2].startswith("info string error unknown command 'fly'")
    assert e.close() == 0


def test_a_flood_during_a_search_is_bounded_and_stop_still_gets_through(engine):
    e = _searching_engine(engine)
    for _ in range(100):
        e.send("protocol")
    e.send("stop")
    lines = e.until("bestmove")
    dropped = [line for line in lines if line.startswith("info string error 64 commands already wait")]
    assert len(dropped) == 36 and all(len(line) <= MAX_ERROR_LINE for line in dropped)
    e.send("isready")
    after = e.until("readyok")
    assert after == ["protocol ccp"] * 64 + ["readyok"]
    assert e.close() == 0


# --- the command line's numbers -----------------------------------------------------------------

START = format_position(RULES, start_position(RULES))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*hopzero(), *args], capture_output=True, text=True, timeout=REPLY_GUARD_S)


def _main(capsys, args: list[str]) -> tuple[int, str, str]:
    """``hopzero ARGS`` in this process (one torch import for all cases): status, stdout, stderr."""
    try:
        status = main(args)
    except SystemExit as exc:  # argparse's own errors
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


#: The star2 start in COMPACT121 (ten ``0``, 101 ``.``, ten ``1``) and player 0 to move.
S2 = "0" * 10 + "." * 101 + "1" * 10 + " 0"


def test_the_installed_command_refuses_an_unbounded_perft_and_a_huge_ply():
    """The attacks as typed: before, perft ran forever and move died with a traceback, on the
    rhombus and, with a star position, the star."""
    for args, word in [
        (["perft", "--depth", "100"], "at most 8"),
        (["move", "--player", "greedy", "--position", START.replace(" 0", " 2147483648")], "at most 200"),
        (["move", "--preset", "star2", "--player", "greedy", "--position", f"{S2} 2147483648"], "at most 240"),
    ]:
        proc = _run(*args)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
        assert len(proc.stderr.strip().splitlines()) == 1 and word in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize(
    "args, words",
    [
        (["perft", "--depth", "100"], ["--depth", "at most 8"]),
        (["perft", "--depth", "²"], ["--depth", "not an integer"]),
        (["perft", "--depth", "1", "--moves", "²-3"], ["move '²-3'"]),
        (["perft", "--depth", "1", "--moves", "1-" + "9" * 5000], ["must be two cell indices", "characters"]),
        (["move", "--player", "greedy", "--position", START.replace(" 0", " 2147483648")],
         ["ply count 2147483648", "at most 200"]),
        (["move", "--player", "greedy", "--position", START.replace(" 0", " ²")], ["ply count '²'"]),
        (["move", "--player", "greedy", "--position", START.replace(" 0", " -1")], ["ply count -1 must be at least 0"]),
        (["move", "--player", "greedy", "--position", START, "--seed", "99999999999"], ["--seed", "at most"]),
        (["move", "--preset", "star2", "--player", "greedy", "--position", f"{S2} 2147483648"],
         ["ply count 2147483648 must be at most 240"]),
        (["move", "--preset", "star2", "--player", "greedy", "--position", f"{S2} {'9' * 5000}"],
         ["ply count", "(5000 characters)", "0..240"]),
        (["move", "--preset", "star2", "--player", "greedy", "--position", f"{S2} {'1' * 3000}"],
         ["ply count", "(3000 characters)"]),
        (["move", "--preset", "star2", "--player", "greedy", "--position", f"{S2} \u0663"], ["ply count"]),
        (["move", "--preset", "star2", "--player", "greedy", "--position", f"{S2} 0 " + "x" * 3000],
         ["star position", "characters)"]),
        (["perft", "--preset", "star2", "--depth", "1", "--moves", "3-" + "9" * 5000], ["must be two cell indices"]),
        (["match", "--a", "greedy", "--b", "random", "--games", "99999999999999999999"], ["--games"]),
        (["match", "--a", "greedy", "--b", "random", "--games", "2", "--workers", "100000"],
         ["--workers", "at most 256"]),
        (["match", "--a", "greedy", "--b", "random", "--games", "2", "--parallel", "1000000000"],
         ["--parallel", "at most"]),
        (["match", "--a", "greedy", "--b", "random", "--games", "2", "--random-opening", "100000"],
         ["--random-opening", "at most"]),
        (["match", "--a", "greedy", "--b", "random", "--games", "2", "--seed", "-1"], ["--seed"]),
        (["bench", "selfplay", "--sims", "1000000000"], ["--sims", "at most"]),
        (["bench", "learner", "--seconds", "inf"], ["--seconds", "not a positive number"]),
        (["bench", "movegen", "--min-time", "nan"], ["--min-time", "not a positive number"]),
        (["dashboard", "render", "--minutes", "1e400"], ["--minutes"]),
        (["engine", "--max-nodes", "0"], ["--max-nodes", "at least 1"]),
        (["engine", "--max-movetime-ms", "1e3"], ["--max-movetime-ms", "not an integer"]),
        (["play", "--seed", "²"], ["--seed", "not an integer"]),
    ],
)
def test_bad_numbers_on_the_command_line_give_one_line_and_exit_2(capsys, args, words):
    status, out, err = _main(capsys, args)
    assert status == 2, err[-2000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-2000:]
    assert len(lines[0]) <= MAX_ERROR_LINE, lines[0][:MAX_ERROR_LINE]
    for word in words:
        assert word in lines[0]
    assert out == ""


@pytest.mark.parametrize("ply", ["2147483648", "9" * 5000, "1" * 3000, "-1", "\u0663", "+1"])
@pytest.mark.parametrize("name", ["cc49", "star2", "star6"])
def test_every_position_reader_bounds_the_ply(name, ply):
    """``parse_position`` is what loads a position anywhere (``move``, ``perft``, the browser
    interface's position box): a bad ply is one short NotationError, never an overflow."""
    rules = preset(name)
    text = format_position(rules, start_position(rules)).rsplit(" ", 1)[0] + " " + ply
    with pytest.raises(NotationError) as info:
        parse_position(rules, text)
    assert "ply count" in str(info.value) and len(str(info.value)) <= MAX_ERROR_LINE


@pytest.mark.parametrize("path", ["3-" + "9" * 5000, "3-14-" + "1" * 3000, "\u0663-14"])
def test_star_move_paths_are_read_by_the_bounded_reader(path):
    with pytest.raises(NotationError) as info:
        parse_star_path(STAR, path)
    assert len(str(info.value)) <= MAX_ERROR_LINE


def test_perft_at_the_depth_bound_is_accepted(capsys):
    status, out, err = _main(capsys, ["perft", "--preset", "small-4-3", "--depth", "8", "--json"])
    assert status == 0, err
    assert len(json.loads(out)["perft"]) == 8


# --- hopzero play: the person's moves are numbers from outside too -------------------------------


@pytest.mark.parametrize("typed", ["9" * 5000 + "-1", "٣-5", "1.²-2.1", "48-" + "1" * 30])
def test_play_answers_a_bad_number_and_asks_again(typed):
    import io

    out = io.StringIO()
    answers = iter([typed, "quit"])
    result = play_terminal(RULES, "greedy", human_side=0, seed=0, read=lambda prompt: next(answers), out=out)
    assert result == (0.0, 1.0)  # the person resigned after the bad move was refused
    refusal = [line for line in out.getvalue().splitlines() if line.startswith("not a move")]
    assert len(refusal) == 1 and len(refusal[0]) <= MAX_ERROR_LINE


@pytest.mark.parametrize(
    "spec",
    ["mcts-rollout:sims=²", "mcts-rollout:sims=٣", "mcts-rollout:sims=1_000", "mcts-rollout:sims=99999999999",
     "mcts-rollout:sims=8,c=nan", "mcts-rollout:sims=8,c=inf", "mcts-rollout:sims=-3", "mcts-rollout:sims=" + "9" * 100_000],
)
def test_numbers_inside_a_player_spec_are_strict_and_bounded(spec):
    """A SPEC's numbers go through the same strict reader as the protocol's; the error quotes a
    short excerpt of the value, never all of it."""
    from ccengine.players import PlayerSpecError

    with pytest.raises(PlayerSpecError) as raised:
        make_player(spec, RULES, seed=1)
    assert len(str(raised.value)) < 400
