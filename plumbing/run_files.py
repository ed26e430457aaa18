"""The files of a run directory that several rooms read: the best-model pointer and JSONL logs.

Lives in ``plumbing``, below every room, because several rooms read them: a ``model=`` option
naming a run directory (the network player), the evaluator that writes the pointer
(``evaluator.promotion``) and the driver. Writing the pointer -- a promotion -- is the evaluator's job.

``<run_dir>/best.json`` holds ``{version, path, sha256, promoted_at, score, games}``: which
network file the actors play with. Readers check the file's SHA-256 against the pointer, so a
model file overwritten or damaged after its promotion is refused with a clear error instead of
being played. :func:`atomic_write_text` replaces a file so that a reader sees the old text or
the new, never a mix, and a crash leaves one of the two.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BEST_FILE",
    "BestModel",
    "PromotionError",
    "append_jsonl",
    "atomic_write_bytes",
    "atomic_write_text",
    "fsync_dir",
    "read_best",
    "read_jsonl",
    "read_pointer",
    "sha256_file",
]

BEST_FILE = "best.json"
_FIELDS = ("version", "path", "sha256", "promoted_at", "score", "games")
#: What a person does about a damaged pointer or best model (docs/RELIABILITY.md says more).
_RECOVERY = ("point best.json at an intact models/model-*.pt, or restore it from a backup "
             "(docs/RELIABILITY.md, 'Promotion, model files and checkpoints')")


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


def fsync_dir(directory: Path) -> None:
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
    """Replace ``path`` with ``text`` (UTF-8) atomically, as :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: temp file in the same directory (same
    filesystem, so the rename is atomic), fsync, ``os.replace``, fsync the directory. On any
    failure (a full disk, a file size limit, ``path`` a directory) the old file is untouched and
    the temp file removed."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def read_pointer(run_dir: Path) -> BestModel | None:
    """The pointer as written, unverified; None before the first promotion."""
    pointer = run_dir / BEST_FILE
    try:
        text = pointer.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return BestModel.from_dict(json.loads(text), where=f"{pointer} is damaged")
    except json.JSONDecodeError as exc:
        raise PromotionError(f"{pointer} is damaged (not JSON: {exc}): {_RECOVERY}") from exc
    except PromotionError as exc:
        raise PromotionError(f"{exc}: {_RECOVERY}") from exc


def read_best(run_dir: str | os.PathLike[str], *, verify: bool = True) -> BestModel | None:
    """The current best model, or None before the first promotion.

    With ``verify`` (the default) the checkpoint must exist and match the recorded SHA-256;
    otherwise :class:`PromotionError` says what is wrong.
    """
    run = Path(run_dir)
    best = read_pointer(run)
    if best is None or not verify:
        return best
    checkpoint = best.checkpoint(run)
    try:
        digest = sha256_file(checkpoint)
    except FileNotFoundError as exc:
        raise PromotionError(f"best model {best.version}: checkpoint {checkpoint} is missing: {_RECOVERY}") from exc
    if digest != best.sha256:
        raise PromotionError(
            f"best model {best.version}: checkpoint {checkpoint} was changed or damaged after its promotion (SHA-256 "
            f"{digest[:12]}..., {BEST_FILE} records {best.sha256[:12]}...): {_RECOVERY}"
        )
    return best


def append_jsonl(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append one JSON object as one line (``evaluations.jsonl``, ``metrics.jsonl``)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, separators=(",", ":")) + "\n")


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The objects of a JSONL log, oldest first; a torn line (a crash mid-append) is skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
