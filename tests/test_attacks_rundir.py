"""Attack replays, run-directory area: half-done seeding, damaged run files, foreign models, the
files an export leaves, and the promotions a summary counts.

Each test drives the real code: ``hopzero`` as typed (in this process through ``main``, or as the
installed command where a process limit is part of the attack), a real run directory on disk,
the shipped networks. Every refusal must be one line, exit 2, and say what to do.
"""

from __future__ import annotations

import io
import json
import resource
import subprocess
from pathlib import Path

import pytest
from ccp_helpers import REPLY_GUARD_S, hopzero

from evaluator.promotion import HISTORY_FILE, promote
from hopzero.cli import main
from hopzero.config import load_config
from hopzero.initial_model import SEEDING_FILE, load_initial_model, settle_seeding
from hopzero.rundir import RunDir
from learner.model_files import promoted_model_path
from learner.records import versions_now
from plumbing.run_files import BEST_FILE, read_best

MAX_ERROR_LINE = 600
#: The shipped cc49 network is 565 KiB: a 200-block file size limit (ulimit -f 200) cuts it.
FILE_LIMIT = 200 * 1024


def _main(capsys, args: list[str]) -> tuple[int, str, str]:
    try:
        status = main(args)
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def _one_line(status: int, err: str, *words: str) -> str:
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1, err[-3000:]
    assert len(lines[0]) <= MAX_ERROR_LINE and "Traceback" not in err, lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _limited(limit: int):
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return preexec


def _seeding_files(run_dir: Path) -> list[str]:
    names = [BEST_FILE, HISTORY_FILE, SEEDING_FILE, "run.json"]
    found = [n for n in names if (run_dir / n).exists()]
    return found + [p.name for p in (run_dir / "models").glob("*")] if (run_dir / "models").is_dir() else found


# --- --init-model: all or nothing ------------------------------------------------------------------


def test_an_initial_model_that_cannot_be_written_leaves_nothing(tmp_path):
    """`ulimit -f 200`: before, exit 1 with a traceback and a run.json claiming v7000 with no
    model and no best.json; now one line, and nothing of the seeding is left."""
    run_dir = tmp_path / "run"
    proc = subprocess.run([*hopzero(), "train", "--config", "demo", "--init-model", "shipped", "--run-dir",
                           str(run_dir)], capture_output=True, text=True, timeout=REPLY_GUARD_S,
                          preexec_fn=_limited(FILE_LIMIT), check=False)
    _one_line(proc.returncode, proc.stderr, "--init-model shipped", "File too large", "undone")
    assert _seeding_files(run_dir) == []


@pytest.fixture(scope="module")
def demo():
    config = load_config("demo")
    return config, load_initial_model(config, "shipped")


def _half_seeded(run_dir: Path, demo) -> None:
    """What a driver killed between the seeding's files and run.json leaves."""
    config, initial = demo
    initial.seed(run_dir, config)
    assert (run_dir / SEEDING_FILE).is_file() and not (run_dir / "run.json").exists()


def test_a_half_seeded_run_is_undone_by_a_start_without_the_model(tmp_path, demo):
    config, _ = demo
    run_dir = tmp_path / "run"
    _half_seeded(run_dir, demo)
    out = io.StringIO()
    assert settle_seeding(RunDir(run_dir), None, out) is False
    assert "undid the unfinished seeding" in out.getvalue() and "v7000" in out.getvalue()
    assert _seeding_files(run_dir) == []
    info = RunDir(run_dir).start(config, versions_now())
    assert "initial_model" not in info


def test_a_half_seeded_run_is_completed_by_the_same_model(tmp_path, demo):
    config, initial = demo
    run_dir = tmp_path / "run"
    _half_seeded(run_dir, demo)
    rundir = RunDir(run_dir)
    assert settle_seeding(rundir, initial, io.StringIO()) is True
    initial.seed(run_dir, config)  # what hopzero train does next
    info = rundir.start(config, versions_now(), initial_model=initial.provenance())
    initial.committed(run_dir)
    assert info["initial_model"]["version"] == 7000 and read_best(run_dir).version == "7000"
    assert not (run_dir / SEEDING_FILE).exists()
    assert settle_seeding(rundir, None, io.StringIO()) is False and read_best(run_dir).version == "7000"


def test_a_run_json_that_claims_a_model_it_never_got_loses_the_claim(tmp_path, demo):
    """The state a crash can leave: run.json says v7000, no model file, no best.json."""
    config, initial = demo
    run_dir = tmp_path / "run"
    RunDir(run_dir).start(config, versions_now(), initial_model=initial.provenance())
    assert settle_seeding(RunDir(run_dir), initial, io.StringIO()) is True  # the same model completes it
    out = io.StringIO()
    assert settle_seeding(RunDir(run_dir), None, out) is False
    assert "undid" in out.getvalue()
    assert "initial_model" not in json.loads((run_dir / "run.json").read_text())


# --- damaged run files: one line, exit 2, what to do ------------------------------------------------


@pytest.fixture
def seeded(tmp_path, demo) -> Path:
    """A run directory whose best model is the shipped cc49 network, as a finished run's is."""
    config, initial = demo
    run_dir = tmp_path / "run"
    initial.seed(run_dir, config)
    RunDir(run_dir).start(config, versions_now(), initial_model=initial.provenance())
    initial.committed(run_dir)
    return run_dir


def _flip_a_byte(path: Path, offset: int = 1000) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE = {
    "run.json not JSON": (lambda run: (run / "run.json").write_text('{"run_id": '), "run.json is damaged",
                          "restore it from a backup"),
    "run.json a list": (lambda run: (run / "run.json").write_text("[]"), "run.json is damaged", "--run-dir"),
    "config.yaml not YAML": (lambda run: (run / "config.yaml").write_text("network: [\n"), "config.yaml is damaged",
                             "restore it from a backup"),
    "best.json not JSON": (lambda run: (run / BEST_FILE).write_text('{"version": '), "best.json is damaged",
                           "point best.json at an intact"),
    "best.json without a field": (lambda run: (run / BEST_FILE).write_text('{"version": "7000"}'),
                                  "missing field", "point best.json at an intact"),
    "best model flipped": (lambda run: _flip_a_byte(promoted_model_path(run, 7000)), "changed or damaged",
                           "point best.json at an intact"),
    "best model gone": (lambda run: promoted_model_path(run, 7000).unlink(), "is missing",
                        "point best.json at an intact"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_run_file_stops_train_in_one_line(seeded, capsys, damage):
    harm, *words = DAMAGE[damage]
    harm(seeded)
    before = {p.name: p.read_bytes() for p in seeded.iterdir() if p.is_file()}
    status, _, err = _main(capsys, ["train", "--config", "demo", "--run-dir", str(seeded)])
    _one_line(status, err, *words)
    assert {p.name: p.read_bytes() for p in seeded.iterdir() if p.is_file()} == before  # nothing changed


@pytest.mark.parametrize("damage", ["best.json not JSON", "best model flipped", "best model gone"])
@pytest.mark.parametrize("command", ["match", "engine"])
def test_a_damaged_best_model_named_as_a_run_directory_is_one_line(seeded, capsys, damage, command):
    harm, *words = DAMAGE[damage]
    harm(seeded)
    spec = f"mcts:model={seeded},sims=2"
    args = ["match", "--a", spec, "--b", "greedy", "--games", "2"] if command == "match" else \
        ["engine", "--player", spec]
    status, _, err = _main(capsys, args)
    _one_line(status, err, *words)


# --- a model of another game ------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["match", "--preset", "paper", "--a", "mcts:model=shipped-cc49,sims=2", "--b", "greedy", "--games", "2"],
    ["engine", "--preset", "paper", "--player", "mcts:model=shipped-cc49,sims=2"],
    ["match", "--preset", "paper", "--a", "dqn:model=shipped-cc49", "--b", "greedy", "--games", "2"],
    ["export", "--onnx", "shipped-cc49", "OUT", "--preset", "paper"],
], ids=["match", "engine", "dqn", "export"])
def test_a_model_of_another_preset_is_refused_everywhere(capsys, tmp_path, args):
    from ccengine import preset
    from learner.model_files import shipped_model_path

    cc49 = str(shipped_model_path(preset("cc49")))
    args = [a.replace("shipped-cc49", cc49).replace("OUT", str(tmp_path / "out.onnx")) for a in args]
    status, _, err = _main(capsys, args)
    _one_line(status, err, "plays 'cc49', not 'paper'")
    assert list(tmp_path.iterdir()) == []


# --- export: no temporary file left behind ------------------------------------------------------


def test_an_export_to_a_directory_leaves_nothing(capsys, tmp_path):
    target = tmp_path / "a-directory"
    target.mkdir()
    status, _, err = _main(capsys, ["export", "--onnx", "shipped", str(target), "--preset", "cc49"])
    _one_line(status, err, "cannot write", "nothing was written")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-directory"] and not any(target.iterdir())


def test_an_export_onto_a_full_disk_leaves_nothing(tmp_path):
    """A file size limit stands in for a full disk: the write fails part way."""
    proc = subprocess.run([*hopzero(), "export", "--onnx", "shipped", str(tmp_path / "x.onnx"), "--preset", "cc49"],
                          capture_output=True, text=True, timeout=REPLY_GUARD_S, preexec_fn=_limited(100 * 1024),
                          check=False)
    _one_line(proc.returncode, proc.stderr, "File too large", "nothing was written")
    assert list(tmp_path.iterdir()) == []


# --- the promotions a summary counts ----------------------------------------------------------------


def test_the_summary_counts_the_promotion_a_restarted_evaluator_finished(seeded, demo):
    """An evaluator killed between best.json and the registry finishes the promotion when Ray
    restarts it, and tells the registry of its new best without calling it a promotion: the
    summary said "1 promotion(s)" where promotions.jsonl has two. The session's count now comes
    from promotions.jsonl (the registry's, where that is more)."""
    import shutil

    from hopzero.train import _progress_line, _replaced_bests, _summary, run_start_promotions

    config, _ = demo
    rundir = RunDir(seeded)
    before = _replaced_bests(rundir)  # the first best model (v7000) is no promotion
    assert before == 0
    for version in (7100, 7200):  # the second one finished by the restarted evaluator
        path = promoted_model_path(seeded, version)
        shutil.copy(promoted_model_path(seeded, 7000), path)
        promote(seeded, version, path, score=0.6, games=20)
    snap = {"time": 60.0, "selfplay": {"games": 10, "positions_per_s": 1.0, "sims_per_s": 1.0},
            "learner": {"steps": 7300}, "evaluator": {}, "registry": {"best_version": 7200, "promotions": 1},
            "promotions": run_start_promotions(1, rundir, before)}
    assert snap["promotions"] == 2
    assert "promotions 2" in _progress_line(snap)
    assert "2 promotion(s)" in _summary(config, rundir, snap, 60.0, False, [])["text"]
    # a resumed session counts its own
    assert run_start_promotions(0, rundir, _replaced_bests(rundir)) == 0
