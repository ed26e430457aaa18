"""Ray nodes as separate ``ray start --block`` processes on this machine, for multi-node tests.

A :class:`LocalCluster` is a head and workers that are real Ray nodes (each its own raylet,
object store and worker processes), all on this host. Each node gets its own temporary
directory and a free port for everything it listens on, and token authentication is off
(everything is on this host), so the cluster neither clashes with another Ray on this machine
nor reads that one's token. Stopping a node does what stopping a machine's Ray does: SIGTERM to
``ray start --block``, which drains the node and ends its processes; whatever is still there
after a deadline is killed. Processes are found through ``/proc`` (Linux).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hopzero.ports import free_port

__all__ = ["LocalCluster", "RayNode", "cluster_env", "wait_for"]

T = TypeVar("T")

_OBJECT_STORE_BYTES = 150 * 1024 * 1024  # a small store per node: three nodes share one machine


def wait_for(predicate: Callable[[], T], timeout: float, what: str, every: float = 1.0) -> T:
    """Poll ``predicate`` until it returns something true; that value, or AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def cluster_env() -> dict[str, str]:
    """The environment of every process of a test cluster and of the drivers that join it.

    No inherited ``RAY_*`` variable (an address or auth mode meant for another cluster), and
    token authentication off: Ray 2.60 turns it on when ``~/.ray/auth_token`` exists, and the
    workers and clients would then need that token too.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["RAY_AUTH_MODE"] = "disabled"
    return env


def ray_executable() -> str:
    """The ``ray`` command of the environment the tests run in."""
    beside = Path(sys.executable).parent / "ray"
    found = str(beside) if beside.is_file() else shutil.which("ray")
    if found is None:
        raise FileNotFoundError("the ray command is not installed")
    return found


# -- processes, through /proc ------------------------------------------------------------------

ProcessKey = tuple[int, int]
"""``(pid, start time)``: a process, told apart from a later one that reuses its pid."""


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of ``/proc/PID/stat`` (after the command name), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _key(pid: int) -> ProcessKey | None:
    fields = _stat_fields(pid)
    return None if fields is None else (pid, int(fields[19]))  # field 22: start time


def _alive(key: ProcessKey) -> bool:
    fields = _stat_fields(key[0])
    return fields is not None and int(fields[19]) == key[1] and fields[0] != "Z"


def descendants(pid: int) -> list[ProcessKey]:
    """Every process below ``pid`` now (children, their children, ...)."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(int(entry.name))) is not None:
            children[int(fields[1])].append(int(entry.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        if (key := _key(child)) is not None:
            found.append(key)
        todo.extend(children.get(child, []))
    return found


def cmdline(pid: int) -> str:
    """The command line of ``pid`` ('' if it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# -- nodes ---------------------------------------------------------------------------------------


@dataclass
class RayNode:
    """One ``ray start --block`` process and what it started."""

    name: str
    process: subprocess.Popen[bytes]
    temp_dir: Path
    log_path: Path
    seen: set[ProcessKey] = field(default_factory=set)
    """Processes of this node seen so far (Ray's workers run in sessions of their own)."""

    def running(self) -> bool:
        return self.process.poll() is None

    def processes(self) -> set[ProcessKey]:
        """This node's processes now, remembered for the cleanup."""
        root = _key(self.process.pid)
        now = set(descendants(self.process.pid)) | ({root} if root else set())
        self.seen |= now
        return now

    def node_id(self) -> str | None:
        """The Ray node id, read from this node's raylet command line; None before it runs."""
        for pid, _ in self.processes():
            line = cmdline(pid)
            if "raylet/raylet" in line:
                for arg in line.split():
                    if arg.startswith("--node_id="):
                        return arg.split("=", 1)[1]
        return None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 60.0) -> list[ProcessKey]:
        """Stop this node (see :func:`stop_nodes`); returns the processes that survived."""
        return stop_nodes([self], timeout)


def stop_nodes(nodes: Iterable[RayNode], timeout: float = 60.0) -> list[ProcessKey]:
    """SIGTERM to each node's ``ray start`` (Ray drains the node, then ends its processes), wait
    up to ``timeout`` s, then SIGKILL every process of theirs still there. Returns the processes
    still alive after that (there should be none)."""
    nodes = list(nodes)
    for node in nodes:
        node.processes()
        if node.running():
            node.process.terminate()
    deadline = time.monotonic() + timeout
    for node in nodes:
        try:
            node.process.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            node.processes()  # the raylet's newest workers too, before they lose their parent
            node.process.kill()
            node.process.wait()
    tracked = set().union(*(node.seen for node in nodes)) if nodes else set()
    for key in tracked:
        if _alive(key):
            os.kill(key[0], signal.SIGKILL)
    settle = time.monotonic() + 10
    while (left := [k for k in tracked if _alive(k)]) and time.monotonic() < settle:
        time.sleep(0.2)
    return left


class LocalCluster:
    """A Ray head and workers on this machine, each its own ``ray start --block`` process."""

    def __init__(self, root: Path) -> None:
        self.root = root  # keep it short: Ray's Unix sockets live below it (108-byte limit)
        self.nodes: list[RayNode] = []
        self.gcs_port = free_port()
        self.dashboard_port = free_port()

    @property
    def address(self) -> str:
        """The address drivers and ``ray start --address`` join."""
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        """The dashboard, which serves the state API (``ray.util.state``)."""
        return f"http://127.0.0.1:{self.dashboard_port}"

    def start_head(self, *, num_cpus: int, resources: dict[str, float] | None = None, timeout: float = 120) -> RayNode:
        """Start the head (GCS, dashboard and a raylet with ``num_cpus`` CPUs) and wait until it
        is registered: a worker that asks the GCS for the head before that gives up."""
        head = self._start("head", [
            "--head", f"--port={self.gcs_port}", f"--dashboard-port={self.dashboard_port}",
            "--dashboard-host=127.0.0.1", "--include-dashboard=true", f"--ray-client-server-port={free_port()}",
        ], num_cpus, resources)
        self.wait_for_nodes(1, timeout)
        return head

    def add_worker(self, name: str, *, num_cpus: int, resources: dict[str, float] | None = None) -> RayNode:
        """Start a worker node that joins the head."""
        return self._start(name, [f"--address={self.address}"], num_cpus, resources)

    def _start(self, name: str, role_args: list[str], num_cpus: int, resources: dict[str, float] | None) -> RayNode:
        temp_dir = self.root / name
        temp_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.root / f"{name}.log"
        args = [
            ray_executable(), "start", "--block", *role_args, "--node-ip-address=127.0.0.1",
            f"--temp-dir={temp_dir}", f"--num-cpus={num_cpus}", f"--resources={json.dumps(resources or {})}",
            f"--object-store-memory={_OBJECT_STORE_BYTES}", "--disable-usage-stats", "--include-log-monitor=false",
            # Every port this node listens on, free now; workers take ports the OS picks (0).
            f"--node-manager-port={free_port()}", f"--object-manager-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}", f"--metrics-export-port={free_port()}",
            "--min-worker-port=0", "--max-worker-port=0",
        ]
        with open(log_path, "wb") as log:
            process = subprocess.Popen(args, cwd=self.root, env=cluster_env(), stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        node = RayNode(name, process, temp_dir, log_path)
        self.nodes.append(node)
        return node

    # -- state ---------------------------------------------------------------------------------

    def alive_nodes(self) -> list[Any]:
        """``ray.util.state`` NodeStates of the alive nodes ([] while the dashboard is not up)."""
        from ray.util.state import list_nodes

        try:
            return list_nodes(address=self.dashboard_url, filters=[("state", "=", "ALIVE")], timeout=10)
        except Exception:  # noqa: BLE001 - the dashboard is still starting
            return []

    def alive_actors(self) -> list[Any]:
        """ActorStates (with required resources) of the alive actors ([] if the API does not answer)."""
        from ray.util.state import list_actors

        try:
            return list_actors(address=self.dashboard_url, filters=[("state", "=", "ALIVE")], detail=True,
                               timeout=10, limit=1000)
        except Exception:  # noqa: BLE001 - a slow answer on a busy machine: ask again
            return []

    def wait_for_nodes(self, count: int, timeout: float) -> list[Any]:
        """Wait until ``count`` nodes are alive; fails at once if a ``ray start`` exited."""

        def ready() -> list[Any]:
            for node in self.nodes:
                if not node.running():
                    raise AssertionError(f"ray start for {node.name} exited:\n{node.log_tail()}")
            nodes = self.alive_nodes()
            return nodes if len(nodes) >= count else []

        return wait_for(ready, timeout, f"{count} Ray nodes")

    def shutdown(self, timeout: float = 60.0) -> list[ProcessKey]:
        """Stop every node still running (all at once); returns processes that survived."""
        return stop_nodes(self.nodes, timeout)
