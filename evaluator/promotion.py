"""The run's "best model" pointer, changed atomically, and its history of promotions.

``<run_dir>/best.json`` holds ``{version, path, sha256, promoted_at, score, games}``: which
checkpoint the actors should play with. A promotion writes the new pointer to a temporary file
in the same directory, fsyncs it and ``os.replace``s it over the old one (atomic on POSIX), then
fsyncs the directory, so a reader sees the old pointer or the new one, never a mix, and a crash
leaves one of the two. Readers check the checkpoint's SHA-256 against the pointer, so a
checkpoint overwritten or damaged after its promotion is refused with a clear error instead of
being played.

Each promotion is then appended to ``<run_dir>/promotions.jsonl`` (one JSON object a line). The
pointer is the truth; the history is a log: a crash between the two steps loses the log line,
never the promotion, and a half-written last line (a crash mid-append) is skipped on reading.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

try:  # POSIX: serialise promoters of one run directory (the evaluator, a person by hand).
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "BEST_FILE",
    "HISTORY_FILE",
    "BestModel",
    "PromotionError",
    "atomic_write_text",
    "promote",
    "promotion_history",
    "read_best",
    "sha256_file",
]

BEST_FILE = "best.json"
HISTORY_FILE = "promotions.jsonl"
_LOCK_FILE = ".best.lock"
_FIELDS = ("version", "path", "sha256", "promoted_at", "score", "games")


class PromotionError(RuntimeError):
    """The best-model pointer or its checkpoint is missing, damaged or does not match."""


@dataclass(frozen=True)
class BestModel:
    """The pointer's content. ``path`` is relative to the run directory when the checkpoint
    lies inside it (so a run directory can be moved), absolute otherwise."""

    version: str
    path: str
    sha256: str
    promoted_at: str
    """UTC time of the promotion, ISO 8601."""
    score: float
    """The candidate's gating score against the model it replaced."""
    games: int
    """The gating games counted."""

    def checkpoint(self, run_dir: str | os.PathLike[str]) -> Path:
        """The checkpoint's path, resolved against ``run_dir``."""
        p = Path(self.path)
        return p if p.is_absolute() else Path(run_dir) / p

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any, where: str = "pointer") -> BestModel:
        if not isinstance(d, dict):
            raise PromotionError(f"{where}: expected a JSON object, found {type(d).__name__}")
        missing = [k for k in _FIELDS if k not in d]
        if missing:
            raise PromotionError(f"{where}: missing field(s) {', '.join(missing)}")
        try:
            model = cls(
                version=str(d["version"]),
                path=str(d["path"]),
                sha256=str(d["sha256"]),
                promoted_at=str(d["promoted_at"]),
                score=float(d["score"]),
                games=int(d["games"]),
            )
        except (TypeError, ValueError) as exc:
            raise PromotionError(f"{where}: bad field value ({exc})") from exc
        if len(model.sha256) != 64 or any(c not in "0123456789abcdef" for c in model.sha256):
            raise PromotionError(f"{where}: sha256 {model.sha256!r} is not 64 lowercase hex digits")
        return model


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """The SHA-256 of a file's bytes, read in chunks (checkpoints can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable: the directory entry lives in the directory's own data."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` atomically: temp file in the same directory (same
    filesystem, so the rename is atomic), fsync, ``os.replace``, fsync the directory. On any
    failure the old file is untouched and the temp file removed."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


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


def _read_pointer(run_dir: Path) -> BestModel | None:
    pointer = run_dir / BEST_FILE
    try:
        text = pointer.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PromotionError(f"{pointer} is damaged (not JSON: {exc})") from exc
    return BestModel.from_dict(data, where=str(pointer))


def read_best(run_dir: str | os.PathLike[str], *, verify: bool = True) -> BestModel | None:
    """The current best model, or None before the first promotion.

    With ``verify`` (the default) the checkpoint must exist and match the recorded SHA-256;
    otherwise :class:`PromotionError` says what is wrong.
    """
    run = Path(run_dir)
    best = _read_pointer(run)
    if best is None or not verify:
        return best
    checkpoint = best.checkpoint(run)
    try:
        digest = sha256_file(checkpoint)
    except FileNotFoundError as exc:
        raise PromotionError(f"best model {best.version}: checkpoint {checkpoint} is missing") from exc
    if digest != best.sha256:
        raise PromotionError(
            f"best model {best.version}: checkpoint {checkpoint} has SHA-256 {digest}, "
            f"but {run / BEST_FILE} records {best.sha256} (changed or damaged after promotion)"
        )
    return best


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
    """Make ``checkpoint`` (model ``version``) the best model, atomically, and log it.

    ``expect_current``, when given, is the version the caller gated against: the promotion is
    refused with :class:`PromotionError` if the best model changed meanwhile (a compare-and-swap,
    so two evaluators cannot both promote over the same model). Use ``""`` to mean "no best model
    yet".
    """
    run = Path(run_dir)
    ckpt = Path(checkpoint)
    if not run.is_dir():
        raise PromotionError(f"run directory {run} does not exist")
    if not ckpt.is_file():
        raise PromotionError(f"checkpoint {ckpt} is not a file")
    digest = sha256_file(ckpt)
    with _locked(run):
        if expect_current is not None:
            current = _read_pointer(run)
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
        # The pointer is already in place; the log line follows (see the module docstring).
        with open(run / HISTORY_FILE, "a", encoding="utf-8") as log:
            log.write(json.dumps(best.to_dict(), sort_keys=True) + "\n")
            log.flush()
            os.fsync(log.fileno())
    return best


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
