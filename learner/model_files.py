"""Where a ``model=`` option points: a network file, a checkpoint, a run directory, ``shipped``.

- a file: a network file (``learner.model.save_net`` format, optionally with an ``"input"``
  entry naming its encoding) or a learner checkpoint;
- a directory: a training run directory; its current best model (``best.json``, written
  atomically by the evaluator) is used;
- ``shipped``: the model packaged with hopzero for the game's preset (``hopzero/models``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ccengine.rules import Rules

from .run_files import read_best

__all__ = ["ModelNotFoundError", "resolve_model_source", "shipped_model_path"]


class ModelNotFoundError(FileNotFoundError):
    """A ``model=`` option that names nothing usable."""

    def __str__(self) -> str:  # one line for the command line
        return str(self.args[0]) if self.args else "model not found"


def shipped_model_path(rules: Rules) -> Path:
    """The packaged model of the preset ``rules.name``; raises when none ships."""
    ref = resources.files("hopzero").joinpath("models", f"{rules.name}.pt")
    path = Path(str(ref))
    if not path.is_file():
        shipped = sorted(p.stem for p in Path(str(resources.files("hopzero").joinpath("models"))).glob("*.pt"))
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
        best = read_best(path)
        if best is None:
            raise ModelNotFoundError(f"run directory {path} has no best model yet (no best.json)")
        found = Path(best.path)
        return found if found.is_absolute() else path / found
    if not path.is_file():
        raise ModelNotFoundError(f"model {model!r}: no such file or run directory (or 'shipped')")
    return path
