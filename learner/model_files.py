"""Where a ``model=`` option points: a network file, a checkpoint, a run directory, ``shipped``;
and what such a file holds.

- a file: a network file (``learner.model.save_net`` format, optionally with an ``"input"``
  entry naming its encoding) or a learner checkpoint (its network, and the encoding and
  exploration constant of the run config it carries);
- a directory: a training run directory; its current best model (``best.json``, written
  atomically by the evaluator) is used;
- ``shipped``: the model packaged with hopzero for the game's preset (``learner/models``, beside
  this module).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccengine.rules import Rules

from plumbing.run_files import PromotionError, read_best

if TYPE_CHECKING:  # torch only when a file is written
    from .model import NetworkConfig, PolicyValueNet

__all__ = [
    "ALGOS",
    "ModelFileError",
    "ModelNotFoundError",
    "check_preset",
    "model_meta",
    "promoted_model_path",
    "read_model_file",
    "resolve_model_source",
    "save_promoted_model",
    "shipped_model_path",
]

#: What a model file's ``input`` entry may tell a player about its network.
_META = ("encoding", "history", "c_puct", "algo", "preset")
#: How a network was trained (``algo`` of a file or a run config; absent: ``alphazero``).
ALGOS = ("alphazero", "dqn")


class ModelFileError(ValueError):
    """A run directory named by ``model=`` whose best model is damaged (docs/RELIABILITY.md)."""


class ModelNotFoundError(FileNotFoundError):
    """A ``model=`` option that names nothing usable."""

    def __str__(self) -> str:  # one line for the command line
        return str(self.args[0]) if self.args else "model not found"


#: Where the shipped models are: ``learner/models/PRESET.pt``.
SHIPPED_MODELS = Path(str(resources.files("learner").joinpath("models")))


def shipped_model_path(rules: Rules) -> Path:
    """The packaged model of the preset ``rules.name``; raises when none ships."""
    path = SHIPPED_MODELS / f"{rules.name}.pt"
    if not path.is_file():
        shipped = sorted(p.stem for p in SHIPPED_MODELS.glob("*.pt"))
        raise ModelNotFoundError(
            f"no shipped model for preset {rules.name!r}; shipped: {', '.join(shipped) or 'none yet'}"
        )
    return path


def resolve_model_source(rules: Rules, model: str) -> Path:
    """The file a ``model=`` option means (see the module docstring)."""
    if model == "shipped":
        return shipped_model_path(rules)
    path = Path(model).expanduser()
    if path.is_dir():
        try:
            best = read_best(path)
        except PromotionError as exc:  # a ValueError for the players' one-line errors
            raise ModelFileError(str(exc)) from None
        if best is None:
            raise ModelNotFoundError(f"run directory {path} has no best model yet (no best.json)")
        found = Path(best.path)
        return found if found.is_absolute() else path / found
    if not path.is_file():
        raise ModelNotFoundError(f"model {model!r}: no such file or run directory (or 'shipped')")
    return path


def read_model_file(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The network a model file holds, as a ``learner.model.net_state`` dict, and what the file
    says about it (``encoding``, ``history``, ``c_puct``, where recorded).

    ``path`` is a network file or a learner checkpoint; either is read with
    ``weights_only=True`` and its digest checked. Every problem is one ``ValueError`` naming the
    file (``learner.model.NetFileError`` or ``learner.checkpoint.CheckpointError``).
    """
    from .checkpoint import CHECKPOINT_FORMAT, checkpoint_from_data  # torch only when a file is read
    from .model import NET_FORMAT, NetFileError, check_net_state
    from .torch_files import read_torch_file

    where = Path(path)
    if not where.is_file():
        raise ModelNotFoundError(f"model {str(path)!r}: no such file")
    raw = read_torch_file(where, NetFileError, "network file")
    if isinstance(raw, dict) and raw.get("format") == CHECKPOINT_FORMAT:
        ck = checkpoint_from_data(where, raw)
        run = ck.extra.get("config") if isinstance(ck.extra.get("config"), dict) else {}
        network, search = run.get("network") or {}, run.get("search") or {}
        meta = {"encoding": network.get("encoding"), "history": network.get("history"),
                "c_puct": search.get("c_puct"), "algo": run.get("algo"), "preset": run.get("preset")}
        state = {"format": NET_FORMAT, "config": ck.net_config.to_dict(), "state_dict": ck.network_state}
        return state, {k: v for k, v in meta.items() if v is not None}
    state = check_net_state(where, raw)
    return state, model_meta(state)


def check_preset(source: object, meta: dict[str, Any], rules: Rules) -> None:
    """Refuse a network trained for another game than ``rules`` (``meta``: what its file says,
    :func:`model_meta`): cc49's and paper's boards have one shape, so the network would load and
    play the other game's rules badly. Every reader of ``model=`` and ``export`` asks here."""
    recorded = meta.get("preset")
    if recorded is not None and recorded != rules.name:
        raise ValueError(f"{source}: the network plays {recorded!r}, not {rules.name!r} (the preset it was trained "
                         f"for): give a model of {rules.name} (model=shipped: the one shipped for it)")


def model_meta(state: dict[str, Any]) -> dict[str, Any]:
    """What a network file's ``input`` entry says about its network (``encoding``, ``history``,
    ``c_puct``, ``algo``, ``preset``), where present."""
    info = state.get("input")
    return {k: info[k] for k in _META if k in info} if isinstance(info, dict) else {}


def promoted_model_path(run_dir: str | Path, version: int) -> Path:
    """The network file of the promoted model ``version`` in a run directory."""
    return Path(run_dir) / "models" / f"model-{int(version):010d}.pt"


def save_promoted_model(
    path: Path, model: PolicyValueNet, *, network: NetworkConfig, preset: str, version: int, config_hash: str,
    c_puct: float, algo: str,
) -> None:
    """Write a promoted model's network file with the ``input`` entry its players read: the
    encoding, history and exploration constant it was trained with, and the preset, version,
    config hash and algorithm of its run."""
    from .model import save_net

    path.parent.mkdir(parents=True, exist_ok=True)
    info = {"encoding": network.encoding, "history": network.history, "preset": preset, "version": int(version),
            "config_hash": config_hash, "c_puct": c_puct, "algo": algo}
    save_net(model, path, input=info)
