"""Observing a run: deploy/prometheus.yml, the Grafana provisioning and the generated dashboard.

Grafana cannot run here, so the evidence is, in order of strength:

1. A live run: a Ray head started as `ray start --head --block` (its own process group, every
   port free, its own temp dir), a real `prometheus` scraping it through a config derived from
   deploy/prometheus.yml (Ray's service-discovery file), and `hopzero train --ray-address` with
   a tiny configuration. The dashboard's own expressions, sent to Prometheus' HTTP API, must
   return data for every panel, gauges must stay visible beyond Ray's gauge TTL, and
   :func:`hopzero.dashboard.render` must draw the PNG from the same queries.
2. The tools Prometheus and Grafana use themselves: `promtool check config`, `promtool check
   rules` (every expression, macros substituted), Grafana's Python SDK model (the committed
   JSON must round-trip through it unchanged, so a misspelt key does not survive).
3. Names: every metric the dashboard queries is one the code exports (plumbing.metrics.METRICS
   as Ray exports them, or a listed Ray metric) and one a component actually records.

`HOPZERO_DASHBOARD_PNG=docs/images/dashboard.png HOPZERO_OBSERVE_MINUTES=10 pytest -k live
tests/test_deploy_observe.py` trains longer with PNG_SETTINGS, waits for the end and renders the
documentation's PNG over the whole run (docs/images/dashboard.png: this setup and these settings,
10 minutes on a shared 2-core machine).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import train_helpers
import yaml

from hopzero import dashboard
from hopzero.ports import free_port, free_port_block, free_ports
from plumbing.metrics import METRICS, exported_name, markdown_table

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
PROMETHEUS_YML = DEPLOY / "prometheus.yml"
DASHBOARD_FILE = DEPLOY / "grafana" / "dashboards" / "hopzero.json"
DATASOURCE_YML = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
PROVIDER_YML = DEPLOY / "grafana" / "provisioning" / "dashboards" / "hopzero.yml"
METRICS_MD = REPO / "docs" / "METRICS.md"
RAY_SD_FILE = "/tmp/ray/prom_metrics_service_discovery.json"
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    """A binary the checks need (promtool, prometheus: Debian's `prometheus` package); missing,
    the test fails in CI and is skipped elsewhere."""
    found = shutil.which(name) or (str(BIN / name) if (BIN / name).is_file() else None)
    if found is None:
        message = f"{name} is not installed (Debian: apt-get install prometheus; scripts/quickstart test does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool("promtool"), *args], capture_output=True, text=True, timeout=60, check=False)


# ---------------------------------------------------------------------------------------------
# a. deploy/prometheus.yml
# ---------------------------------------------------------------------------------------------


def test_prometheus_config_passes_promtool():
    result = promtool("check", "config", str(PROMETHEUS_YML))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_rejects_a_broken_config(tmp_path):
    broken = tmp_path / "prometheus.yml"
    broken.write_text(PROMETHEUS_YML.read_text().replace("file_sd_configs:", "file_sd_config:"))
    result = promtool("check", "config", str(broken))
    assert result.returncode != 0, "promtool accepted an unknown key"


def test_prometheus_scrapes_rays_service_discovery_file():
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"ray"}, "everything that records metrics runs in Ray: one job"
    files = [f for sd in jobs["ray"]["file_sd_configs"] for f in sd["files"]]
    assert files == [RAY_SD_FILE]
    # Grafana's $__rate_interval is computed from the data source's timeInterval: it must be
    # Prometheus' scrape interval, and the dashboard module's constant is the same number.
    datasource = yaml.safe_load(DATASOURCE_YML.read_text())["datasources"][0]
    assert config["global"]["scrape_interval"] == datasource["jsonData"]["timeInterval"] == \
        f"{dashboard.SCRAPE_INTERVAL_S}s"


# ---------------------------------------------------------------------------------------------
# b. every expression of the dashboard parses
# ---------------------------------------------------------------------------------------------


def rule_file(exprs: list[str], path: Path) -> Path:
    """One recording rule per expression, with Grafana's macros replaced by durations."""
    macros = dashboard.grafana_macros(step_s=15, range_s=3600)
    rules = [{"record": f"hopzero:dashboard:query{i}", "expr": dashboard.substitute(e, macros)}
             for i, e in enumerate(exprs)]
    path.write_text(yaml.safe_dump({"groups": [{"name": "hopzero-dashboard", "rules": rules}]}))
    return path


def dashboard_exprs() -> list[str]:
    return [q.expr for _, q in dashboard.all_queries()]


def test_every_dashboard_expression_parses(tmp_path):
    exprs = dashboard_exprs()
    assert len(exprs) >= 14
    result = promtool("check", "rules", str(rule_file(exprs, tmp_path / "rules.yml")))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in result.stdout


def test_promtool_rejects_a_broken_expression(tmp_path):
    broken = [*dashboard_exprs(), "sum(rate(ray_hopzero_learner_steps_total[$__rate_interval])"]
    result = promtool("check", "rules", str(rule_file(broken, tmp_path / "rules.yml")))
    assert result.returncode != 0, "promtool accepted an unbalanced parenthesis"


def test_macros_are_all_substituted():
    macros = dashboard.grafana_macros(step_s=15, range_s=3600)
    assert macros["$__rate_interval"] == "40s", "Grafana: max(interval + scrape, 4 x scrape) with scrape 10s"
    for expr in dashboard_exprs():
        assert "$" not in dashboard.substitute(expr, macros), expr


# ---------------------------------------------------------------------------------------------
# c. the committed dashboard is the generated one, and Grafana's model accepts it unchanged
# ---------------------------------------------------------------------------------------------


def test_committed_dashboard_is_the_generated_one():
    assert DASHBOARD_FILE.read_text() == dashboard.dashboard_json(), (
        "deploy/grafana/dashboards/hopzero.json is stale: hopzero dashboard build --out "
        "deploy/grafana/dashboards/hopzero.json")


def sdk_round_trip(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` parsed into the SDK's Dashboard model (panel options, field config and
    Prometheus queries into their typed models) and written back. Unknown keys are dropped."""
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models.dashboard import Dashboard

    register_default_plugins()  # without it, options and queries would stay untyped dicts
    return json.loads(json.dumps(Dashboard.from_json(data), cls=JSONEncoder))


def test_committed_dashboard_round_trips_through_the_sdk_model():
    data = json.loads(DASHBOARD_FILE.read_text())
    assert sdk_round_trip(data) == data


MISSPELLINGS = [
    ("top level", lambda d: d.update(refresh_="10s")),
    ("panel", lambda d: d["panels"][1].update(gridPoss=d["panels"][1]["gridPos"])),
    ("field config", lambda d: d["panels"][1]["fieldConfig"]["defaults"].update(unitt="percent")),
    ("custom field config", lambda d: d["panels"][1]["fieldConfig"]["defaults"]["custom"].update(lineWidht=3)),
    ("options", lambda d: d["panels"][1]["options"]["legend"].update(placment="right")),
    ("query", lambda d: d["panels"][1]["targets"][0].update(legendFromat="x")),
]


@pytest.mark.parametrize("where,misspell", MISSPELLINGS, ids=[m[0] for m in MISSPELLINGS])
def test_round_trip_catches_a_misspelt_key(where, misspell):
    data = json.loads(DASHBOARD_FILE.read_text())
    broken = copy.deepcopy(data)
    misspell(broken)
    assert sdk_round_trip(broken) != broken, f"a misspelt key in the {where} survived"


def test_dashboard_layout_and_provisioning():
    data = json.loads(DASHBOARD_FILE.read_text())
    rows = [p["title"] for p in data["panels"] if p["type"] == "row"]
    assert rows == ["Strength", "Throughput", "Learner"], "the first row is what the dashboard is opened for"
    first = [p["title"] for p in data["panels"] if p["type"] != "row" and p["gridPos"]["y"] == 1]
    assert first[:2] == ["Candidate vs best (gate score)", "Best vs greedy (win rate)"]
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids))
    uids = {t["datasource"]["uid"] for p in data["panels"] for t in p.get("targets", [])}
    datasource = yaml.safe_load(DATASOURCE_YML.read_text())["datasources"][0]
    assert uids == {datasource["uid"]} == {dashboard.DATASOURCE_UID}
    assert datasource["url"] == "http://prometheus:9090"
    provider = yaml.safe_load(PROVIDER_YML.read_text())["providers"][0]
    assert provider["type"] == "file" and provider["options"]["path"] == "/var/lib/grafana/dashboards"
    placed = dashboard.layout()
    for i, item in enumerate(placed):  # no two panels overlap on Grafana's grid
        assert item.x + item.w <= 24
        for other in placed[i + 1:]:
            apart = (item.x + item.w <= other.x or other.x + other.w <= item.x
                     or item.y + item.h <= other.y or other.y + other.h <= item.y)
            assert apart, (item.panel or item.row.title, other.panel or other.row.title)


# ---------------------------------------------------------------------------------------------
# d. every queried metric is exported, and recorded by a component
# ---------------------------------------------------------------------------------------------


def queried_metrics() -> set[str]:
    return {name for expr in dashboard_exprs() for name in dashboard.metric_names(expr)}


def test_dashboard_queries_only_exported_metrics():
    unknown = queried_metrics() - dashboard.known_metrics()
    assert not unknown, f"not exported by hopzero or Ray: {sorted(unknown)}"


def test_an_unknown_metric_name_is_caught():
    expr = 'sum(rate(ray_hopzero_learner_step_total{stage="2"}[$__rate_interval])) by (x)'
    assert dashboard.metric_names(expr) - dashboard.known_metrics() == {"ray_hopzero_learner_step_total"}
    assert dashboard.metric_names("max(hopzero_gate_score)") - dashboard.known_metrics(), "unprefixed"


def test_exported_names_follow_ray():
    assert exported_name("hopzero_learner_steps") == "ray_hopzero_learner_steps_total"  # counter
    assert exported_name("hopzero_gate_score") == "ray_hopzero_gate_score"  # gauge


def recorded_names() -> set[str]:
    """Metric names passed to Metrics.inc/.set (or the learner's _inc_to) in the components."""
    pattern = re.compile(r"\.(?:inc|set|_inc_to)\(\s*\"(hopzero_\w+)\"")
    found: set[str] = set()
    for package in ("actors", "learner", "evaluator", "hopzero"):
        for source in (REPO / package).glob("*.py"):
            found |= set(pattern.findall(source.read_text()))
    return found


def test_queried_metrics_are_recorded_by_a_component():
    ours = {exported_name(name): name for name in METRICS}
    queried = {ours[m] for m in queried_metrics() if m in ours}
    missing = queried - recorded_names()
    assert not missing, f"declared in METRICS but recorded by no component: {sorted(missing)}"


def test_metrics_doc_table_is_generated_from_metrics():
    assert markdown_table() in METRICS_MD.read_text(), "docs/METRICS.md: paste `python -m plumbing.metrics`"


def test_gauges_are_set_again_until_changed():
    """Ray's agent forgets a gauge not reported for two report intervals; Metrics re-sets each
    gauge periodically. Shown with the prometheus_client backend in a fresh process (its
    registry is global): a value overwritten behind the facade's back is restored."""
    code = (
        "import time, prometheus_client as pc\n"
        "from plumbing.metrics import Metrics\n"
        "m = Metrics(backend='prometheus', refresh_s=0.05)\n"
        "m.set('hopzero_learner_loss', 0.7, term='total')\n"
        "m._objects['hopzero_learner_loss'].labels(term='total').set(0.0)  # as if forgotten\n"
        "time.sleep(0.5)\n"
        "print(pc.REGISTRY.get_sample_value('hopzero_learner_loss', {'term': 'total'}))\n"
    )
    assert float(printed_by(code)) == pytest.approx(0.7)


def test_a_stopped_components_metrics_never_set_a_gauge_back():
    """Two learners one after the other in one process (as in the test process): the first one's
    refresher re-sets the latest value anyone set, not the 0 it set itself."""
    code = (
        "import prometheus_client as pc\n"
        "from plumbing.metrics import Metrics\n"
        "old, new = Metrics(backend='prometheus', refresh_s=0), Metrics(backend='prometheus', refresh_s=0)\n"
        "old.set('hopzero_replay_unreachable_seconds', 0.0)\n"
        "new.set('hopzero_replay_unreachable_seconds', 7.5)\n"
        "old.refresh()\n"
        "print(pc.REGISTRY.get_sample_value('hopzero_replay_unreachable_seconds'))\n"
    )
    assert float(printed_by(code)) == pytest.approx(7.5)


def printed_by(code: str) -> str:
    """What ``code`` prints, run by a fresh Python outside the checkout (prometheus_client's
    registry is the process's)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=tempfile.gettempdir(), check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


# ---------------------------------------------------------------------------------------------
# e. live: Ray head + Prometheus + hopzero train, queried with the dashboard's expressions
# ---------------------------------------------------------------------------------------------

TINY = [*train_helpers.TINY, train_helpers.PROMOTE_ANY, "run.progress_every_s=5"]
#: For the documentation's PNG (after TINY): a longer first stage, more simulations and more
#: games per measurement at the default 55% gate, so that the curves mean something.
PNG_SETTINGS = ["stage1.games=20000", "stage1.steps=2000", "search.num_simulations=24", "selfplay.games_per_actor=16",
                "replay.min_positions=1000", "learner.batch_size=64", "evaluation.candidate_every_steps=500",
                "evaluation.simulations=32", "evaluation.parallel_games=10", "evaluation.greedy_games=20",
                "evaluation.gate.games=10", "evaluation.gate.min_games=10", "evaluation.gate.threshold=0.55"]
SCRAPE_S = 2  # the test's Prometheus; Ray's agent still updates every 10 s (dashboard.SCRAPE_INTERVAL_S)
PROBE_TAG = "refresh-probe"


def wait_for(predicate, timeout: float, what: str, interval: float = 1.0, check=None):
    """Poll ``predicate`` until it returns something truthy; ``check()`` may fail early."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if check is not None:
            check()
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


@contextmanager
def process_group(args: list[str], log: Path, *, env: dict[str, str] | None = None, cwd: Path | None = None,
                  stop_signal: int = signal.SIGTERM, grace: float = 20.0) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``args`` (niced: the machine is shared) in its own process group; on exit send
    ``stop_signal`` to the group, then SIGKILL what is left after ``grace`` seconds."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(["nice", "-n", "10", *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=cwd, start_new_session=True)
    try:
        yield proc
    finally:
        for sig, wait in ((stop_signal, grace), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue


def ray_env(dashboard_metrics_port: int, autoscaler_metrics_port: int) -> dict[str, str]:
    """The head and its drivers: no token (loopback only, and the user's ~/.ray token must not
    switch it on), no 30 s drain on SIGTERM, and free ports for the dashboard's and the
    autoscaler's own metrics endpoints (fixed defaults otherwise, shared by every Ray head)."""
    return {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
            "DASHBOARD_METRIC_PORT": str(dashboard_metrics_port),
            "AUTOSCALER_METRIC_PORT": str(autoscaler_metrics_port)}


@dataclass
class RayHead:
    address: str
    temp_dir: Path
    metrics_port: int
    env: dict[str, str]

    @property
    def sd_file(self) -> Path:
        return self.temp_dir / Path(RAY_SD_FILE).name


@contextmanager
def ray_head(base: Path) -> Iterator[RayHead]:
    """`ray start --head --block` with a free port for every port, in ``base`` (short: Ray's
    socket paths must fit 107 bytes); it never touches /tmp/ray, and `ray stop` is never run."""
    flags = ("--port", "--metrics-export-port", "--dashboard-port", "--dashboard-agent-listen-port",
             "--dashboard-agent-grpc-port", "--node-manager-port", "--object-manager-port",
             "--runtime-env-agent-port", "--ray-client-server-port")
    *chosen, dashboard_metrics, autoscaler_metrics = free_ports(len(flags) + 2)
    ports = dict(zip(flags, chosen, strict=True))
    head = RayHead(f"127.0.0.1:{ports['--port']}", base / "ray", ports["--metrics-export-port"],
                   ray_env(dashboard_metrics, autoscaler_metrics))
    low = free_port_block(201)  # worker ports: clear of the ports above (Ray refuses overlaps)
    args = [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1", "--num-cpus=2",
            f"--temp-dir={head.temp_dir}", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
            "--disable-usage-stats", f"--min-worker-port={low}", f"--max-worker-port={low + 200}",
            *(f"{flag}={port}" for flag, port in ports.items())]
    with process_group(args, base / "ray.log", env=head.env) as proc:
        def alive() -> None:
            assert proc.poll() is None, f"ray start exited:\n{(base / 'ray.log').read_text()[-3000:]}"

        def listed() -> bool:  # the head writes the file once its dashboard's metrics module runs
            try:
                targets = json.loads(head.sd_file.read_text())[0]["targets"]
            except (OSError, ValueError, IndexError, KeyError):
                return False
            return any(t.endswith(f":{head.metrics_port}") for t in targets)

        wait_for(listed, 120, "Ray's service-discovery file", check=alive)
        yield head


def prometheus_config(sd_file: Path, path: Path) -> Path:
    """deploy/prometheus.yml pointed at this head's discovery file, scraping every 2 s."""
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    config["global"].update(scrape_interval=f"{SCRAPE_S}s", scrape_timeout=f"{SCRAPE_S}s",
                            evaluation_interval=f"{SCRAPE_S}s")
    replaced = 0
    for job in config["scrape_configs"]:
        for sd in job.get("file_sd_configs", []):
            replaced += sd["files"].count(RAY_SD_FILE)
            sd["files"] = [str(sd_file) if f == RAY_SD_FILE else f for f in sd["files"]]
            sd["refresh_interval"] = f"{SCRAPE_S}s"
    assert replaced == 1, "deploy/prometheus.yml must read Ray's discovery file"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def prometheus_server(config: Path, base: Path) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [tool("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={base / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1d"]
    with process_group(args, base / "prometheus.log") as proc:
        def alive() -> None:
            assert proc.poll() is None, f"prometheus exited:\n{(base / 'prometheus.log').read_text()[-3000:]}"

        wait_for(lambda: _http_ok(f"{url}/-/ready"), 60, "Prometheus to be ready", check=alive)
        yield url


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def instant_query(url: str, expr: str) -> list[dict[str, Any]]:
    """Prometheus' /api/v1/query: the result vector."""
    params = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]["result"]


PROBE = """
import sys, time, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)

@ray.remote(num_cpus=0)
class Probe:
    def set_once(self, tag):
        from plumbing.metrics import Metrics
        self.metrics = Metrics()  # kept: its refresher thread lives with the actor
        self.metrics.set("hopzero_selfplay_model_version", 7, actor=tag)
        return self.metrics.backend

probe = Probe.remote()
print(ray.get(probe.set_once.remote(sys.argv[2])), flush=True)
time.sleep(3600)
"""


@dataclass
class Observed:
    """A training run under observation: Prometheus' URL, the processes, the start time."""

    prom: str
    train: subprocess.Popen[bytes]
    probe: subprocess.Popen[bytes]
    base: Path
    started: float

    def check_running(self, *, train: bool = True) -> None:
        assert self.probe.poll() is None, f"the probe exited:\n{(self.base / 'probe.log').read_text()[-2000:]}"
        if train:
            assert self.train.poll() is None, \
                f"training ended early:\n{(self.base / 'train.log').read_text()[-3000:]}"


@contextmanager
def observed_training(base: Path, overrides: list[str]) -> Iterator[Observed]:
    """Ray head, Prometheus scraping it, the gauge probe and `hopzero train --ray-address`, each in
    its own process group, stopped in reverse order (training with Ctrl-C, as a user would)."""
    with ExitStack() as stack:
        head = stack.enter_context(ray_head(base))
        prom = stack.enter_context(prometheus_server(prometheus_config(head.sd_file, base / "prometheus.yml"), base))
        probe = stack.enter_context(process_group(
            [sys.executable, "-c", PROBE, head.address, PROBE_TAG], base / "probe.log", env=head.env, cwd=base))
        started = time.time()
        train = stack.enter_context(process_group(
            [str(BIN / "hopzero"), "train", "--config", "demo", "--preset", "cc49", "--seed", "3",
             "--ray-address", head.address, "--run-dir", str(base / "run"),
             *(a for o in overrides for a in ("--set", o))],
            base / "train.log", env=head.env, cwd=base, stop_signal=signal.SIGINT, grace=60))
        yield Observed(prom, train, probe, base, started)


def test_live_run_fills_every_panel(tmp_path):
    tool("prometheus")
    png_out = os.environ.get("HOPZERO_DASHBOARD_PNG")
    minutes = float(os.environ.get("HOPZERO_OBSERVE_MINUTES", "4"))
    overrides = [*TINY, *(PNG_SETTINGS if png_out else []), f"run.minutes={minutes}"]
    base = Path(tempfile.mkdtemp(prefix="hzobs-", dir="/tmp"))  # short: Ray's socket paths
    try:
        with observed_training(base, overrides) as run:
            deadline = time.monotonic() + 60 * minutes
            while missing := panels_without_data(run.prom):
                run.check_running(train=not png_out)
                assert time.monotonic() < deadline, f"no data after {minutes:g} min in: {missing}"
                time.sleep(5)
            print(f"every panel has data {time.time() - run.started:.0f} s after the start of training")
            gauge_outlives_ray_ttl(run.prom, run.started)
            exported_as_documented(run.prom)
            renders_every_panel(run.prom, run.started, base)
            if png_out:  # the documentation's picture: the whole run
                run.train.wait(timeout=60 * minutes + 180)
                dashboard.render(run.prom, REPO / png_out, start=run.started - 30, end=time.time(), step=5)
    finally:
        for log in base.glob("*.log"):  # kept in pytest's tmp_path for a failure's post-mortem
            shutil.copy(log, tmp_path)
        shutil.rmtree(base, ignore_errors=True)


def renders_every_panel(prom: str, since: float, base: Path) -> None:
    """render() = fetch() + draw(): every panel's data comes back over the run's range, and the
    PNG drawn from it is larger than the same layout drawn without data (curves, legends)."""
    end = time.time()
    data = dashboard.fetch(prom, since, end, SCRAPE_S)
    empty = [title for title, queries in data.items() if not any(series for _, series in queries)]
    assert not empty, f"render would draw no curve in: {empty}"
    out = dashboard.draw(data, base / "dashboard.png", since, end)
    blank = dashboard.draw({}, base / "blank.png", since, end)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 1.2 * blank.stat().st_size, "the PNG looks like the empty layout"
    rendered = dashboard.render(prom, base / "render.png", start=since, end=end, step=SCRAPE_S)
    assert rendered.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert rendered.stat().st_size > 1.2 * blank.stat().st_size


def panels_without_data(prom: str) -> list[str]:
    """Titles of panels one of whose expressions returns no finite value now. The macros are the
    ones Grafana computes against Ray's 10 s cadence, not the test's faster scrape."""
    macros = dashboard.grafana_macros(step_s=SCRAPE_S, range_s=3600)
    missing = []
    for panel, query in dashboard.all_queries():
        result = instant_query(prom, dashboard.substitute(query.expr, macros))
        values = [float(item["value"][1]) for item in result]
        if not values or not all(math.isfinite(v) for v in values):
            missing.append(f"{panel.title}: {query.legend}")
    return missing


def exported_as_documented(prom: str) -> None:
    """Every ``ray_hopzero_*`` name the run exported is ``exported_name`` of a METRICS entry, and
    the run exported all of them but the skipped-records counter (a clean run may skip none)."""
    with urllib.request.urlopen(f"{prom}/api/v1/label/__name__/values", timeout=10) as response:
        names = {n for n in json.load(response)["data"] if n.startswith("ray_hopzero_")}
    documented = {exported_name(name) for name in METRICS}
    assert names <= documented, f"exported under other names: {sorted(names - documented)}"
    expected = documented - {exported_name("hopzero_replay_skipped_records")}
    assert expected <= names, f"never exported: {sorted(expected - names)}"


def gauge_outlives_ray_ttl(prom: str, since: float) -> None:
    """The probe set its gauge once; Ray's agent drops a gauge after 20 s without a report, so
    without Metrics' refresh the series would end 20 s after it began."""
    def span() -> float:
        series = dashboard.query_range(prom, f'ray_hopzero_selfplay_model_version{{actor="{PROBE_TAG}"}}',
                                       since - 60, time.time(), SCRAPE_S)
        times = series[0][1] if series else []
        assert all(b - a <= 12 for a, b in itertools.pairwise(times)), "the gauge disappeared for a while"
        return (times[-1] - times[0]) if times else 0.0

    wait_for(lambda: span() >= 45, 90, "the probe's gauge to stay visible for 45 s", interval=3)
