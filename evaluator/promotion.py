"""Promotions: the run's "best model" pointer changed atomically, and their history.

The pointer ``<run_dir>/best.json`` and its readers live in :mod:`plumbing.run_files`. A
promotion writes the new pointer with :func:`plumbing.run_files.atomic_write_text` (temporary
file, fsync, ``os.replace``, fsync of the directory), under a lock on the run directory.

Each promotion is then appended to ``<run_dir>/promotions.jsonl`` (one JSON object a line). The
pointer is the truth; the history is a log: a crash between the two steps leaves the log line
missing, never the promotion, and :func:`log_promotion` run again (the evaluator does on start)
adds it, once. A half-written last line (a crash mid-append) is skipped on reading.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from collections.abc import Iterator
from pathlib import Path

from plumbing.run_files import BEST_FILE, BestModel, PromotionError, atomic_write_text, read_pointer, sha256_file

try:  # POSIX: serialise promoters of one run directory (the evaluator, a person by hand).
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["HISTORY_FILE", "log_promotion", "promote", "promotion_history", "write_pointer"]

HISTORY_FILE = "promotions.jsonl"
_LOCK_FILE = ".best.lock"


@contextlib.contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    """An exclusive lock on the run directory's promotion (a no-op without fcntl)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    with open(run_dir / _LOCK_FILE, "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _stored_path(run_dir: Path, checkpoint: Path) -> str:
    try:
        return checkpoint.resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:
        return str(checkpoint.resolve())


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def promote(
    run_dir: str | os.PathLike[str],
    version: str | int,
    checkpoint: str | os.PathLike[str],
    *,
    score: float,
    games: int,
    expect_current: str | int | None = None,
    promoted_at: str | None = None,
) -> BestModel:
    """Make ``checkpoint`` (model ``version``) the best model, atomically, and log it:
    :func:`write_pointer`, then :func:`log_promotion`. Idempotent: run again after a crash, it
    finishes what is missing and writes nothing twice."""
    best = write_pointer(
        run_dir, version, checkpoint, score=score, games=games, expect_current=expect_current, promoted_at=promoted_at
    )
    log_promotion(run_dir, best)
    return best


def write_pointer(
    run_dir: str | os.PathLike[str],
    version: str | int,
    checkpoint: str | os.PathLike[str],
    *,
    score: float,
    games: int,
    expect_current: str | int | None = None,
    promoted_at: str | None = None,
) -> BestModel:
    """Point ``best.json`` at ``checkpoint`` (model ``version``): the promotion's commit.

    ``expect_current``, when given, is the version the caller gated against: the promotion is
    refused with :class:`PromotionError` if the best model changed meanwhile (a compare-and-swap,
    so two evaluators cannot both promote over the same model). Use ``""`` to mean "no best model
    yet". A pointer that already names this version and file is kept as it is (the promotion was
    committed before a crash), whatever ``expect_current`` says.
    """
    run = Path(run_dir)
    ckpt = Path(checkpoint)
    if not run.is_dir():
        raise PromotionError(f"run directory {run} does not exist")
    if not ckpt.is_file():
        raise PromotionError(f"checkpoint {ckpt} is not a file")
    digest = sha256_file(ckpt)
    with _locked(run):
        current = read_pointer(run)
        if current is not None and (current.version, current.sha256) == (str(version), digest):
            return current
        if expect_current is not None:
            current_version = "" if current is None else current.version
            if current_version != str(expect_current):
                raise PromotionError(
                    f"best model is {current_version or 'unset'}, not {expect_current or 'unset'}: "
                    "it changed since the gating match started"
                )
        best = BestModel(
            version=str(version),
            path=_stored_path(run, ckpt),
            sha256=digest,
            promoted_at=promoted_at or _now(),
            score=float(score),
            games=int(games),
        )
        atomic_write_text(run / BEST_FILE, json.dumps(best.to_dict(), indent=2, sort_keys=True) + "\n")
    return best


def log_promotion(run_dir: str | os.PathLike[str], best: BestModel) -> bool:
    """Append ``best`` to the history unless its last line already records it (same version and
    file digest): a promotion finished after a crash is logged once. The torn tail of an append a
    crash interrupted is cut off first. Returns whether a line was written."""
    run = Path(run_dir)
    with _locked(run):
        with open(run / HISTORY_FILE, "a+b") as log:
            log.seek(0)
            text = log.read()
            complete = text[: text.rfind(b"\n") + 1]  # without a torn tail
            if len(complete) < len(text):
                log.truncate(len(complete))
            if _last_entry(complete) == (best.version, best.sha256):
                return False
            log.write((json.dumps(best.to_dict(), sort_keys=True) + "\n").encode())
            log.flush()
            os.fsync(log.fileno())
    return True


def _last_entry(text: bytes) -> tuple[str, str] | None:
    """``(version, sha256)`` of the last complete history line, None if there is none or it is
    damaged."""
    lines = [line for line in text.split(b"\n") if line.strip()]
    try:
        data = json.loads(lines[-1])
        return str(data["version"]), str(data["sha256"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def promotion_history(run_dir: str | os.PathLike[str]) -> list[BestModel]:
    """Every logged promotion, oldest first. A damaged line raises :class:`PromotionError`,
    except a last line without its newline (a crash mid-append), which is skipped."""
    path = Path(run_dir) / HISTORY_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    if lines and lines[-1] != "":
        lines = lines[:-1]  # unterminated tail: an interrupted append
    out: list[BestModel] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PromotionError(f"{path}:{number} is damaged ({exc})") from exc
        out.append(BestModel.from_dict(data, where=f"{path}:{number}"))
    return out
