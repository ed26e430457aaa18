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


def shares(z):
    """Two-player value targets ``z`` on ``[-1, 1]`` (the mover's view) as a batch's value: the mover's
    share and the other's, ``((1 + z) / 2, (1 - z) / 2)``."""
    import numpy as np

    z = np.asarray(z, dtype=np.float32)
    return np.stack([(1 + z) / 2, (1 - z) / 2], axis=-1).astype(np.float32)
