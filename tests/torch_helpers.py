"""Shared pytest fixtures for tests that train or evaluate tiny networks."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny networks gain nothing from intra-op threads, and on a shared, loaded machine two
    spinning threads make each step many times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
