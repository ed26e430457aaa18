"""``hopzero bench WHAT --json`` through the installed command: every benchmark runs with tiny
settings and prints the keys docs/BENCHMARKS.md and README.md name. Speed is never asserted."""

import pytest
from test_cli import START_CC49, run, run_json

from hopzero.bench import BENCHMARKS

TINY_NET = ("--preset", "small-4-3", "--size", "tiny")

# WHAT -> (tiny arguments, keys its JSON must hold beside "benchmark" and "machine")
CASES = {
    "movegen": (
        ("--count", "8", "--min-time", "0.02", "--seed", "1"),
        {"cython_positions_per_s", "cython_per_call_positions_per_s", "cython_batch_positions_per_s",
         "reference_positions_per_s", "speedup", "per_call_speedup", "engines_agree", "positions", "preset",
         "mean_legal_moves"},
    ),
    "selfplay": (
        ("--preset", "small-4-3", "--games", "4", "--sims", "8", "--seconds", "0.2", "--seed", "1",
         "--backend", "eager,onnx", "--cache", "0,1000", "--rounds", "2"),
        {"runs", "speedup", "games", "simulations_per_move", "preset", "encoding", "rounds"},
    ),
    "actor": (
        (*TINY_NET, "--games", "4", "--sims", "8", "--steps", "2", "--seed", "1"),
        {"simulations_per_s", "evaluations_per_s", "mean_batch", "search_s", "network_s", "other_s", "torch_threads",
         "records", "wall_s"},
    ),
    "heuristic": (
        ("--preset", "small-4-3", "--games", "6", "--seed", "1"),
        {"games_per_s", "games", "records", "positions", "kept_positions", "mean_plies", "record_bytes_mean",
         "encode_ms_per_record"},
    ),
    "network": (
        (*TINY_NET, "--batch", "1,4", "--seconds", "0.02", "--seed", "1"),
        {"results", "parameters", "device", "threads", "size"},
    ),
    "learner": (
        (*TINY_NET, "--batch", "4,8", "--seconds", "0.02", "--threads", "1", "--device", "cpu", "--seed", "1"),
        {"results", "parameters", "device", "amp", "threads", "optimizer", "config", "net"},
    ),
    "match": (
        ("--preset", "small-4-3", "--size", "tiny", "--sims", "4", "--games", "4", "--parallel", "4",
         "--serial-games", "2", "--seed", "1"),
        {"modes", "speedup", "parameters", "sims", "size"},
    ),
    "alphabeta": (
        ("--preset", "small-5-6", "--depths", "1,2", "--count", "4", "--seed", "1"),
        {"results", "positions", "preset"},
    ),
    "replay": (  # against redis-servers it starts; tests/test_bench_replay.py checks the figures agree
        ("--writers", "1", "--seconds", "0.5", "--aof", "off", "--send-batch", "1", "--pool", "1", "--sims", "4",
         "--batch", "8", "--window", "2000", "--seed", "1"),
        {"runs", "preset", "writers", "pool_games", "positions_per_game", "record_bytes_mean", "actor_games_per_s",
         "actor_games_per_s_source"},
    ),
    "reply": (
        ("--preset", "cc49", "--sims", "8", "--positions", "2", "--seed", "1"),
        {"mean_s", "median_s", "max_s", "first_s", "loop_lag_max_ms", "positions", "player", "sims"},
    ),
    "rooms": (
        ("--preset", "star2", "--games", "2", "--plies", "2"),
        {"rss_mb", "peak_rss_mb", "rss_start_mb", "games", "plies_played", "evaluations", "models_loaded"},
    ),
    "games": (
        ("--preset", "star3", "--games", "3", "--seed", "1"),
        {"mean_plies", "mean_legal_moves", "score_by_seat", "wins_by_seat", "draws", "end_reasons", "players"},
    ),
}


def test_every_benchmark_has_a_case_and_is_listed_by_help():
    assert set(CASES) == set(BENCHMARKS)
    help_text = run("bench", "--help").stdout
    for what in BENCHMARKS:
        assert what in help_text


@pytest.mark.parametrize("what", sorted(CASES))
def test_bench_json_keys(what):
    args, keys = CASES[what]
    data = run_json("bench", what, *args)
    assert data["benchmark"] == what
    assert keys <= set(data), keys - set(data)
    assert {"cpu", "cpus", "python"} <= set(data["machine"])


def test_bench_text_is_readable():
    proc = run("bench", "heuristic", "--preset", "small-4-3", "--games", "3")
    assert "games/s" in proc.stdout and not proc.stdout.lstrip().startswith("{")


def test_movegen_engines_agree_on_generated_and_given_positions(tmp_path):
    data = run_json("bench", "movegen", "--count", "8", "--min-time", "0.02")
    assert data["positions"] == 8 and data["engines_agree"] is True
    positions = tmp_path / "positions.txt"
    positions.write_text(f"# the start\n{START_CC49}\n\n")
    data = run_json("bench", "movegen", "--positions", str(positions), "--min-time", "0.02")
    assert data["positions"] == 1 and data["positions_source"] == str(positions)


def test_actor_with_an_outside_opponent_counts_its_moves_apart():
    data = run_json("bench", "actor", *CASES["actor"][0], "--opponent", "greedy")
    assert data["opponent"] == "greedy" and data["opponent_seats"] == 1
    assert data["moves_per_s"] > 0 and data["opponent_moves_per_s"] > 0
    plain = run_json("bench", "actor", *CASES["actor"][0])
    assert plain["opponent"] == "" and plain["opponent_seats"] == 0 and plain["opponent_moves_per_s"] == 0


def test_results_per_batch_size():
    network = run_json("bench", "network", *CASES["network"][0])
    assert [r["batch"] for r in network["results"]] == [1, 4]
    assert all(r["calls"] >= 3 for r in network["results"])
    learner = run_json("bench", "learner", *TINY_NET, "--config", "paper", "--seconds", "0.02", "--threads", "1")
    assert [r["batch_size"] for r in learner["results"]] == [32]  # the paper config's batch
    assert learner["optimizer"] == "sgd_nesterov" and learner["net"] == "tiny" and learner["device"] == "cpu"


def test_seed_decides_what_is_measured():
    args = ("bench", "heuristic", "--preset", "small-4-3", "--games", "6")
    first, again, other = run_json(*args, "--seed", "4"), run_json(*args, "--seed", "4"), run_json(*args, "--seed", "5")
    same = ("positions", "kept_positions", "mean_plies", "record_bytes_mean")
    assert [first[k] for k in same] == [again[k] for k in same]
    assert [first[k] for k in same] != [other[k] for k in same]


@pytest.mark.parametrize(
    "args, words",
    [
        (["bench", "network", "--batch", "1,x"], ["--batch", "integers"]),
        (["bench", "network", "--batch", "0"], ["--batch", "at least 1"]),
        (["bench", "network", "--device", "tpu"], ["--device", "cpu, cuda"]),
        (["bench", "learner", "--config", "slow"], ["--config", "paper1"]),
        (["bench", "selfplay", "--games", "0"], ["--games", "at least 1"]),
        (["bench", "actor", "--size", "huge"], ["--size", "tiny"]),
        (["bench", "actor", "--preset", "star4", "--opponent", "greedy", "--opponent-seats", "4"],
         ["--opponent-seats 4", "star4 seats 4 players"]),
        (["bench", "actor", "--opponent", "nobody"], ["unknown player 'nobody'"]),
        (["bench", "movegen", "--seed", "-1"], ["--seed", "at least 0"]),
        (["bench", "frobnicate"], ["invalid choice", "movegen"]),
        (["bench", "reply", "--preset", "small-4-3"], ["no shipped model", "small-4-3"]),
        (["bench", "games", "--preset", "star4", "--players", "greedy", "random"], ["star4 seats 4 players"]),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(args, words):
    proc = run(*args, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    for word in words:
        assert word in proc.stderr


def test_games_score_every_seat_of_six_players():
    data = run_json("bench", "games", "--preset", "star6", "--games", "4", "--seed", "2")
    assert data["players"] == 6 and len(data["score_by_seat"]) == 6
    assert sum(data["score_by_seat"]) == pytest.approx(4.0, abs=0.01)
    assert sum(data["end_reasons"].values()) == 4 and data["mean_plies"] > 60


def test_a_bad_positions_file_names_its_line(tmp_path):
    positions = tmp_path / "positions.txt"
    positions.write_text(f"{START_CC49}\nxx/oo x\n")
    proc = run("bench", "movegen", "--positions", str(positions), check=False)
    assert proc.returncode == 2 and "line 2" in proc.stderr and "Traceback" not in proc.stderr


def test_selfplay_setups_side_by_side():
    data = run_json("bench", "selfplay", *CASES["selfplay"][0])
    assert [(r["backend"], r["eval_cache"]) for r in data["runs"]] == [("eager", 0), ("onnx", 1000)]
    assert data["speedup"][0] == 1.0 and data["speedup"][1] > 0
    assert data["runs"][0]["cache_hit_rate"] == 0.0 and 0.0 <= data["runs"][1]["cache_hit_rate"] < 1.0
    proc = run("bench", "selfplay", "--backend", "eager,onnx", "--cache", "0,1,2", check=False)
    assert proc.returncode == 2 and "--backend names 2 setup(s) and --cache 3" in proc.stderr
    proc = run("bench", "selfplay", "--backend", "eager,tpu", check=False)
    assert proc.returncode == 2 and "unknown backend 'tpu'" in proc.stderr


def test_katago_techniques_side_by_side():
    data = run_json("bench", "selfplay", "--preset", "small-4-3", "--games", "4", "--sims", "12", "--seconds", "0.3",
                    "--seed", "1", "--backend", "onnx", "--forced-playouts", "0,2", "--global-pooling", "0,1",
                    "--full-search-prob", "1,0.5", "--fast-sims", "3")
    off, on = data["runs"]
    assert (off["forced_playouts"], off["global_pooling"], off["full_search_prob"]) == (0.0, 0, 1.0)
    assert (on["forced_playouts"], on["global_pooling"], on["full_search_prob"]) == (2.0, 1, 0.5)
    assert off["recorded_per_s"] == off["moves_per_s"] and on["recorded_per_s"] < on["moves_per_s"]
    assert data["recorded_speedup"][0] == 1.0
    proc = run("bench", "selfplay", "--full-search-prob", "0.5", "--sims", "4", "--fast-sims", "4", check=False)
    assert proc.returncode == 2 and "--fast-sims 4 must be below --sims 4" in proc.stderr
    learner = run_json("bench", "learner", "--preset", "star2", "--size", "tiny", "--in-planes", "18", "--batch", "8",
                       "--seconds", "0.02", "--threads", "1", "--global-pooling", "1", "--aux-heads", "--weights")
    assert (learner["global_pooling"], learner["aux_heads"], learner["weights"]) == (1, True, True)
    assert learner["results"][0]["steps"] >= 3
