"""The rooms' dependency order, checked by import-linter's contracts in pyproject.toml.

``plumbing`` <- ``ccengine`` <- ``learner`` <- ``actors``, ``evaluator`` <- ``hopzero``: a room
imports only the rooms below it, ``ccengine`` imports neither torch nor Ray nor Redis, ``plumbing``
(what every room shares) none of torch, Redis or ONNX Runtime, and no room has an import cycle
between its modules. The check reads the installed packages; a copy with one forbidden
import added shows that each contract does catch what it forbids.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
ROOMS = ("plumbing", "ccengine", "learner", "actors", "evaluator", "hopzero")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(config: Path, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with ``config``; the packages come from ``path`` when given."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=path or ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


def test_the_installed_rooms_keep_every_contract():
    result = lint(PYPROJECT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _copy_rooms(dest: Path) -> None:
    """The installed packages' Python sources (the import graph needs nothing else)."""
    for room in ROOMS:
        source = Path(importlib.import_module(room).__file__).parent
        shutil.copytree(source, dest / room, ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.pt"))


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("ccengine/rules.py", "import hopzero.config", "Rooms"),
        ("learner/model.py", "import evaluator.gating", "Rooms"),
        ("actors/selfplay.py", "import evaluator.elo", "Rooms"),
        ("ccengine/search.py", "import torch", "ccengine is the game"),
        ("plumbing/fields.py", "import ccengine.rules", "Rooms"),
        ("plumbing/run_files.py", "import redis", "plumbing is what every room shares"),
        ("learner/model.py", "import learner.service", "No import cycles"),
    ],
)
def test_a_broken_copy_breaks_its_contract(tmp_path, module, line, contract):
    _copy_rooms(tmp_path)
    target = tmp_path / module
    text = target.read_text()
    marker = "from __future__ import annotations\n"
    assert marker in text
    target.write_text(text.replace(marker, marker + line + "\n", 1))
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    result = lint(tmp_path / "pyproject.toml", tmp_path)
    assert result.returncode != 0, result.stdout
    broken = [ln for ln in result.stdout.splitlines() if ln.endswith(" BROKEN")]
    assert any(b.startswith(contract) for b in broken), result.stdout
