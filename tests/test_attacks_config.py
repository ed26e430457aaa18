"""Attacks on the configuration and the driver (docs/RELIABILITY.md), replayed.

- Every field of the config tree (and every rules option under ``rules`` and ``selfplay.rules``)
  refuses a value of the wrong type and, where it has a range or choices, one outside them, with
  an error that starts with the field's dotted path. A field declared without a check fails here.
- ``hopzero train`` with a bad value or an unknown preset exits 2 with one line, before Ray starts.
- A component that fails every time it starts stops the run: exit 1, one line naming it.
- Ctrl-C during start-up stops the driver, even one started with SIGINT ignored.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from plumbing.fields import field_check, leaf_fields
from ccengine.rules import Rules
from hopzero.config import ConfigError, TrainConfig, load_config
from hopzero.train import RestartBudget
from test_cli import hopzero_command
from train_helpers import TINY

# ---------------------------------------------------------------------------------------------
# Every field of the tree
# ---------------------------------------------------------------------------------------------


def _leaves(cls: type, prefix: str = "") -> list[tuple[str, dataclasses.Field[Any], Any]]:
    """(dotted path, field, type) of every leaf field under config class ``cls``."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            out += _leaves(tp, f"{prefix}{f.name}.")
    out += [(f"{prefix}{f.name}", f, tp) for f, tp in leaf_fields(cls)]
    return out


#: Values of another type than the annotation, by annotation (Literal and unions below).
_WRONG_TYPE: dict[Any, list[Any]] = {
    bool: ["yes", 1],
    int: ["x", 1.5, True],
    float: ["x", True, [1]],
    str: [5, True],
}


def _wrong_types(tp: Any) -> list[Any]:
    origin = typing.get_origin(tp)
    if tp in _WRONG_TYPE:
        return _WRONG_TYPE[tp]
    if origin is dict:
        return [5, "x", [1]]
    if origin is tuple:
        return ["x", 5, ["x"]]
    if origin is typing.Literal:
        return [5, "no-such-choice"]
    if origin in (typing.Union, types.UnionType):  # values of none of the members' types
        members = typing.get_args(tp)
        pool = [True, 7, 0.5, "x", [1]]
        return [v for v in pool if not any(_is_member(v, m) for m in members)]
    raise AssertionError(f"no wrong values known for {tp}: teach this test the new field type")


def _is_member(value: Any, member: Any) -> bool:
    if member is type(None):
        return value is None
    if member is int:  # a bool is no integer here, as in plumbing.fields
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, typing.get_origin(member) or member)


def _bad_values(f: dataclasses.Field[Any], tp: Any) -> list[Any]:
    check = field_check(f)
    integer = tp is int or typing.get_args(tp)[:1] == (int,)
    wrong = _wrong_types(tp)
    out_of_range = check.out_of_range(integer) if check else []
    if typing.get_origin(tp) is tuple:  # a range applies to each item: one bad item
        default = list(f.default)
        out_of_range = [[*default[:-1], v] if default else [v] for v in out_of_range
                        if not isinstance(v, tuple)] + [list(v) for v in out_of_range if isinstance(v, tuple)]
    return wrong + out_of_range


TREE = _leaves(TrainConfig)
RULES = [(f"{section}.{f.name}", f, tp) for section in ("rules", "selfplay.rules") for f, tp in leaf_fields(Rules)]


def test_the_walk_covers_the_tree():
    paths = {path for path, _, _ in TREE}
    assert {"network.history", "replay.backend", "evaluation.gate.games", "run.progress_every_s", "seed"} <= paths
    assert len(paths) > 70


@pytest.mark.parametrize("path,field,tp", TREE + RULES, ids=[p for p, _, _ in TREE + RULES])
def test_every_field_declares_a_check_and_refuses_bad_values(path, field, tp):
    assert field_check(field) is not None, f"{path} is declared without plumbing.fields.checked()"
    bad = _bad_values(field, tp)
    assert bad
    for value in bad:
        with pytest.raises(ConfigError) as info:
            load_config("demo", overrides=[f"{path}={json.dumps(value)}"])
        message = str(info.value)
        assert message.startswith(f"{path}: "), message
        assert "\n" not in message


@pytest.mark.parametrize(
    "override,message",
    [
        ("network.history=-2", "network.history: must be an integer in [1, 16], got -2"),
        ("replay.backend=foo", "replay.backend: must be one of 'memory', 'redis', got 'foo'"),
        ("rules=5", "rules: must be a mapping, got 5"),
        ("selfplay.actor_cpus=0", "selfplay.actor_cpus: must be a number > 0, got 0"),
        ("selfplay.actors=-1", "selfplay.actors: must be an integer >= 0, got -1"),
        ("run.minutes=-5", "run.minutes: must be a number >= 0, got -5"),
        ("stage1.keep_fraction=5", "stage1.keep_fraction: must be a number in (0, 1], got 5"),
        ("replay.samples_per_insert=-1", "replay.samples_per_insert: must be a number > 0, got -1"),
        ("network.size=huge", "network.size: must be one of 'paper', 'fast', 'deep', 'tiny', got 'huge'"),
        ("run.progress_every_s=0", "run.progress_every_s: must be a number >= 1, got 0"),
        ("rules.max_plies=0", "rules.max_plies: must be an integer >= 1, got 0"),
        ("evaluation.gate.min_games=60", "evaluation.gate.min_games: must be at most games (20), got 60"),
        ("preset=nosuch",
         "preset: unknown preset 'nosuch'; valid: cc49, paper, cc81, star2, star3, star4, star6, small-N-k"),
    ],
)
def test_the_attacks_bad_values_are_refused_when_the_config_loads(override, message):
    with pytest.raises(ConfigError) as info:
        load_config("demo", overrides=[override])
    assert str(info.value).startswith(message)


def test_a_checkpointed_config_is_checked_too():
    data = load_config("demo").to_dict()
    data["network"]["history"] = 0
    with pytest.raises(ConfigError, match=r"^network.history: must be an integer in \[1, 16\], got 0$"):
        TrainConfig.from_dict(data)


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,line",
    [
        (["--set", "network.history=-2"], "hopzero train: error: network.history: must be an integer in [1, 16], got -2"),
        (["--preset", "nosuch"], "hopzero train: error: preset: unknown preset 'nosuch'; valid: cc49, paper, cc81, star2, "
                                 "star3, star4, star6, small-N-k (N 4..6, k 1, 3, 6)"),
        (["--set", "rules=5"], "hopzero train: error: rules: must be a mapping, got 5"),
    ],
)
def test_train_refuses_bad_values_with_one_line_before_ray_starts(tmp_path, args, line):
    run_dir = tmp_path / "run"
    proc = subprocess.run(hopzero_command() + ["train", "--config", "demo", "--run-dir", str(run_dir), *args],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [line]
    assert proc.stdout == ""
    assert not run_dir.exists(), "the run directory was written before the config was checked"


# ---------------------------------------------------------------------------------------------
# The restart budget
# ---------------------------------------------------------------------------------------------


def test_the_restart_budget_counts_failures_within_the_window():
    budget = RestartBudget(limit=2, window_s=60)
    assert budget.spend("learner", 0) and budget.spend("learner", 10)
    assert budget.spend("actor-0", 11), "each component has its own budget"
    assert not budget.spend("learner", 20) and budget.failures("learner") == 3
    assert budget.spend("evaluator", 20)
    budget = RestartBudget(limit=2, window_s=60)
    for t in (0, 50, 100, 150):  # one failure a minute never exhausts it
        assert budget.spend("learner", t)
    assert budget.failures("learner") == 2



def test_restarts_back_off_doubling_with_each_failure_in_the_window():
    budget = RestartBudget(limit=9, window_s=600, backoff_s=2)
    assert budget.delay("actor-0") == 0, "nothing to wait for before a first failure"
    delays = []
    for t in range(7):
        budget.spend("actor-0", t)
        delays.append(budget.delay("actor-0"))
    assert delays == [2, 4, 8, 16, 32, 60, 60], "doubling, at most a minute"
    budget.spend("learner", 700)
    assert budget.delay("learner") == 2 and budget.delay("actor-0") == 60, "each component its own"
    budget.spend("actor-0", 1000)  # the earlier failures left the window
    assert budget.failures("actor-0") == 1 and budget.delay("actor-0") == 2


def _checkpoint_with_sgd(run_dir: Path, overrides: list[str]) -> None:
    """A run directory as a run with SGD leaves it: its config and a learner checkpoint."""
    from hopzero.rundir import RunDir
    from learner.checkpoint import save_checkpoint
    from learner.records import versions_now
    from learner.training import Trainer

    config = load_config("demo", overrides=overrides)
    RunDir(run_dir).start(config, versions_now())
    trainer = Trainer(config.network.net_config(config.training_rules()), config.learner, seed=0)
    extra = {"stage": 2, "config": config.to_dict(), "config_hash": config.hash()}
    save_checkpoint(run_dir / "checkpoints", trainer, extra)


def test_a_learner_that_fails_at_every_start_stops_the_run(tmp_path):
    """Resumed with another optimiser, the learner cannot load its checkpoint's optimiser state:
    it fails in its constructor at every start. The driver restarts it ``run.max_restarts``
    times, then stops everything and exits 1 with one line naming it (before: 0 learner steps,
    "Finished", exit 0 when the time ran out)."""
    run_dir = tmp_path / "run"
    common = [*TINY, "run.minutes=10", "run.max_restarts=2"]
    _checkpoint_with_sgd(run_dir, common)
    sets = [arg for item in [*common, "learner.optimizer=adamw"] for arg in ("--set", item)]
    proc = subprocess.run(hopzero_command() + ["train", "--config", "demo", "--run-dir", str(run_dir), *sets],
                          capture_output=True, text=True, timeout=400, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("hopzero train: error: the learner failed 3 times within 600 s (run.max_restarts=2); "
                           "its last error: CheckpointError: "), last
    assert "optimiser state is 'sgd_nesterov'" in last and "'adamw'" in last, last
    assert "Stopped after" in proc.stdout and "Finished" not in proc.stdout


# ---------------------------------------------------------------------------------------------
# Ctrl-C during start-up
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_the_first_ctrl_c_during_start_up_stops_the_driver(tmp_path, inherited):
    """The driver interrupted while Ray starts (its run directory just written), with SIGINT
    inherited as Python's default or as ignored (a `&` in a script), stops at once: exit 130,
    a line that says so, no training. Before, an ignored SIGINT stayed ignored until the run's
    loop began, and the run went on."""
    run_dir = tmp_path / "run"
    sets = [arg for item in [*TINY, "run.minutes=5"] for arg in ("--set", item)]
    handler = signal.SIG_IGN if inherited == "ignored" else signal.SIG_DFL

    proc = subprocess.Popen(
        hopzero_command() + ["train", "--config", "demo", "--run-dir", str(run_dir), *sets],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, handler),
    )
    try:
        deadline = time.monotonic() + 240
        while not (run_dir / "run.json").is_file():  # written just before Ray starts
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, out + err
    assert "stopped (Ctrl-C) during start-up" in out, out + err
    assert err.strip().splitlines()[-1] == "hopzero train: interrupted"
    assert not (run_dir / "metrics.jsonl").exists(), "the run went on after Ctrl-C"
