"""Learner checkpoints: atomic, self-describing, integrity-checked, and data only.

A checkpoint file is ``torch.save`` of a dict of plain Python types and CPU tensors::

    format          "hopzero.checkpoint/1"
    net_config      NetConfig.to_dict()
    learner_config  LearnerConfig.to_dict()
    model           model state_dict (batch-norm statistics included)
    average         the weight average (``LearnerConfig.weight_average``), keyed like ``model``;
                    {} when off. Optional: files written before it are read as {}.
    optimizer       optimizer state_dict (momentum buffers / Adam moments)
    scheduler       {"kind", "steps"}: the schedule is a pure function of the step count
    scaler          GradScaler state_dict ({} without AMP)
    steps, seed     ints; steps is also the weights' version
    rng             {"torch", "cuda", "numpy", "python"} random states of the writing process
    versions        {"hopzero", "torch", "numpy", "python", "cuda"} of the writing process (hopzero
                    None where it runs from a source tree that was never installed)
    extra           the caller's plain data: the whole run config, presets, replay cursor...
    sha256          digest of everything above (see below)

Reading uses ``torch.load(weights_only=True)`` only: a file that pickles a class or a function is
refused, never executed. PyTorch does not verify its archive's checksums, so a flipped byte in a
tensor would load silently; hence ``sha256``, a digest over the whole content (keys, values,
tensor dtypes, shapes and bytes) checked on every load. Every failure -- missing, truncated,
damaged, foreign, pickled objects, wrong format, missing keys -- is a :class:`CheckpointError`
that names the file and the problem.

Writes are atomic: a temporary file in the same directory, flushed and fsynced, then
``os.replace`` and an fsync of the directory, so a crash leaves either the old set of files or the
new one, never a half-written checkpoint under a checkpoint's name.
"""

from __future__ import annotations

import logging
import os
import platform
import random
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import torch

from learner.model import NET_FORMAT, NetConfig
from learner.records import versions_now
from learner.torch_files import check_digest, content_digest, read_torch_file, remove_stale_temporaries, write_atomic
from learner.training import LearnerConfig, Trainer

__all__ = [
    "CHECKPOINT_FORMAT",
    "Checkpoint",
    "CheckpointError",
    "checkpoint_from_data",
    "checkpoint_paths",
    "latest_checkpoint",
    "load_checkpoint",
    "restore_rng_state",
    "trainer_from_checkpoint",
    "rng_state",
    "save_checkpoint",
]

log = logging.getLogger("hopzero.learner.checkpoint")

#: Format tag of every checkpoint; bump when the layout changes.
CHECKPOINT_FORMAT = "hopzero.checkpoint/1"

#: File names inside a checkpoint directory: ``checkpoint-<steps, 10 digits>.pt``.
_NAME = re.compile(r"^checkpoint-(\d{10})\.pt$")

_REQUIRED = ("format", "net_config", "learner_config", "model", "optimizer", "scheduler", "scaler",
             "steps", "seed", "rng", "versions", "extra", "sha256")


class CheckpointError(ValueError):
    """A checkpoint file cannot be used; the message names the file and the reason."""


@dataclass(frozen=True)
class Checkpoint:
    """A loaded, validated checkpoint (see the module docstring for the fields' meaning)."""

    path: Path
    net_config: NetConfig
    learner_config: LearnerConfig
    model_state: dict[str, torch.Tensor]
    optimizer_state: dict[str, Any]
    scheduler_state: dict[str, Any]
    scaler_state: dict[str, Any]
    steps: int
    seed: int
    rng: dict[str, Any]
    versions: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)
    average_state: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def network_state(self) -> dict[str, torch.Tensor]:
        """The weights the learner published at this step: the weight average where it kept one."""
        return self.average_state or self.model_state


# ---- random states as plain data ----------------------------------------------------------------


def rng_state() -> dict[str, Any]:
    """The process's torch (and CUDA), numpy-global and python ``random`` states, as plain
    types and tensors that ``weights_only`` loading accepts."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    py_version, py_state, py_gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": list(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else [],
        "numpy": {"kind": kind, "keys": [int(k) for k in keys], "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "python": {"version": py_version, "state": list(py_state), "gauss": py_gauss},
    }


def restore_rng_state(state: Mapping[str, Any]) -> None:
    """Inverse of :func:`rng_state` (CUDA states only where this process has as many devices)."""
    torch.set_rng_state(state["torch"])
    cuda = list(state.get("cuda", []))
    if cuda and torch.cuda.is_available() and torch.cuda.device_count() == len(cuda):
        torch.cuda.set_rng_state_all(cuda)
    n = state["numpy"]
    np.random.set_state((n["kind"], np.asarray(n["keys"], dtype=np.uint32), n["pos"], n["has_gauss"],
                         n["cached_gaussian"]))
    p = state["python"]
    random.setstate((p["version"], tuple(p["state"]), p["gauss"]))


# ---- integrity digest ---------------------------------------------------------------------------

_digest = content_digest  # the digest over everything but ``sha256`` (learner.torch_files)


_LEAVES = (bool, int, float, str, bytes)


def _check_plain(obj: Any, where: str) -> None:
    """Refuse, at save time, what ``weights_only`` loading would refuse later (numpy arrays and
    scalars, dataclasses, str/int subclasses, arbitrary objects): a checkpoint that cannot be read
    back must not be written. Exact types, because a subclass pickles as its own class."""
    if type(obj) in (dict, OrderedDict):
        for k, v in obj.items():
            if type(k) not in (str, int):
                raise TypeError(f"{where}: key {k!r} is a {type(k).__name__}; use str or int keys")
            _check_plain(v, f"{where}[{k!r}]")
    elif type(obj) in (list, tuple):
        for i, v in enumerate(obj):
            _check_plain(v, f"{where}[{i}]")
    elif not (obj is None or type(obj) in _LEAVES or isinstance(obj, torch.Tensor)):
        raise TypeError(f"{where} is a {type(obj).__name__}; a checkpoint holds plain types and tensors "
                        f"only (convert numpy values with .tolist() or torch.from_numpy)")


# ---- writing ------------------------------------------------------------------------------------


def _versions() -> dict[str, Any]:
    # hopzero's own version is None in a source tree that was never installed: a missing version
    # must not stop the learner from saving its work.
    cuda = torch.version.cuda
    return {"hopzero": versions_now().get("hopzero"), "torch": str(torch.__version__), "numpy": str(np.__version__),
            "python": platform.python_version(), "cuda": None if cuda is None else str(cuda)}


def checkpoint_state(trainer: Trainer, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The dict :func:`save_checkpoint` writes (digest included)."""
    extra = dict(extra or {})
    _check_plain(extra, "extra")  # the caller's part first, for a precise message
    state: dict[str, Any] = {
        "format": CHECKPOINT_FORMAT,
        "net_config": trainer.net_config.to_dict(),
        "learner_config": trainer.config.to_dict(),
        # .contiguous(): channels_last CUDA tensors are saved in the default layout.
        "model": {k: v.detach().to("cpu").contiguous() for k, v in trainer.model.state_dict().items()},
        "average": {k: v.to("cpu").contiguous() for k, v in (trainer.average or {}).items()},
        "optimizer": _to_cpu(trainer.optimizer.state_dict()),
        "scheduler": {"kind": trainer.config.lr_schedule, "steps": trainer.steps},
        "scaler": dict(trainer.scaler.state_dict()) if trainer.scaler.is_enabled() else {},
        "steps": int(trainer.steps),
        "seed": int(trainer.seed),
        "rng": rng_state(),
        "versions": _versions(),
        "extra": extra,
    }
    _check_plain(state, "checkpoint")
    state["sha256"] = _digest(state)
    return state


def _to_cpu(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu").contiguous()
    if isinstance(obj, dict):
        return {k: _to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_cpu(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_to_cpu(v) for v in obj)
    return obj


def checkpoint_paths(directory: str | os.PathLike[str]) -> list[Path]:
    """``checkpoint-*.pt`` files in ``directory``, newest (most steps) first; temporary files and
    anything else are ignored."""
    d = Path(directory)
    if not d.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in d.iterdir() if (m := _NAME.match(p.name)) and p.is_file()]
    return [p for _, p in sorted(found, reverse=True)]


def save_checkpoint(
    path: str | os.PathLike[str], trainer: Trainer, extra: Mapping[str, Any] | None = None,
    *, keep: int | None = None,
) -> Path:
    """Write the trainer's state to the directory ``path`` as ``checkpoint-<steps>.pt``,
    atomically, then prune the directory so that ``keep`` checkpoints remain: this one and the
    ``keep - 1`` valid others with the most steps (default ``keep``:
    ``trainer.config.keep_checkpoints``). Returns the file written.

    Pruning deletes the older files and temporary files a killed writer left, and sets aside as
    ``NAME.invalid`` a file among the newest that fails validation: a damaged or bogus file must
    not hold one of the kept places (it is kept for a post-mortem, under a name no reader takes).

    ``extra`` must hold plain types and tensors only (``TypeError`` otherwise, before anything is
    written): it is read back with ``weights_only=True``.
    """
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in remove_stale_temporaries(directory, "checkpoint-*.pt"):
        log.warning("removed %s, left by a writer killed mid-write", stale)
    state = checkpoint_state(trainer, extra)
    out = write_atomic(directory / f"checkpoint-{trainer.steps:010d}.pt", state)
    _prune(directory, out, trainer.config.keep_checkpoints if keep is None else keep)
    return out


def _prune(directory: Path, written: Path, keep: int) -> None:
    """Keep ``written`` and the ``keep - 1`` newest valid others; the file just written always
    stays, even when a run resumed from an older checkpoint has more newer files beside it."""
    kept = 1
    for p in checkpoint_paths(directory):
        if p == written:
            continue
        try:
            if kept < keep:
                _validate(p, _read(p))
                kept += 1
                continue
            p.unlink()
        except CheckpointError as e:
            _quarantine(p, e)
        except OSError as e:  # another process pruned it first, or a read-only file
            log.warning("could not delete old checkpoint %s: %s", p, e)


def _quarantine(path: Path, problem: CheckpointError) -> None:
    """Set an invalid checkpoint aside under a name :func:`checkpoint_paths` ignores."""
    try:
        os.replace(path, path.with_name(path.name + ".invalid"))
        log.warning("set aside invalid checkpoint as %s.invalid: %s", path.name, problem)
    except OSError as e:
        log.warning("could not set aside invalid checkpoint %s: %s", path, e)


# ---- reading ------------------------------------------------------------------------------------


def _read(path: Path) -> Any:
    return read_torch_file(path, CheckpointError, "checkpoint")


def _validate(path: Path, obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path}: not a hopzero checkpoint (holds a {type(obj).__name__}, not a dict)")
    fmt = obj.get("format")
    if fmt != CHECKPOINT_FORMAT:
        if fmt == NET_FORMAT:
            raise CheckpointError(f"{path}: a network file ({NET_FORMAT}), not a training checkpoint; "
                                  f"read it with learner.model.load_net")
        raise CheckpointError(f"{path}: not a hopzero checkpoint (format tag {fmt!r}, expected "
                              f"{CHECKPOINT_FORMAT!r})")
    missing = [k for k in _REQUIRED if k not in obj]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks required key(s) {missing}")
    check_digest(path, obj, CheckpointError, "checkpoint")
    if not isinstance(obj["steps"], int) or obj["steps"] < 0:
        raise CheckpointError(f"{path}: invalid steps {obj['steps']!r}")
    average = obj.get("average", {})
    if not isinstance(average, dict) or not all(isinstance(t, torch.Tensor) for t in average.values()):
        raise CheckpointError(f"{path}: the weight average is not a dict of tensors")
    return obj


def load_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Read and validate a checkpoint file (``weights_only`` loading; digest, format tag, keys and
    configs checked). Raises :class:`CheckpointError` naming the problem."""
    path = Path(path)
    return checkpoint_from_data(path, _read(path))


def checkpoint_from_data(path: Path, obj: Any) -> Checkpoint:
    """The checkpoint ``obj`` (what ``torch.load`` read from ``path``), validated as
    :func:`load_checkpoint` validates it."""
    obj = _validate(path, obj)
    try:
        net_config = NetConfig.from_dict(obj["net_config"])
        learner_config = LearnerConfig.from_dict(obj["learner_config"])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: invalid config in checkpoint: {e}") from None
    return Checkpoint(
        path=path, net_config=net_config, learner_config=learner_config, model_state=obj["model"],
        optimizer_state=obj["optimizer"], scheduler_state=obj["scheduler"], scaler_state=obj["scaler"],
        steps=obj["steps"], seed=obj["seed"], rng=obj["rng"], versions=obj["versions"], extra=obj["extra"],
        average_state=obj.get("average") or {},
    )


def _load_average(average: dict[str, torch.Tensor], recorded: Mapping[str, Any]) -> None:
    if set(recorded) != set(average):
        differ = sorted(set(recorded) ^ set(average))
        raise ValueError(f"the weight average's names differ from the model's: {differ[:5]}")
    for k, t in average.items():
        t.copy_(recorded[k])


def _iter_valid(directory: Path) -> Iterator[Checkpoint]:
    for p in checkpoint_paths(directory):
        try:
            yield load_checkpoint(p)
        except CheckpointError as e:
            log.warning("skipping unusable checkpoint: %s", e)


def latest_checkpoint(directory: str | os.PathLike[str]) -> Checkpoint | None:
    """The newest checkpoint in ``directory`` that loads and validates, or None if there is none.

    A damaged newer file (e.g. a disk that lost data after a crash) is skipped with a logged
    warning and the previous one is used; files are not deleted.
    """
    return next(_iter_valid(Path(directory)), None)


def trainer_from_checkpoint(
    source: str | os.PathLike[str] | Any, *, config: LearnerConfig | None = None,
    device: str | None = None, restore_rng: bool = True,
) -> Trainer:
    """A trainer in the state a checkpoint recorded (model, optimiser, scaler, steps, and, with
    ``restore_rng``, the process's torch/numpy/python random states).

    ``source``: a path or a loaded :class:`Checkpoint`. ``config``
    replaces the recorded learner config (e.g. a new learning rate); its optimiser must be the
    recorded one, since the optimiser state is loaded. ``device`` overrides ``config.device``.
    """
    ck = source if isinstance(source, Checkpoint) else load_checkpoint(source)
    cfg = config if config is not None else ck.learner_config
    if cfg.optimizer != ck.learner_config.optimizer:
        raise CheckpointError(
            f"{ck.path}: the checkpoint's optimiser state is {ck.learner_config.optimizer!r}, "
            f"the new config asks for {cfg.optimizer!r}; start a new Trainer and import_weights "
            f"instead")
    trainer = Trainer(ck.net_config, cfg, seed=ck.seed, device=device)
    # How this process runs the optimiser (fused kernels, foreach) is not the checkpoint's
    # business: a CUDA run's fused AdamW may resume on a CPU.
    impl = [{k: g[k] for k in ("fused", "foreach", "capturable") if k in g}
            for g in trainer.optimizer.param_groups]
    try:
        trainer.model.load_state_dict(ck.model_state, strict=True)
        trainer.optimizer.load_state_dict(ck.optimizer_state)
        trainer.reset_average()  # a checkpoint from before the average was on starts it here
        if trainer.average is not None and ck.average_state:
            _load_average(trainer.average, ck.average_state)
    except (RuntimeError, ValueError, KeyError) as e:
        raise CheckpointError(f"{ck.path}: model or optimiser state does not fit its config: {e}") from e
    # load_state_dict restores the recorded hyperparameters; the config in force wins.
    for g, wd, own in zip(trainer.optimizer.param_groups, (cfg.weight_decay, 0.0), impl):
        g.update(own)
        g["weight_decay"] = wd
        if cfg.optimizer == "sgd_nesterov":
            g["momentum"] = cfg.momentum
        else:
            g["betas"] = (cfg.momentum, g["betas"][1])
    if ck.scaler_state and trainer.scaler.is_enabled():
        trainer.scaler.load_state_dict(ck.scaler_state)
    trainer.steps = ck.steps
    if restore_rng:
        restore_rng_state(ck.rng)
    return trainer
