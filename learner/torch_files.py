"""Torch files that hold data only: network files and learner checkpoints share these rules.

- Reading is ``torch.load(weights_only=True)``: a file that pickles a class or a function is
  refused, never executed; every way a file can fail to read (missing, empty, truncated, another
  kind of file, pickled objects) is one exception of the caller's type, one line naming the file.
- PyTorch does not verify its archive's checksums, so a flipped byte in a tensor loads silently:
  each file carries ``sha256``, a digest over its whole content (:func:`content_digest`: keys,
  values, tensor dtypes, shapes and bytes), checked on every load.
- Writing is atomic (:func:`write_atomic`): a crash leaves the old file or the new one, never a
  half-written file under the real name, only a ``.NAME.tmp.PID`` leftover that
  :func:`remove_stale_temporaries` clears.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import re
import struct
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from plumbing.run_files import fsync_dir

__all__ = ["DIGEST_KEY", "check_digest", "content_digest", "read_torch_file", "remove_stale_temporaries", "write_atomic"]

#: The key of the digest inside every file; the digest covers every other key.
DIGEST_KEY = "sha256"


def _feed(h: Any, obj: Any) -> None:
    """Feed ``obj`` into hash ``h`` in a canonical, type-tagged way (dict order as stored)."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().to("cpu").contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(obj, Mapping):
        h.update(b"D%d" % len(obj))
        for k, v in obj.items():
            _feed(h, k)
            _feed(h, v)
    elif isinstance(obj, (list, tuple)):
        h.update(b"L" if isinstance(obj, list) else b"U")
        h.update(b"%d" % len(obj))
        for v in obj:
            _feed(h, v)
    elif obj is None or isinstance(obj, bool):
        h.update(b"N" if obj is None else (b"T1" if obj else b"T0"))
    elif isinstance(obj, int):
        h.update(b"I%d;" % obj)
    elif isinstance(obj, float):
        h.update(b"F" + struct.pack("<d", obj))
    elif isinstance(obj, str):
        b = obj.encode("utf-8")
        h.update(b"S%d:" % len(b) + b)
    elif isinstance(obj, bytes):
        h.update(b"B%d:" % len(obj) + obj)
    else:
        raise TypeError(f"{type(obj).__name__} cannot go into a data file (plain types and tensors only)")


def content_digest(payload: Mapping[str, Any]) -> str:
    """SHA-256 over every entry of ``payload`` except :data:`DIGEST_KEY`; ``TypeError`` for an
    entry that is neither plain data nor a tensor."""
    h = hashlib.sha256()
    _feed(h, {k: v for k, v in payload.items() if k != DIGEST_KEY})
    return h.hexdigest()


def read_torch_file(path: Path, error: type[Exception], kind: str) -> Any:
    """``torch.load(path, weights_only=True)`` on the CPU; every failure is one ``error`` naming
    ``path`` and saying what is wrong (``kind`` names what the file should be)."""
    if not path.is_file():
        raise error(f"{path}: no such {kind if kind.endswith('file') else kind + ' file'}")
    try:
        with warnings.catch_warnings():
            # A plain pickle file draws a protocol warning before the refusal explained below.
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        # Name the offending global, and nothing of torch's advice on how to allow it.
        m = re.search(r"GLOBAL (\S+)", str(e))
        detail = f" (it names {m.group(1)})" if m else " (or uses pickle instructions torch does not accept)"
        raise error(
            f"{path}: refused: the file pickles Python objects{detail}; weights-only loading allows none, "
            f"because unpickling them could run code. A hopzero {kind} holds plain data only."
        ) from None
    except Exception as e:  # torch.load raises many unrelated types on garbage (IndexError on /etc/passwd)
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise error(
            f"{path}: not a readable torch {kind} (truncated, damaged or another kind of file): {first}"
        ) from None


def check_digest(path: Path, obj: Mapping[str, Any], error: type[Exception], kind: str) -> None:
    """Refuse ``obj`` (read from ``path``) unless its recorded digest matches its content."""
    recorded = obj.get(DIGEST_KEY)
    if not isinstance(recorded, str):
        raise error(f"{path}: {kind} without its {DIGEST_KEY} digest (written by an older hopzero, or not by hopzero)")
    try:
        digest = content_digest(obj)
    except TypeError as e:
        raise error(f"{path}: damaged {kind}: {e}") from None
    if digest != recorded:
        raise error(f"{path}: damaged {kind}: its content does not match its {DIGEST_KEY} digest")


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp.{os.getpid()}")


def write_atomic(path: str | os.PathLike[str], state: Mapping[str, Any]) -> Path:
    """``torch.save(state)`` to ``path`` atomically: same-directory temporary file, flush,
    fsync, ``os.replace``, fsync of the directory."""
    path = Path(path)
    tmp = _temporary(path)
    # Serialised in memory first: a full disk or a file size limit is then an OSError naming
    # its cause, where torch's zip writer would raise an opaque RuntimeError.
    buffer = io.BytesIO()
    torch.save(dict(state), buffer)
    try:
        with open(tmp, "wb") as f:
            f.write(buffer.getbuffer())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync_dir(path.parent)
    return path


def remove_stale_temporaries(directory: Path, pattern: str) -> list[Path]:
    """Delete the temporary files :func:`write_atomic` left in ``directory`` for targets matching
    the glob ``pattern`` when a writer died mid-write; returns them. Only one process writes a
    directory's files (the learner its checkpoints, the evaluator its models), so a temporary
    file that is not this process's own is a dead writer's."""
    own = f".tmp.{os.getpid()}"
    removed = []
    for p in directory.glob(f".{pattern}.tmp.*"):
        if p.name.endswith(own) or not p.is_file():
            continue
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
            removed.append(p)
    return removed
