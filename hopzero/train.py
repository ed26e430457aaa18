"""``hopzero train``: the driver that starts and watches the whole training system.

It starts (or joins) Ray, the replay buffer (the embedded store in a Ray actor, or Redis), the
model registry, the learner (on a GPU when the cluster has one), the self-play actors and the
evaluator; then it prints progress, writes the run directory (rundir.py) and restarts what
died: an actor or learner killed is restarted by Ray (``max_restarts``) and its loop is called
again here; the learner resumes from its newest checkpoint. A component that keeps failing (more
than ``run.max_restarts`` times within ``run.restart_window_s``, e.g. one that fails as it
starts; each restart waits longer, ``run.restart_backoff_s`` doubled per failure) stops the
run: :class:`TrainingFailed` names it and its last error. Ctrl-C, at any stage from Ray's
start on, stops everything cleanly; running the same command on the same run
directory resumes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from hopzero.config import ConfigError, TrainConfig
from hopzero.rundir import RunDir

__all__ = [
    "LEARNER_RESOURCE",
    "Placement",
    "RestartBudget",
    "RunStartError",
    "TrainingFailed",
    "neutral_directory",
    "plan_placement",
    "redis_password",
    "refuse_password_in_url",
    "run_start_promotions",
    "train",
]

log = logging.getLogger("hopzero.train")


LEARNER_RESOURCE = "hopzero_learner"
"""A custom Ray resource that marks the learner's node: a node started with
``--resources='{"hopzero_learner": 1}'`` gets the learner, and the learner uses that node's GPU
if it has one."""


class TrainingFailed(RuntimeError):
    """A component kept failing, so the driver stopped the run; the message is one line that
    names the component and its last error."""


class RestartBudget:
    """How often each component may fail within a sliding window before the driver gives up.

    A component killed now and then (a node lost, an out-of-memory kill) is restarted; one that
    fails every time it starts would otherwise be restarted forever while the run reports
    nothing but zero steps. Restarts back off (``backoff_s``, doubling with each failure in the
    window, at most a minute): a node that has just left takes Ray a while to declare dead, and
    a component restarted at once into that moment can fail again for it alone; spaced out, the
    budget measures the component, not Ray's detection time.
    """

    def __init__(self, limit: int, window_s: float, backoff_s: float = 0.0) -> None:
        self.limit, self.window_s, self.backoff_s = limit, window_s, backoff_s
        self._failures: dict[str, deque[float]] = {}

    def spend(self, name: str, now: float) -> bool:
        """Note one failure of ``name`` at ``now`` (seconds); True while it may be restarted."""
        times = self._failures.setdefault(name, deque())
        times.append(now)
        while now - times[0] > self.window_s:
            times.popleft()
        return len(times) <= self.limit

    def failures(self, name: str) -> int:
        """Failures of ``name`` within the window as of its last one."""
        return len(self._failures.get(name, ()))

    def delay(self, name: str) -> float:
        """Seconds to wait before restarting ``name`` after its latest failure."""
        failures = self.failures(name)
        return min(self.backoff_s * 2 ** (failures - 1), 60.0) if failures else 0.0


@dataclass(frozen=True)
class Placement:
    """How many self-play actors there are and what each component asks Ray for."""

    actors: int
    actor_cpus: float
    learner_cpus: float
    learner_gpus: float
    evaluator_cpus: float
    learner_resources: Mapping[str, float] = field(default_factory=dict)
    """Custom resources the learner asks for: ``{LEARNER_RESOURCE: 1}`` when a node offers it."""


def plan_placement(
    config: TrainConfig, cpus: float, gpus: float, nodes: Sequence[Mapping[str, float]] = ()
) -> Placement:
    """Fit the components into the cluster's ``cpus`` and ``gpus``; ``nodes`` are the resources
    of each node (they tell which node offers :data:`LEARNER_RESOURCE` and whether it has a GPU).

    On a small box (under 6 CPUs) the CPUs are fractional so that everything is scheduled; on a
    cluster each self-play actor asks for ``selfplay.actor_cpus`` as configured, and actors that do
    not fit wait until a node joins (an autoscaler starts one for them). The learner goes to the
    node that offers the learner resource if one does, else to a GPU if the cluster has one.
    """
    small = cpus < 6
    learner_share = 0.5 if small else 1.0  # the learner's CPU, kept out of the actors' count
    evaluator_cpus = 0.5 if small else 1.0
    free = max(cpus - learner_share - evaluator_cpus, 0.5)
    wanted = config.selfplay.actor_cpus
    actors = config.selfplay.actors or max(1, int(free // wanted))
    actor_cpus = min(wanted, free / actors) if small else wanted
    learner_cpus, learner_gpus, learner_resources = _learner_request(nodes, gpus, learner_share)
    return Placement(actors, round(actor_cpus, 3), learner_cpus, learner_gpus, evaluator_cpus, learner_resources)


def _learner_request(
    nodes: Sequence[Mapping[str, float]], gpus: float, cpu_share: float
) -> tuple[float, float, dict[str, float]]:
    """The CPUs, GPUs and custom resources the learner asks Ray for."""
    marked = [node for node in nodes if node.get(LEARNER_RESOURCE, 0.0) >= 1]
    # A GPU elsewhere than on the marked node would make the request fit no node.
    has_gpu = any(node.get("GPU", 0.0) >= 1 for node in marked) if marked else gpus >= 1
    resources = {LEARNER_RESOURCE: 1.0} if marked else {}
    # Pinned by a GPU or the learner resource, which no actor asks for, the learner takes no CPU
    # slot: actors that filled its node's CPUs first would otherwise keep it from being placed.
    pinned = has_gpu or bool(marked)
    return (0.0 if pinned else cpu_share), (1.0 if has_gpu else 0.0), resources


def train(
    config: TrainConfig,
    *,
    run_dir: str | os.PathLike[str],
    ray_address: str | None = None,
    redis_url: str | None = None,
    redis_password: str | None = None,
    init_model: str | None = None,
    out: TextIO = sys.stdout,
) -> dict[str, Any]:
    """Run training until the time budget, the step limit or Ctrl-C; returns the final summary.

    ``redis_url`` (else ``replay.redis_url``) and ``redis_password`` (:func:`redis_password`): the
    Redis of the replay buffer; the password joins the URL in memory only, never a file or a log.

    ``init_model`` (a network file, a run directory or ``shipped``) starts a new run from that
    network instead of stage 1 or random weights (``hopzero.initial_model``); a run directory that
    holds a run already is refused with it.

    Raises :class:`TrainingFailed` (after stopping everything) when a component fails more often
    than ``run.max_restarts`` within ``run.restart_window_s``, and ``KeyboardInterrupt`` (after
    stopping what was started) on Ctrl-C before the run's first progress line could be written.
    """
    with _ctrl_c_raises():
        return _train(config, run_dir=run_dir, ray_address=ray_address, redis_url=redis_url,
                      redis_password=redis_password, init_model=init_model, out=out)


def redis_password(password_file: str | None = None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The Redis password of ``hopzero train``: the first line of ``password_file``
    (``--redis-password-file``), else ``$HOPZERO_REDIS_PASSWORD``, else None (a Redis without one).
    A file that cannot be read or holds nothing is a :class:`ConfigError`."""
    from learner.replay.redis_url import PASSWORD_ENV

    if password_file is None:
        return environ.get(PASSWORD_ENV) or None
    try:
        lines = Path(password_file).read_text(encoding="utf-8").strip().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--redis-password-file {password_file}: cannot read it ({getattr(exc, 'strerror', exc)})") \
            from None
    if not lines or not lines[0].strip():
        raise ConfigError(f"--redis-password-file {password_file} is empty: put the Redis password on its first line")
    return lines[0].strip()


def refuse_password_in_url(url: str, where: str) -> None:
    """Raise :class:`ConfigError` when ``url`` (given as ``where``, e.g. ``--redis-url``) holds a
    password: it would be seen in ``ps``; the line says where the password goes instead."""
    from learner.replay.redis_url import PASSWORD_ADVICE, has_password, redact_url

    if has_password(url):
        raise ConfigError(f"{where} {redact_url(url)} holds a password, which a command line shows to every "
                          f"user of the machine (ps): {PASSWORD_ADVICE}")


#: Set by the driver's Ctrl-C handler. The handler also raises ``KeyboardInterrupt``, but an
#: exception raised where Python swallows it (logging's at-fork lock handlers while Ray forks
#: its processes print "Exception ignored ... KeyboardInterrupt") would be lost: the driver
#: checks this flag at its next step instead (:func:`_stop_if_ctrl_c`).
_CTRL_C = threading.Event()


def _on_ctrl_c(signum: int, frame: Any) -> None:
    _CTRL_C.set()
    raise KeyboardInterrupt


def _stop_if_ctrl_c() -> None:
    """Raise ``KeyboardInterrupt`` if a Ctrl-C came whose exception was swallowed on its way."""
    if _CTRL_C.is_set():
        raise KeyboardInterrupt


@contextlib.contextmanager
def _ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises ``KeyboardInterrupt`` in this (main) thread from the first moment on, whatever
    handler was installed before or Ray installs while it starts; the old handler comes back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    _CTRL_C.clear()
    signal.signal(signal.SIGINT, _on_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _train(
    config: TrainConfig, *, run_dir: str | os.PathLike[str], ray_address: str | None, redis_url: str | None,
    redis_password: str | None, init_model: str | None, out: TextIO,
) -> dict[str, Any]:
    import ray

    from hopzero.registry import ModelRegistry
    from learner.records import versions_now
    from learner.replay import ReplayLink

    # Absolute: the components run in other processes with other working directories.
    rundir = RunDir(Path(run_dir).resolve())
    from hopzero.initial_model import load_initial_model, settle_seeding

    _check_best(rundir)  # before anything is written or started: a damaged best model stops every component
    initial = None if init_model is None else load_initial_model(config, init_model)
    # A seeding killed half way is completed by the same --init-model, else undone.
    completes = settle_seeding(rundir, initial, out)
    if initial is not None and rundir.exists and not completes:
        raise ConfigError(f"--init-model starts a new run, and {rundir.path} holds one: "
                          "use another --run-dir, or leave --init-model out to resume it")
    redis_server = None
    started_ray = False
    created: list[Any] = []  # actor handles, killed if start-up is interrupted
    running = False
    try:
        # Inside the try: a Ctrl-C just after run.json is written is a stop during start-up too.
        # The initial model first, run.json (which records it) last: all or nothing.
        if initial is not None:
            initial.seed(rundir.path, config)
        info = rundir.start(config, versions_now(), initial_model=None if initial is None else initial.provenance())
        if initial is not None:
            initial.committed(rundir.path)
        run_id = info["run_id"]
        # The Redis buffer first: a run that may not use it is refused before anything starts.
        if config.replay.backend == "redis":
            link, redis_server = _open_redis(config, rundir, run_id, redis_url or config.replay.redis_url,
                                             redis_password, out)
        started_ray = not ray.is_initialized()
        if started_ray:
            out.write(f"hopzero train: starting Ray for run {run_id} (Ctrl-C stops) ...\n")
            out.flush()
            with neutral_directory(rundir.path):
                if ray_address:
                    ray.init(address=ray_address, logging_level=logging.WARNING, log_to_driver=False)
                else:
                    start_local_ray()
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, _on_ctrl_c)  # in case Ray set its own
        _stop_if_ctrl_c()
        resources = ray.cluster_resources()
        nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
        place = plan_placement(config, resources.get("CPU", 1.0), resources.get("GPU", 0.0), nodes)
        if config.replay.backend != "redis":
            from learner.replay import MemoryReplay

            # Held until the run ends: Ray collects an actor, named or not, once no handle is left.
            _store = ray.remote(MemoryReplay).options(
                name=f"{run_id}-replay", num_cpus=0, max_concurrency=4, scheduling_strategy=_on_driver_node(soft=False)
            ).remote(run_id)
            created.append(_store)
            link = ReplayLink("memory", run_id, store=f"{run_id}-replay")
        registry = ray.remote(ModelRegistry).options(
            name=f"{run_id}-registry", num_cpus=0, max_concurrency=8, scheduling_strategy=_on_driver_node(soft=False)
        ).remote()
        created.append(registry)
        system = _System(config, rundir, link, registry, f"{run_id}-registry", place, out, created)
        _stop_if_ctrl_c()
        running = True
        return system.run(info)
    except KeyboardInterrupt:
        if not running:  # once running, the system stops itself and writes its summary
            out.write("\nstopped (Ctrl-C) during start-up: nothing was trained by this start; "
                      f"the same command resumes the run in {rundir.path}\n")
            out.flush()
            _kill(created)
        raise
    finally:
        if redis_server is not None:
            redis_server.stop()
        if started_ray:
            ray.shutdown()


class RunStartError(ConfigError):
    """The run cannot start as configured (its Redis key prefix is another run's, its Redis is
    unreachable or its directory's server is in use): one line, nothing started."""


def _check_best(rundir: RunDir) -> None:
    """Refuse, in one line, a run whose ``best.json`` or best model file is damaged (the
    evaluator and the actors could not start from it); the message says what to do."""
    from learner.model_files import read_model_file
    from plumbing.run_files import PromotionError, read_best

    try:
        best = read_best(rundir.path)
        if best is not None:
            read_model_file(best.checkpoint(rundir.path))
    except (PromotionError, ValueError) as exc:
        raise RunStartError(str(exc)) from None


def _kill(handles: list[Any]) -> None:
    """Kill the actors a start-up that was interrupted created (on a Ray it joined they would
    outlive it)."""
    import ray

    for handle in handles:
        with contextlib.suppress(Exception):
            ray.kill(handle, no_restart=True)


def _open_redis(
    config: TrainConfig, rundir: RunDir, run_id: str, url: str, password: str | None, out: TextIO
) -> tuple[Any, Any]:
    """The run's link to Redis, its key prefix claimed; and the local server started (or reused)
    for it when no URL is given (with its own password). Raises :class:`RunStartError` when the
    run may not start."""
    from learner.replay import ReplayLink
    from learner.replay.redis_url import has_password, with_password

    if url and password and not has_password(url):
        url = with_password(url, password)  # in memory only: the link goes to the components

    try:
        prefix = config.replay.key_prefix_for(run_id)
    except ValueError as exc:
        raise RunStartError(str(exc)) from None
    server = None
    if not url:
        from hopzero.redis_server import LocalRedis, RedisDirectoryBusy

        server = LocalRedis(rundir.path / "redis")
        try:
            url = server.start()
        except RedisDirectoryBusy as exc:
            raise RunStartError(str(exc)) from None
        if server.reused:
            out.write(f"hopzero train: reusing the redis-server (pid {server.pid}, port {server.port}) that an "
                      f"earlier driver of this run directory left running\n")
    try:
        _claim_prefix(url, prefix, run_id)
    except BaseException:
        if server is not None:
            server.stop()
        raise
    link = ReplayLink("redis", run_id, redis_url=url, key_prefix=prefix, send_batch=config.replay.send_batch,
                      send_delay_s=config.replay.send_delay_s)
    return link, server


def _claim_prefix(url: str, prefix: str, run_id: str, wait_s: float = 30.0) -> None:
    """Register ``run_id`` under ``prefix`` in Redis, or refuse: another run's buffer must not be
    written to (its actors would fail on every game, ForeignRunError). Waits up to ``wait_s`` for
    a Redis that is starting or loading its append-only file."""
    import redis

    from learner.replay.redis_stream import ForeignRunError, RedisReplay, connect, redact_url

    deadline = time.monotonic() + wait_s
    while True:
        client = connect(url, socket_timeout=2.0)
        try:
            RedisReplay(client, run_id=run_id, prefix=prefix).claim()
            return
        except ForeignRunError as exc:
            raise RunStartError(f"{exc} (Redis at {redact_url(url)})") from None
        except (redis.AuthenticationError, redis.ResponseError) as exc:
            raise RunStartError(f"Redis at {redact_url(url)} refused the run: {exc}") from None
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            if time.monotonic() >= deadline:
                raise RunStartError(f"cannot reach Redis at {redact_url(url)} ({exc}): check --redis-url "
                                    f"or replay.redis_url") from None
        finally:
            client.close()
        time.sleep(0.5)


def start_local_ray() -> None:
    """A Ray of this machine only, listening on loopback only, without its dashboard.

    Given the node address 127.0.0.1, Ray 2.60 would still replace it by the machine's reachable
    address (``services.resolve_ip_for_localhost``) unless it is told that this Ray is no cluster
    (``ray_constants.ENABLE_RAY_CLUSTER``, which ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` sets and
    which only that resolution reads); then its GCS, raylet, workers and agents all bind
    127.0.0.1. Ray's token authentication stays on as well; its notice that it turned it on is
    kept off a newcomer's screen. A cluster (``--ray-address``) listens as its operator set it up.
    """
    import ray
    from ray._private import ray_constants

    notice = logging.getLogger("ray._private.authentication.authentication_token_setup")
    quiet = logging.Filter("-")  # a filter that passes no record (no logger is named "-")
    notice.addFilter(quiet)
    cluster = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level=logging.WARNING,
                 log_to_driver=False, _node_ip_address="127.0.0.1")
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster
        notice.removeFilter(quiet)


def _on_driver_node(*, soft: bool) -> Any:
    """Ray's scheduling strategy "on this driver's node".

    Hard for the registry and the embedded replay store: Ray does not restart them, so they must
    not sit on a worker node that may leave; the driver's node lives as long as the run. Soft for
    the evaluator: the files it writes (best model, evaluations, Elo) are the ones the driver reads
    for its summary, its plots and a resume, so they belong on the driver's disk when it has room.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=soft)


@contextlib.contextmanager
def neutral_directory(path: str | os.PathLike[str]) -> Iterator[None]:
    """Run ``ray.init`` from ``path``: Ray puts the driver's current directory on its workers'
    ``sys.path`` and starts them there, so from a source checkout they would import its
    uncompiled ``ccengine`` instead of the installed package."""
    previous = os.getcwd()
    os.chdir(os.fspath(path))
    try:
        yield
    finally:
        os.chdir(previous)


class _System:
    """The started components and the driver's watch loop."""

    def __init__(
        self, config: TrainConfig, rundir: RunDir, link: Any, registry: Any, registry_name: str, place: Placement,
        out: TextIO, created: list[Any],
    ):
        """Start the learner, the evaluator and the self-play actors (appended to ``created`` as
        they are created) and their loops."""
        import ray

        from actors.service import DQNActorService, SelfPlayService
        from evaluator.service import EvaluatorService
        from learner.service import LearnerService

        self.config, self.rundir, self.out, self.place, self.link = config, rundir, out, place, link
        run_dir = str(rundir.path)
        self.registry = registry
        _restore_best(rundir, registry)
        training_rules, config_hash = config.training_rules(), config.hash()
        dqn = config.dqn if config.algo == "dqn" else None
        # Named actors (RUN_ID-learner, RUN_ID-evaluator, RUN_ID-actor-I): tools and tests can
        # find them with ray.get_actor; max_restarts=-1: Ray restarts any that dies. Each gets
        # its own sections of the config and the registry's and replay store's names, plain
        # data that travels inline with the actor's spec: an actor handle among the arguments
        # would keep a restart from finding its arguments again (ray-project/ray#53727).
        prefix = link.run_id
        self.learner = ray.remote(LearnerService).options(
            name=f"{prefix}-learner", num_cpus=place.learner_cpus, num_gpus=place.learner_gpus,
            resources=dict(place.learner_resources), max_concurrency=2, max_restarts=-1,
        ).remote(
            rules=training_rules, network=config.network, learner=config.learner, replay_config=config.replay,
            stage1_steps=config.stage1.steps if config.stage1.enabled and dqn is None else 0,
            candidate_every_steps=config.evaluation.candidate_every_steps,
            keep_stage1_window=config.stage1.keep_window, seed=config.seed, run_config=config.to_dict(),
            config_hash=config_hash, run_dir=run_dir, replay=link, registry=registry_name,
            dqn=dqn,
        )
        self.evaluator = ray.remote(EvaluatorService).options(
            name=f"{prefix}-evaluator", num_cpus=place.evaluator_cpus, max_concurrency=2, max_restarts=-1,
            scheduling_strategy=_on_driver_node(soft=True),
        ).remote(
            rules=config.game_rules(), network=config.network, search=config.search, evaluation=config.evaluation,
            seed=config.seed, config_hash=config_hash, run_dir=run_dir, registry=registry_name, algo=config.algo,
        )
        # SPREAD: one node leaving takes as few actors as possible with it; Ray restarts those on
        # the nodes that are left (or on one that joins) and _revive starts their loops again.
        def actor(i: int) -> Any:
            options = ray.remote(DQNActorService if dqn is not None else SelfPlayService).options(
                name=f"{prefix}-actor-{i}", num_cpus=place.actor_cpus, max_concurrency=2, max_restarts=-1,
                scheduling_strategy="SPREAD",
            )
            if dqn is not None:
                return options.remote(
                    f"actor-{i}", i, rules=training_rules, network=config.network, selfplay=config.selfplay, dqn=dqn,
                    seed=config.seed, config_hash=config_hash, replay=link, registry=registry_name,
                )
            return options.remote(
                f"actor-{i}", i, rules=training_rules, network=config.network, search=config.search,
                selfplay=config.selfplay, stage1=config.stage1, seed=config.seed, config_hash=config_hash,
                replay=link, registry=registry_name, actors=place.actors,
            )

        self.actors = [actor(i) for i in range(place.actors)]
        created.extend([self.learner, self.evaluator, *self.actors])
        self.loops: dict[Any, tuple[str, Any]] = {}  # run() object ref -> (component, actor handle)
        named = [("learner", self.learner), ("evaluator", self.evaluator)]
        for name, handle in named + [(f"actor-{i}", a) for i, a in enumerate(self.actors)]:
            self.loops[handle.run.remote()] = (name, handle)
        self.restarts = 0
        self.budget = RestartBudget(config.run.max_restarts, config.run.restart_window_s,
                                    config.run.restart_backoff_s)
        self.backing_off: list[tuple[float, str, Any]] = []  # (when to restart, component, actor handle)
        self.actor_counts = _ActorCounts(len(self.actors))
        self.replay_watch = _ReplayWatch()
        self.replaced_before = _replaced_bests(rundir)  # promotions of earlier sessions

    def run(self, info: dict[str, Any]) -> dict[str, Any]:
        cfg = self.config
        start = time.monotonic()
        budget = cfg.run.minutes * 60.0
        acting = (f"epsilon-greedy DQN against {cfg.dqn.opponent}" if cfg.algo == "dqn"
                  else f"{cfg.search.num_simulations} simulations per move")
        # The learner actor decides "auto" on its own node's CPU, so the driver can only say what was asked.
        cpu_precision = {"on": " in bfloat16",
                         "auto": " (bfloat16 if it has the instructions)"}.get(cfg.learner.cpu_amp, "")
        self.out.write(
            f"hopzero train: {cfg.name} config on {cfg.preset}, run {info['run_id']} in {self.rundir.path}"
            f"{' (resumed)' if info.get('resumed') else ''}\n"
            f"  {self.place.actors} {'DQN' if cfg.algo == 'dqn' else 'self-play'} actor(s) x "
            f"{cfg.selfplay.games_per_actor} games, {acting}; learner on "
            f"{'GPU' if self.place.learner_gpus else 'CPU' + cpu_precision}; replay: {self.link.describe()}; "
            f"budget {cfg.run.minutes:g} min; Ctrl-C stops cleanly\n"
        )
        self.out.flush()
        interrupted, failure = False, None
        try:
            while True:
                time.sleep(cfg.run.progress_every_s)
                _stop_if_ctrl_c()
                self._revive()
                snap = self._snapshot(time.monotonic() - start)
                self.rundir.append("metrics.jsonl", snap)
                news = self.replay_watch.update(snap["learner"])
                if news:
                    log.warning("%s", news)
                self.out.write("".join(f"hopzero train: {line}\n" for line in news) + _progress_line(snap) + "\n")
                self.out.flush()
                if budget and time.monotonic() - start >= budget:
                    break
                if cfg.run.max_learner_steps and snap["learner"].get("steps", 0) >= cfg.run.max_learner_steps:
                    break
        except KeyboardInterrupt:
            interrupted = True
            self.out.write("\nstopping (Ctrl-C) ...\n")
        except TrainingFailed as exc:
            failure = exc
            self.out.write(f"stopping: {exc}\n")
        summary = self._finish(time.monotonic() - start, interrupted or failure is not None)
        if failure is not None:
            raise failure
        return summary

    def _revive(self) -> None:
        """Call ``run()`` again on components whose loop ended (Ray restarted a killed actor),
        after the budget's backoff; raise :class:`TrainingFailed` for one that failed more often
        than the budget allows."""
        import ray

        now = time.monotonic()
        done, _ = ray.wait(list(self.loops), num_returns=len(self.loops), timeout=0) if self.loops else ([], [])
        for ref in done:
            name, handle = self.loops.pop(ref)
            error = _loop_error(ref)
            self.restarts += 1
            if not self.budget.spend(name, now):
                run = self.config.run
                raise TrainingFailed(
                    f"the {name} failed {self.budget.failures(name)} times within {run.restart_window_s:g} s "
                    f"(run.max_restarts={run.max_restarts}); its last error: {error}"
                )
            delay = self.budget.delay(name)
            log.warning("the %s stopped (%s); starting its loop again in %.0f s", name, error, delay)
            self.backing_off.append((now + delay, name, handle))
        due = [entry for entry in self.backing_off if entry[0] <= now]
        self.backing_off = [entry for entry in self.backing_off if entry[0] > now]
        for _, name, handle in due:
            self.loops[handle.run.remote()] = (name, handle)

    def _snapshot(self, elapsed: float) -> dict[str, Any]:
        *actors, learner, evaluator, registry = _gather_stats(
            [*self.actors, self.learner, self.evaluator, self.registry], timeout=10.0
        )
        registry = registry or {"best_version": -1, "candidate_version": -1, "promotions": 0}
        return {
            "time": round(elapsed, 1),
            "wall": time.time(),
            "selfplay": {**_sum_actor_stats(actors), **self.actor_counts.update(actors)},
            "learner": learner,
            "evaluator": evaluator,
            "registry": registry,
            "promotions": run_start_promotions(int(registry.get("promotions", 0)), self.rundir, self.replaced_before),
            "restarts": self.restarts,
        }

    def _finish(self, elapsed: float, interrupted: bool) -> dict[str, Any]:
        import ray

        for handle in [*self.actors, self.evaluator, self.learner]:
            try:
                handle.stop.remote()
            except Exception:  # noqa: BLE001
                pass
        ray.wait(list(self.loops), num_returns=len(self.loops), timeout=60)
        snap = self._snapshot(elapsed)
        self.rundir.append("metrics.jsonl", snap)
        from hopzero.plots import write_plots

        plots = write_plots(self.rundir)
        summary = _summary(self.config, self.rundir, snap, elapsed, interrupted, plots)
        self.out.write(summary["text"] + "\n")
        self.out.flush()
        return summary


_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit): \S")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _loop_error(ref: Any) -> str:
    """Why a component's finished ``run()`` ended, in one line (``ValueError: ...``)."""
    import ray

    try:
        ray.get(ref, timeout=0)
    except Exception as exc:  # noqa: BLE001 - any failure of the component is reported as such
        return _one_line(exc)
    return "its loop returned"


def _one_line(exc: BaseException) -> str:
    """The component's own exception out of Ray's wrapper: the original exception of a failed
    call, or the last ``SomethingError: message`` line of the traceback an actor that died in its
    constructor left (Ray gives no object for that one)."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        text = f"{type(cause).__name__}: {cause}"
    else:
        lines = _ANSI.sub("", str(exc)).splitlines()
        errors = [line for line in lines if _ERROR_LINE.match(line)]
        if errors:  # "learner.checkpoint.CheckpointError: ..." -> "CheckpointError: ..."
            name, _, message = errors[-1].partition(": ")
            text = f"{name.rsplit('.', 1)[-1]}: {message}"
        else:
            text = f"{type(exc).__name__}: {next((line for line in lines if line.strip()), '')}"
    return text.splitlines()[0].strip()[:400] if text.strip() else type(exc).__name__


def _gather_stats(handles: list[Any], timeout: float) -> list[dict[str, Any]]:
    """``stats()`` of every handle, asked at once and awaited together for at most ``timeout`` s.

    A component that is restarting, waiting for a node, or on a node that just left answers
    ``{}`` this time; asking one after another would cost the timeout once per silent component.
    """
    import ray

    refs: list[Any] = []
    for handle in handles:
        try:
            refs.append(handle.stats.remote())
        except Exception:  # noqa: BLE001 - a handle Ray cannot reach right now
            refs.append(None)
    pending = [r for r in refs if r is not None]
    if pending:
        ray.wait(pending, num_returns=len(pending), timeout=timeout)
    return [_ready_value(ref) for ref in refs]


def _ready_value(ref: Any) -> dict[str, Any]:
    """The value of a finished ``stats()`` call; ``{}`` if it is not finished or failed."""
    import ray

    if ref is None:
        return {}
    try:
        return ray.get(ref, timeout=0)
    except Exception:  # noqa: BLE001 - GetTimeoutError, ActorDiedError, ActorUnavailableError, ...
        return {}


def _restore_best(rundir: RunDir, registry: Any) -> None:
    """A resumed run starts from its recorded best model."""
    from plumbing.run_files import read_best

    best = read_best(rundir.path)
    if best is None:
        return
    from learner.network_evaluator import load_net_with_meta

    path = Path(best.path)
    model, _ = load_net_with_meta(path if path.is_absolute() else rundir.path / path)
    arrays = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    import ray

    # Waited for: a learner that finds no checkpoint adopts this best model when it starts.
    ray.get(registry.set_best.remote(best.version, arrays))


def run_start_promotions(registry_count: int, rundir: RunDir, replaced_before: int) -> int:
    """The promotions since this start of the run: the registry counts those it was told of, but one that a
    restarted evaluator finished (``reconcile``) reaches it as a plain new best, and a restarted
    registry counts from 0; ``promotions.jsonl`` has every one (on the evaluator's disk, which is
    the driver's unless no room was left there: then the registry's count stands)."""
    return max(registry_count, _replaced_bests(rundir) - replaced_before)


def _replaced_bests(rundir: RunDir) -> int:
    """Promotions ``promotions.jsonl`` logs that replaced a best model (its first line is the
    run's first best model: stage 1's network, v0 or ``--init-model``'s, no promotion)."""
    return max(len(rundir.read_jsonl("promotions.jsonl")) - 1, 0)


class _ReplayWatch:
    """Says once when the learner has lost the replay buffer's Redis, and once when it has it
    again (from the learner's ``replay_unreachable_s``; a silent learner changes nothing)."""

    def __init__(self) -> None:
        self.down_s = 0.0

    def update(self, learner: dict[str, Any]) -> list[str]:
        """The lines to say after this snapshot of the learner's stats."""
        if not learner:
            return []
        down_s, was = float(learner.get("replay_unreachable_s", 0.0)), self.down_s
        self.down_s = down_s
        if down_s and not was:
            return [(f"Redis of the replay buffer unreachable for {down_s:.0f} s: the learner reads no games and "
                     f"waits; the actors keep their finished games (a bounded queue) and retry. Start Redis again: "
                     f"the run goes on by itself")]
        if was and not down_s:
            return ["Redis of the replay buffer reachable again: the learner reads the games the actors kept"]
        return []


class _ActorCounts:
    """Self-play totals that never go down: a restarted actor counts from zero again and a busy
    one may miss a snapshot, but the run's games, positions and simulations are its to keep."""

    KEYS = ("games", "positions", "simulations")

    def __init__(self, actors: int) -> None:
        self.last = [dict.fromkeys(self.KEYS, 0) for _ in range(actors)]
        self.carried = [dict.fromkeys(self.KEYS, 0) for _ in range(actors)]

    def update(self, stats: list[dict[str, Any]]) -> dict[str, int]:
        """Take this snapshot's per-actor stats (``{}`` = no answer); return the run's totals."""
        for last, carried, s in zip(self.last, self.carried, stats):
            if not s:
                continue  # no answer this time: its last counts stand
            if any(s.get(k, 0) < last[k] for k in self.KEYS):  # a new incarnation of the actor
                for k in self.KEYS:
                    carried[k] += last[k]
            for k in self.KEYS:
                last[k] = s.get(k, 0)
        return {k: sum(c[k] + seen[k] for c, seen in zip(self.carried, self.last)) for k in self.KEYS}


def _sum_results(stats: list[dict[str, Any]], key: str) -> list[int]:
    """The actors' win, draw and loss counts under ``key``, added up."""
    return [sum(s.get(key, [0, 0, 0])[i] for s in stats) for i in range(3)]


def _sum_actor_stats(stats: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("games", "positions", "simulations")
    total: dict[str, Any] = {k: sum(s.get(k, 0) for s in stats) for k in keys}
    total["sims_per_s"] = sum(s.get("sims_per_s", 0.0) for s in stats)
    total["positions_per_s"] = sum(s.get("positions_per_s", 0.0) for s in stats)
    total["actors"] = len([s for s in stats if s])
    total["model_versions"] = sorted({s.get("model_version", -1) for s in stats if s})
    total["stage"] = max((s.get("stage", 0) for s in stats), default=0)
    # games against selfplay.opponent: the network's wins, draws and losses
    total["opponent_results"] = _sum_results(stats, "opponent_results")
    if any("epsilon" in s for s in stats):  # DQN actors: exploration and training-game results
        total["epsilon"] = max(s.get("epsilon", 0.0) for s in stats if "epsilon" in s)
        total["results"] = _sum_results(stats, "results")
        total["waited_s"] = round(sum(s.get("waited_s", 0.0) for s in stats), 1)  # paused by the learner
    return total


def _progress_line(snap: dict[str, Any]) -> str:
    sp, le, ev = snap["selfplay"], snap["learner"], snap["evaluator"]
    minutes, seconds = divmod(int(snap["time"]), 60)
    losses = le.get("losses", {})
    if "huber" in losses:  # DQN
        loss = f"loss {losses['total']:.3f} (huber {losses['huber']:.3f} q {losses['q_mean']:.2f})"
    elif losses:
        value = losses.get("value_mse", losses.get("value_ce", 0.0))   # ce: three or more players
        loss = f"loss {losses['total']:.3f} (v {value:.3f} p {losses['policy_ce']:.3f}"
        loss += f" o {losses['opponent_ce']:.3f})" if "opponent_ce" in losses else ")"
    else:
        loss = "loss -"
    greedy = ev.get("vs_greedy")
    gate = ev.get("last_gate")
    parts = [
        f"[{minutes:02d}:{seconds:02d}]",
        "dqn" if "epsilon" in sp else f"stage {le.get('stage', '?')}",
        f"games {sp['games']:,} ({sp['positions_per_s']:.0f} pos/s, {sp['sims_per_s']:,.0f} sims/s)",
        f"learner {le.get('steps', 0):,} steps {le.get('steps_per_s', 0):.1f}/s {loss}",
        f"buffer {le.get('window', 0):,}",
        f"best v{snap['registry']['best_version']}",
        f"vs greedy {greedy['score']:.0%}" if greedy else "vs greedy -",
        f"gate v{gate['candidate']} {gate['score']:.0%} {gate['decision']}" if gate else "gate -",
        f"promotions {snap.get('promotions', snap['registry']['promotions'])}",
    ]
    # Records kept from the learner, by kind; "stale" ones (older models' games, expected at the
    # switch to self-play) are counted in the stats only.
    if "epsilon" in sp:
        w, d, lost = sp["results"]
        parts.insert(3, f"eps {sp['epsilon']:.2f}, training games W-D-L {w}-{d}-{lost}")
    if any(sp.get("opponent_results", ())):
        w, d, lost = sp["opponent_results"]
        parts.insert(3, f"against the outside opponent W-D-L {w}-{d}-{lost}")
    skipped = {kind: n for kind, n in le.get("skipped", {}).items() if kind != "stale" and n}
    if skipped:
        parts.append("skipped " + ", ".join(f"{n:,} {kind}" for kind, n in sorted(skipped.items())))
    down = le.get("replay_unreachable_s", 0.0)
    if down:
        parts.append(f"REDIS UNREACHABLE for {down:.0f} s")
    return " | ".join(parts)


def _summary(
    config: TrainConfig, rundir: RunDir, snap: dict[str, Any], elapsed: float, interrupted: bool, plots: list[Path]
) -> dict[str, Any]:
    greedy = [e for e in rundir.read_jsonl("evaluations.jsonl") if e.get("kind") == "greedy"]
    # Without a shared filesystem the evaluator's file may be on another node; its stats know too.
    last = greedy[-1] if greedy else snap["evaluator"].get("vs_greedy")
    best = snap["registry"]["best_version"]
    if best < 0 and last is not None:  # the registry died with its actor: the files know
        best = int(last["version"])
    lines = [
        f"{'Stopped' if interrupted else 'Finished'} after {elapsed / 60:.1f} min: "
        f"{snap['selfplay']['games']:,} self-play games, {snap['learner'].get('steps', 0):,} learner steps, "
        f"{snap.get('promotions', snap['registry']['promotions'])} promotion(s).",
    ]
    if last and int(last["version"]) != best:
        lines.append(f"Best model v{best} (promoted as the time ran out; not yet measured against greedy).")
    if last:
        lines.append(
            f"{'Best' if int(last['version']) == best else 'Last measured'} model v{last['version']}: "
            f"score {last['score']:.1%} against greedy "
            f"({last['wins']} wins, {last['draws']} draws, {last['losses']} losses in {last['games']} games, "
            f"{'argmax Q' if last.get('player') == 'dqn' else str(last['simulations']) + ' simulations per move'}, "
            f"paper protocol)."
        )
    else:
        lines.append(f"Best model v{best}: not yet measured against greedy.")
    lines.append(f"Run directory: {rundir.path} (model=RUN_DIR plays its best model; plots: "
                 f"{', '.join(p.name for p in plots) or 'none'}).")
    return {"text": "\n".join(lines), "best_version": best, "vs_greedy": last, "elapsed_s": elapsed,
            "interrupted": interrupted}
