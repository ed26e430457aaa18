"""The tests run against the installed package, not the source tree (STYLE.md habit 7)."""

import os
from pathlib import Path

import pytest

import ccengine
import ccengine._core  # the compiled engine must have been built by the install

REPO = Path(__file__).resolve().parents[1]


def test_ccengine_is_imported_from_the_installed_package():
    where = Path(ccengine.__file__).resolve()
    if REPO in where.parents:
        if os.environ.get("CI"):
            pytest.fail(f"ccengine was imported from the source tree ({where}), not the installed package")
        pytest.skip(f"running against the source tree ({where}); CI runs against the installed package")
    assert Path(ccengine._core.__file__).resolve().parent == where.parent
