"""Fixtures shared by several test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """A real local Ray for the module's tests (joined if one is already up)."""
    import ray

    from hopzero.train import neutral_directory

    started = not ray.is_initialized()
    if started:
        # Not from the checkout: Ray's workers would import its uncompiled sources (see train.py).
        with neutral_directory(tmp_path_factory.mktemp("ray")):
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    if started:
        ray.shutdown()


@pytest.fixture
def redis_server(tmp_path):
    """A real redis-server of its own on a free loopback port, not persistent, for one test."""
    from hopzero.redis_server import LocalRedis

    server = LocalRedis(tmp_path / "redis", persistent=False)
    server.start()
    yield server
    server.stop()
