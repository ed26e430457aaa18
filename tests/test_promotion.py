"""The best-model pointer: atomic replacement, checksum verification, history."""

import json
import os

import pytest

from evaluator import promotion
from evaluator.promotion import HISTORY_FILE, log_promotion, promote, promotion_history, write_pointer
from plumbing.run_files import BEST_FILE, PromotionError, read_best, sha256_file


@pytest.fixture
def run(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    return tmp_path


def checkpoint(run, version: int, payload: bytes | None = None):
    path = run / "checkpoints" / f"model_{version:04d}.pt"
    path.write_bytes(payload if payload is not None else f"weights of {version}".encode() * 100)
    return path


def test_no_best_model_before_the_first_promotion(run):
    assert read_best(run) is None
    assert promotion_history(run) == []


def test_promote_then_read(run):
    ckpt = checkpoint(run, 1)
    best = promote(run, 1, ckpt, score=0.6, games=40, promoted_at="2026-01-01T00:00:00+00:00")
    assert best.path == "checkpoints/model_0001.pt"  # relative: the run directory can move
    assert best.sha256 == sha256_file(ckpt)
    assert read_best(run) == best
    on_disk = json.loads((run / BEST_FILE).read_text())
    assert on_disk == {
        "version": "1",
        "path": "checkpoints/model_0001.pt",
        "sha256": best.sha256,
        "promoted_at": "2026-01-01T00:00:00+00:00",
        "score": 0.6,
        "games": 40,
    }
    assert best.checkpoint(run) == ckpt


def test_history_in_order(run):
    for v in (1, 2, 3):
        promote(run, v, checkpoint(run, v), score=0.55 + v / 100, games=20 * v)
    assert [b.version for b in promotion_history(run)] == ["1", "2", "3"]
    assert read_best(run).version == "3"


def test_damaged_checkpoint_is_detected(run):
    ckpt = checkpoint(run, 1)
    promote(run, 1, ckpt, score=0.6, games=40)
    data = bytearray(ckpt.read_bytes())
    data[10] ^= 0xFF
    ckpt.write_bytes(bytes(data))
    with pytest.raises(PromotionError, match="SHA-256"):
        read_best(run)
    assert read_best(run, verify=False).version == "1"  # the pointer itself is fine
    ckpt.unlink()
    with pytest.raises(PromotionError, match="missing"):
        read_best(run)


@pytest.mark.parametrize(
    "text",
    [
        '{"version": "1", "path": "x"',  # truncated
        "",  # empty
        "[1, 2]",  # not an object
        '{"version": "1"}',  # fields missing
        '{"version": "1", "path": "x", "sha256": "abc", "promoted_at": "t", "score": 0.6, "games": 4}',
        '{"version": "1", "path": "x", "sha256": "' + "0" * 64 + '", "promoted_at": "t", "score": "hi", "games": 4}',
    ],
)
def test_damaged_pointer_is_detected(run, text):
    (run / BEST_FILE).write_text(text)
    with pytest.raises(PromotionError):
        read_best(run)


def test_failed_write_leaves_the_old_pointer(run, monkeypatch):
    promote(run, 1, checkpoint(run, 1), score=0.6, games=40)
    before = (run / BEST_FILE).read_bytes()

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(promotion.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        promote(run, 2, checkpoint(run, 2), score=0.7, games=40)
    monkeypatch.undo()
    assert (run / BEST_FILE).read_bytes() == before
    assert read_best(run).version == "1"
    assert not [p for p in os.listdir(run) if p.endswith(".tmp")]  # the temp file was removed
    assert [b.version for b in promotion_history(run)] == ["1"]  # no log line for a failed promotion


def test_pointer_is_replaced_never_rewritten_in_place(run):
    """Readers holding the old file see it whole: the new pointer is a new inode."""
    promote(run, 1, checkpoint(run, 1), score=0.6, games=40)
    with open(run / BEST_FILE, "rb") as old:
        promote(run, 2, checkpoint(run, 2), score=0.6, games=40)
        assert json.loads(old.read())["version"] == "1"
    assert read_best(run).version == "2"


def test_compare_and_swap(run):
    promote(run, 1, checkpoint(run, 1), score=0.6, games=40, expect_current="")
    promote(run, 2, checkpoint(run, 2), score=0.6, games=40, expect_current=1)
    with pytest.raises(PromotionError, match="changed"):
        promote(run, 3, checkpoint(run, 3), score=0.6, games=40, expect_current=1)
    assert read_best(run).version == "2"


def test_interrupted_history_append_is_skipped(run):
    promote(run, 1, checkpoint(run, 1), score=0.6, games=40)
    with open(run / HISTORY_FILE, "a") as f:
        f.write('{"version": "2", "pa')  # a crash in the middle of an append
    assert [b.version for b in promotion_history(run)] == ["1"]
    with open(run / HISTORY_FILE, "a") as f:
        f.write("\n")  # now a complete, damaged line
    with pytest.raises(PromotionError, match="damaged"):
        promotion_history(run)


def test_bad_promotions_are_refused(run, tmp_path):
    with pytest.raises(PromotionError, match="not a file"):
        promote(run, 1, run / "checkpoints" / "nope.pt", score=0.6, games=40)
    with pytest.raises(PromotionError, match="does not exist"):
        promote(tmp_path / "missing", 1, checkpoint(run, 1), score=0.6, games=40)


def test_checkpoint_outside_the_run_is_stored_absolute(run, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("other") / "m.pt"
    elsewhere.write_bytes(b"weights")
    best = promote(run, 7, elsewhere, score=0.6, games=40)
    assert os.path.isabs(best.path)
    assert read_best(run).checkpoint(run) == elsewhere.resolve()


def test_a_promotion_repeated_after_a_crash_changes_nothing(run):
    """The restarted evaluator runs a promotion again: the pointer stays, no second log line."""
    promote(run, 1, checkpoint(run, 1), score=0.6, games=40, expect_current="")
    first = promote(run, 2, checkpoint(run, 2), score=0.7, games=40, expect_current=1)
    pointer, history = (run / BEST_FILE).read_bytes(), (run / HISTORY_FILE).read_bytes()
    again = promote(run, 2, checkpoint(run, 2), score=0.7, games=40, expect_current=1)
    assert again == first
    assert (run / BEST_FILE).read_bytes() == pointer and (run / HISTORY_FILE).read_bytes() == history


def test_a_pointer_without_its_log_line_gets_it_once(run):
    promote(run, 1, checkpoint(run, 1), score=0.6, games=40)
    best = write_pointer(run, 2, checkpoint(run, 2), score=0.7, games=40, expect_current=1)  # then killed
    assert [b.version for b in promotion_history(run)] == ["1"]
    assert log_promotion(run, read_best(run)) is True
    assert log_promotion(run, read_best(run)) is False
    assert promotion_history(run) == [promotion_history(run)[0], best]


def test_an_append_after_a_torn_line_drops_the_torn_line(run):
    """A crash mid-append left half a line; the next promotion must not glue onto it (that made
    a complete, damaged line and the whole history unreadable)."""
    promote(run, 1, checkpoint(run, 1), score=0.6, games=40)
    with open(run / HISTORY_FILE, "a") as f:
        f.write('{"version": "2", "pa')
    promote(run, 3, checkpoint(run, 3), score=0.6, games=40)
    assert [b.version for b in promotion_history(run)] == ["1", "3"]
