"""deploy/cluster.yaml (AWS) and deploy/cluster-local.yaml (own machines), checked the two ways
``ray up`` checks a cluster config before it touches a machine:

1. against Ray's own JSON schema, ``ray/autoscaler/ray-schema.json`` in the installed package;
2. through the preparation ``ray up`` runs first: ``prepare_config`` (the provider's defaults
   merged in, setup commands merged per node role, node types filled; for the local provider
   its IP lists turned into the one node type it supports) and ``validate_config`` (the schema
   again plus the cross-field rules the schema cannot state). For the local provider the whole
   bootstrap runs too: it needs no network. AWS' bootstrap calls AWS, so it stops before that.

Each check has a negative twin: a broken copy that the same check rejects, so a check that let
everything through would fail here. Then the facts the training code and the docs rely on:
the learner's node type offers ``LEARNER_RESOURCE``, every node exports metrics on 8080 and
uses token authentication, Redis is persistent and has a password, torch comes before hopzero,
and every command is valid shell.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
import ray.autoscaler
import yaml
from ray.autoscaler._private.commands import _bootstrap_config
from ray.autoscaler._private.util import prepare_config, validate_config

from hopzero.train import LEARNER_RESOURCE

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
CONFIGS = ["cluster.yaml", "cluster-local.yaml"]
COMMAND_LISTS = ["initialization_commands", "setup_commands", "head_setup_commands", "worker_setup_commands",
                 "head_start_ray_commands", "worker_start_ray_commands"]


def load(name: str) -> dict[str, Any]:
    """A deploy config as ``ray up`` reads it (plain YAML)."""
    return yaml.safe_load((DEPLOY / name).read_text())


def ray_schema() -> dict[str, Any]:
    return json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())


def prepared(config: dict[str, Any]) -> dict[str, Any]:
    """What ``ray up`` makes of ``config`` before it talks to a provider: prepared and validated."""
    config = prepare_config(copy.deepcopy(config))
    validate_config(config)
    return config


def start_commands(config: dict[str, Any]) -> list[str]:
    """The ``ray start`` commands, head and workers."""
    return [c for key in ("head_start_ray_commands", "worker_start_ray_commands") for c in config[key]
            if "ray start" in c]


# -- 1. Ray's schema ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONFIGS)
def test_the_schema_accepts_the_config(name):
    jsonschema.validate(load(name), ray_schema())


@pytest.mark.parametrize("name", CONFIGS)
def test_the_schema_rejects_a_misspelt_key(name):
    config = load(name)
    config["setup_command"] = config.pop("setup_commands")
    with pytest.raises(jsonschema.ValidationError, match="setup_command"):
        jsonschema.validate(config, ray_schema())


def test_the_schema_rejects_a_misspelt_node_type_key():
    config = load("cluster.yaml")
    config["available_node_types"]["cpu_worker"]["min_worker"] = 2
    with pytest.raises(jsonschema.ValidationError, match="min_worker"):
        jsonschema.validate(config, ray_schema())


# -- 2. what `ray up` does before it touches a machine --------------------------------------------


def test_ray_up_preparation_accepts_the_aws_config():
    config = prepared(load("cluster.yaml"))
    types = config["available_node_types"]
    assert config["provider"]["type"] == "aws" and config["head_node_type"] == "head"
    assert set(types) == {"head", "cpu_worker", "gpu_learner"}
    assert types["head"]["max_workers"] == 0, "the head type is never a worker"
    assert sum(t["min_workers"] for t in types.values()) <= config["max_workers"]
    # setup_commands were merged in front of the head's own setup, as on the real head.
    assert config["head_setup_commands"][: len(config["setup_commands"])] == config["setup_commands"]


def test_ray_up_preparation_rejects_an_unknown_head_node_type():
    config = load("cluster.yaml")
    config["head_node_type"] = "haed"
    jsonschema.validate(config, ray_schema())  # the schema cannot tell...
    with pytest.raises(ValueError, match="head_node_type"):
        prepared(config)  # ...the preparation can


def test_ray_up_preparation_rejects_more_min_workers_than_max_workers():
    config = load("cluster.yaml")
    config["available_node_types"]["cpu_worker"]["min_workers"] = config["max_workers"] + 1
    jsonschema.validate(config, ray_schema())
    with pytest.raises(ValueError, match="max_workers"):
        prepared(config)


def test_the_local_config_bootstraps_without_a_network():
    raw = load("cluster-local.yaml")
    config = _bootstrap_config(copy.deepcopy(raw), no_config_cache=True)
    (node_type,) = config["available_node_types"].values()
    workers = len(raw["provider"]["worker_ips"])
    assert (node_type["min_workers"], node_type["max_workers"]) == (workers, workers), "every listed machine joins"
    assert config["provider"]["head_ip"] == raw["provider"]["head_ip"]
    assert config["head_setup_commands"][: len(config["setup_commands"])] == config["setup_commands"]


def test_the_local_bootstrap_rejects_node_types():
    config = load("cluster-local.yaml")
    config["available_node_types"] = {"big": {"resources": {"CPU": 8}, "node_config": {}}}
    config["head_node_type"] = "big"
    jsonschema.validate(config, ray_schema())
    with pytest.raises(click.ClickException):  # the local provider has one node type of its own
        _bootstrap_config(config, no_config_cache=True)


def test_the_local_bootstrap_rejects_a_config_without_worker_ips():
    config = load("cluster-local.yaml")
    del config["provider"]["worker_ips"]
    jsonschema.validate(config, ray_schema())
    with pytest.raises(click.ClickException):
        _bootstrap_config(config, no_config_cache=True)


# -- what the training code and the docs rely on ---------------------------------------------------


def test_only_the_learner_node_type_offers_the_learner_resource():
    types = load("cluster.yaml")["available_node_types"]
    offering = [name for name, t in types.items() if t["resources"].get(LEARNER_RESOURCE)]
    assert offering == ["gpu_learner"]
    assert types["gpu_learner"]["resources"][LEARNER_RESOURCE] == 1 and types["gpu_learner"]["resources"]["GPU"] == 1
    assert types["gpu_learner"]["max_workers"] == 1, "one learner: one node with its resource"
    assert json.dumps({LEARNER_RESOURCE: 1}) in (DEPLOY / "cluster-local.yaml").read_text(), \
        "the local config tells how to mark the learner's machine"


@pytest.mark.parametrize("name", CONFIGS)
def test_every_node_exports_metrics_and_uses_token_auth(name):
    config = load(name)
    commands = start_commands(config)
    assert any("--head" in c for c in commands) and any("--address=$RAY_HEAD_IP" in c for c in commands)
    for command in commands:
        assert "--metrics-export-port=8080" in command, command
        assert "RAY_AUTH_MODE=token" in command, command
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token", "the token reaches every node"


@pytest.mark.parametrize("name", CONFIGS)
def test_the_head_runs_a_persistent_redis_with_a_password_beside_ray(name):
    config = load(name)
    setup = "\n".join(config["head_setup_commands"])
    assert "appendonly yes" in setup and "requirepass" in setup
    assert "port 6380" in setup, "Ray's GCS has 6379"
    assert any("redis-server ~/redis/redis.conf" in c for c in config["head_start_ray_commands"])


@pytest.mark.parametrize("name", CONFIGS)
def test_torch_is_installed_before_hopzero(name):
    setup = load(name)["setup_commands"]
    torch = next(i for i, c in enumerate(setup) if "torch==2.13.0" in c)
    package = next(i for i, c in enumerate(setup) if "pip install -q ~/hopzero" in c)
    assert torch < package
    assert "download.pytorch.org/whl/cpu" in setup[torch], "CPU nodes get the CPU build"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("name", CONFIGS)
def test_every_command_is_valid_shell(name):
    config = load(name)
    commands = [c for key in COMMAND_LISTS for c in config.get(key, [])]
    assert commands
    for command in commands:
        result = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
        assert result.returncode == 0, f"{command}\n{result.stderr}"
