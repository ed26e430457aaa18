"""The Grafana dashboard of a training run, and a PNG of it drawn from the same Prometheus queries.

The panels are plain data (:data:`ROWS`): a title, PromQL expressions with their legends, a unit.
Everything else reads them: :func:`build` turns them into Grafana's dashboard JSON with Grafana's
own Python SDK (``grafana_foundation_sdk``, imported only there), :func:`render` queries
Prometheus for each expression and draws the panels with matplotlib in the dashboard's layout
(Grafana cannot run everywhere; the PNG in docs/ is drawn this way, not screenshotted), and
tests/test_deploy_observe.py checks that every expression parses (``promtool``), names only
metrics the code exports and returns data from a live run.

Names are the ones Prometheus scrapes from Ray's metrics agent (:func:`plumbing.metrics.exported_name`):
``ray_`` + the name in ``plumbing.metrics.METRICS``, ``_total`` for a counter; each worker process
is its own series, so the queries aggregate (``max`` for a value one component reports, ``sum``
for rates that add up over actors). ``$__rate_interval`` is Grafana's macro: four scrape intervals
at least, so that ``rate()`` always sees two samples.

``hopzero dashboard build > deploy/grafana/dashboards/hopzero.json`` writes the committed file;
``hopzero dashboard render --prometheus URL --out dashboard.png`` draws the PNG.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.gating import GateConfig
from plumbing.metrics import METRICS, exported_name

__all__ = [
    "DASHBOARD_UID",
    "DATASOURCE_UID",
    "RAY_METRICS",
    "ROWS",
    "SCRAPE_INTERVAL_S",
    "Panel",
    "Placed",
    "Query",
    "Row",
    "all_queries",
    "build",
    "dashboard_json",
    "draw",
    "fetch",
    "grafana_macros",
    "known_metrics",
    "layout",
    "legend_text",
    "metric_names",
    "query_range",
    "render",
    "substitute",
]

#: The provisioned Prometheus data source (deploy/grafana/provisioning/datasources/prometheus.yml).
DATASOURCE_UID = "hopzero-prometheus"
DASHBOARD_UID = "hopzero-training"
#: Prometheus' scrape interval in deploy/prometheus.yml; Grafana's ``$__rate_interval`` builds on it.
SCRAPE_INTERVAL_S = 10
#: The gate's default threshold (config ``evaluation.gate.threshold``), drawn as a line.
GATE_THRESHOLD = float(GateConfig().threshold_exact)

#: Ray's own metrics the dashboard reads (the rest are ours, from ``METRICS``). ``ray_actors``
#: counts actors by class name and state, as the GCS sees them: dead actors are no longer ALIVE.
RAY_METRICS = frozenset({"ray_actors"})


def _m(name: str) -> str:
    """The scraped name of one of our metrics (a typo fails here, when the module loads)."""
    return exported_name(name)


@dataclass(frozen=True)
class Query:
    """One PromQL expression of a panel and its legend (Grafana's ``{{label}}`` templates)."""

    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    """A panel: ``kind`` is ``timeseries`` or ``stat`` (the last value, large); ``width`` is out
    of Grafana's 24 grid columns; ``threshold`` is drawn as a dashed line."""

    title: str
    queries: tuple[Query, ...]
    unit: str = "short"
    description: str = ""
    kind: str = "timeseries"
    width: int = 8
    height: int = 8
    min: float | None = None
    max: float | None = None
    threshold: float | None = None


@dataclass(frozen=True)
class Row:
    """A titled row of panels (they wrap after 24 columns)."""

    title: str
    panels: tuple[Panel, ...]


_RATE = "[$__rate_interval]"

ROWS: tuple[Row, ...] = (
    Row("Strength", (
        Panel(
            "Candidate vs best (gate score)",
            (Query(f"max({_m('hopzero_gate_score')})", "gate score"),),
            unit="percentunit", min=0.0, max=1.0, threshold=GATE_THRESHOLD, width=6,
            description="Score (wins + draws/2) of the newest candidate against the best model in its "
                        "last gating match; at the dashed line or above it is promoted.",
        ),
        Panel(
            "Best vs greedy (win rate)",
            (Query(f"max({_m('hopzero_winrate_vs_greedy')})", "best vs greedy"),),
            unit="percentunit", min=0.0, max=1.0, width=6,
            description="Score of the best model against the greedy player (paper protocol), "
                        "measured after every promotion.",
        ),
        Panel(
            "Elo (greedy = 0)",
            (Query(f"max({_m('hopzero_elo')})", "best model"),),
            unit="none", width=6,
            description="Elo of the best model on the evaluator's ladder, anchored at greedy = 0.",
        ),
        Panel(
            "Promotions",
            (
                Query(f"sum({_m('hopzero_promotions')})", "promotions"),
                Query(f"max({_m('hopzero_best_version')})", "best model version"),
            ),
            kind="stat", unit="none", width=6,
            description="Candidates promoted to best since the Ray node started, and the best "
                        "model's version (the learner step it was exported at).",
        ),
    )),
    Row("Throughput", (
        Panel(
            "Self-play games per second",
            (Query(f"sum by (stage) (rate({_m('hopzero_selfplay_games')}{_RATE}))", "stage {{stage}}"),),
            description="Games finished per second over all self-play actors; stage 1 is greedy "
                        "play, stage 2 search with the best network.",
        ),
        Panel(
            "Simulations per second",
            (Query(f"sum(rate({_m('hopzero_selfplay_simulations')}{_RATE}))", "simulations"),),
            description="Tree-search simulations per second over all self-play actors.",
        ),
        Panel(
            "Self-play actors",
            (Query('sum by (State) (ray_actors{Name="SelfPlayService", '
                   'State=~"ALIVE|RESTARTING|PENDING_CREATION"})', "{{State}}"),),
            description="Self-play actors by state, as Ray's GCS reports them.",
        ),
        Panel(
            "Replay window fill",
            (Query(f"max({_m('hopzero_replay_window_positions')} / {_m('hopzero_replay_window_capacity')})",
                   "window fill"),),
            unit="percentunit", min=0.0, max=1.0, width=12,
            description="Positions in the learner's replay window over its capacity.",
        ),
        Panel(
            "Replay inserts and samples per second",
            (
                Query(f"sum(rate({_m('hopzero_replay_inserted')}{_RATE}))", "inserted"),
                Query(f"sum(rate({_m('hopzero_replay_sampled')}{_RATE}))", "sampled"),
            ),
            width=12,
            description="Positions per second entering the learner's window and drawn for training.",
        ),
    )),
    Row("Learner", (
        Panel(
            "Loss",
            (Query(f"max by (term) ({_m('hopzero_learner_loss')})", "{{term}}"),),
            description="Loss terms of the learner's last step: total, value (MSE), policy "
                        "(cross-entropy), L2.",
        ),
        Panel(
            "Learner steps per second",
            (Query(f"sum(rate({_m('hopzero_learner_steps')}{_RATE}))", "steps"),),
            description="Optimisation steps per second.",
        ),
        Panel(
            "Learning rate",
            (Query(f"max({_m('hopzero_learner_lr')})", "learning rate"),),
            unit="none",
            description="The optimiser's learning rate.",
        ),
    )),
)


# -- layout ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    """A row header (``panel`` None) or a panel at its grid position (24 columns, rows of 30 px)."""

    row: Row
    panel: Panel | None
    x: int
    y: int
    w: int
    h: int


def layout(rows: tuple[Row, ...] = ROWS) -> list[Placed]:
    """Grid positions as Grafana lays them out: a row header one unit high, then its panels left
    to right, wrapping at 24 columns. The JSON and the PNG both take their positions from here."""
    placed: list[Placed] = []
    y = 0
    for row in rows:
        placed.append(Placed(row, None, 0, y, 24, 1))
        y += 1
        x, line_h = 0, 0
        for panel in row.panels:
            if x + panel.width > 24:
                x, y, line_h = 0, y + line_h, 0
            placed.append(Placed(row, panel, x, y, panel.width, panel.height))
            x += panel.width
            line_h = max(line_h, panel.height)
        y += line_h
    return placed


# -- PromQL helpers ----------------------------------------------------------------------------

_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
                       "and", "or", "unless", "inf", "nan"})


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects: identifiers left after removing strings, label
    matchers, ranges and grouping clauses, that are neither functions (followed by ``(``) nor
    keywords."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.])[a-zA-Z_:][\w:]*", text):
        rest = text[match.end():].lstrip()
        if not rest.startswith("(") and match.group().lower() not in _KEYWORDS:
            names.add(match.group())
    return names


def known_metrics() -> frozenset[str]:
    """Every name the dashboard may query: ours as Ray exports them, and :data:`RAY_METRICS`."""
    return frozenset(exported_name(name) for name in METRICS) | RAY_METRICS


def grafana_macros(step_s: float, range_s: float, scrape_s: float = SCRAPE_INTERVAL_S) -> dict[str, str]:
    """Values of Grafana's macros for a query at ``step_s`` over ``range_s`` seconds, as Grafana
    computes them: ``$__rate_interval`` = max(``$__interval`` + scrape interval, 4 x scrape interval)."""
    interval = max(step_s, scrape_s)
    return {
        "$__rate_interval": f"{math.ceil(max(interval + scrape_s, 4 * scrape_s))}s",
        "$__interval": f"{math.ceil(interval)}s",
        "$__range": f"{math.ceil(range_s)}s",
    }


def substitute(expr: str, macros: dict[str, str]) -> str:
    """``expr`` with Grafana's macros replaced by their values."""
    for name, value in macros.items():
        expr = expr.replace(name, value)
    return expr


def all_queries(rows: tuple[Row, ...] = ROWS) -> list[tuple[Panel, Query]]:
    """Every (panel, query) pair of the dashboard, in order."""
    return [(panel, query) for row in rows for panel in row.panels for query in panel.queries]


# -- Grafana JSON (the SDK is imported here only) ----------------------------------------------


def build(rows: tuple[Row, ...] = ROWS) -> dict[str, Any]:
    """The dashboard as Grafana's JSON model, built with ``grafana_foundation_sdk``."""
    from grafana_foundation_sdk.builders import dashboard as gd
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models import dashboard as gm

    board = (
        gd.Dashboard("hopzero training")
        .uid(DASHBOARD_UID)
        .description("Strength, throughput and learner of a hopzero training run (generated by "
                     "hopzero/dashboard.py; edit that, not this file)")
        .tags(["hopzero", "ray"])
        .time("now-1h", "now")
        .refresh("10s")
        .timezone("browser")
        .tooltip(gm.DashboardCursorSync.CROSSHAIR)
        .readonly()
    )
    for panel_id, item in enumerate(layout(rows), start=1):  # explicit ids: the file is stable
        grid = gm.GridPos(h=item.h, w=item.w, x=item.x, y=item.y)
        if item.panel is None:
            board.with_row(gd.Row(item.row.title).id(panel_id).grid_pos(grid))
        else:
            board.with_panel(_panel_builder(item.panel).id(panel_id).grid_pos(grid))
    model = board.build()
    return json.loads(json.dumps(model, cls=JSONEncoder))


def _datasource() -> Any:
    from grafana_foundation_sdk.models import dashboard as gm

    return gm.DataSourceRef(type_val="prometheus", uid=DATASOURCE_UID)


def _targets(panel: Panel) -> list[Any]:
    from grafana_foundation_sdk.builders import prometheus as gp

    return [
        gp.Dataquery().expr(q.expr).legend_format(q.legend).ref_id(chr(ord("A") + i)).range()
        .datasource(_datasource())
        for i, q in enumerate(panel.queries)
    ]


def _panel_builder(panel: Panel) -> Any:
    """A timeseries or stat panel builder with the panel's title, queries, unit and bounds."""
    from grafana_foundation_sdk.builders import common as gc
    from grafana_foundation_sdk.builders import dashboard as gd
    from grafana_foundation_sdk.builders import stat as gs
    from grafana_foundation_sdk.builders import timeseries as gt
    from grafana_foundation_sdk.models import common as cm
    from grafana_foundation_sdk.models import dashboard as gm

    steps = [gm.Threshold(value=None, color="green")]
    if panel.kind == "stat":
        builder = (
            gs.Panel().graph_mode(cm.BigValueGraphMode.AREA).text_mode(cm.BigValueTextMode.VALUE_AND_NAME)
            .color_mode(cm.BigValueColorMode.VALUE)
            .reduce_options(gc.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        )
    else:
        builder = (
            gt.Panel().line_width(2).fill_opacity(10).show_points(cm.VisibilityMode.NEVER)
            .legend(gc.VizLegendOptions().show_legend(True).display_mode(cm.LegendDisplayMode.LIST)
                    .placement(cm.LegendPlacement.BOTTOM))
        )
        if panel.threshold is not None:
            steps.append(gm.Threshold(value=panel.threshold, color="red"))
            builder = builder.thresholds_style(gc.GraphThresholdsStyleConfig().mode(cm.GraphThresholdsStyleMode.DASHED))
    builder = (
        builder.title(panel.title).description(panel.description).unit(panel.unit).datasource(_datasource())
        .thresholds(gd.ThresholdsConfig().mode(gm.ThresholdsMode.ABSOLUTE).steps(steps))
        .targets(_targets(panel))
    )
    if panel.min is not None:
        builder = builder.min(panel.min)
    if panel.max is not None:
        builder = builder.max(panel.max)
    return builder


def dashboard_json(rows: tuple[Row, ...] = ROWS) -> str:
    """The committed file's exact text: :func:`build`, two-space indented, one final newline."""
    return json.dumps(build(rows), indent=2) + "\n"


# -- PNG: the same queries, drawn with matplotlib ----------------------------------------------

Series = tuple[dict[str, str], list[float], list[float]]  # labels, unix times, values


def query_range(url: str, expr: str, start: float, end: float, step: float, timeout: float = 30.0) -> list[Series]:
    """Prometheus' ``/api/v1/query_range``: one (labels, times, values) per series."""
    params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"{url.rstrip('/')}/api/v1/query_range?{params}", timeout=timeout) as response:
        body = json.load(response)
    if body.get("status") != "success":
        raise RuntimeError(f"Prometheus rejected {expr!r}: {body.get('error')}")
    return [
        (item["metric"], [float(t) for t, _ in item["values"]], [float(v) for _, v in item["values"]])
        for item in body["data"]["result"]
    ]


def legend_text(template: str, labels: dict[str, str]) -> str:
    """Grafana's legend: ``{{label}}`` replaced by the series' label value."""
    if not template:
        return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "value"
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)


_THEME = {"figure": "#111217", "panel": "#181b1f", "text": "#ccccdc", "grid": "#2c3235", "row": "#d8d9da"}
_COLORS = ("#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9")


PanelData = list[tuple[Query, list[Series]]]  # each query of a panel with its series


def fetch(
    prometheus_url: str, start: float, end: float, step: float, *, scrape_s: float = SCRAPE_INTERVAL_S,
    rows: tuple[Row, ...] = ROWS,
) -> dict[str, PanelData]:
    """Every panel's queries over ``[start, end]`` from Prometheus, by panel title, with Grafana's
    macros as Grafana would set them for this range and step."""
    macros = grafana_macros(step, end - start, scrape_s)
    return {
        panel.title: [(q, query_range(prometheus_url, substitute(q.expr, macros), start, end, step))
                      for q in panel.queries]
        for row in rows for panel in row.panels
    }


def draw(data: dict[str, PanelData], out: str | Path, start: float, end: float, *,
         rows: tuple[Row, ...] = ROWS) -> Path:
    """Draw the panels' ``data`` (as :func:`fetch` returns it) into the PNG ``out``, in the
    dashboard's grid, with its titles and legends; returns the path."""
    import matplotlib

    matplotlib.use("Agg")  # no display: a file only
    import matplotlib.pyplot as plt

    placed = layout(rows)
    units_high = max(p.y + p.h for p in placed) + 2  # one grid unit above for the title, one below
    fig = plt.figure(figsize=(18, units_high * 0.3), facecolor=_THEME["figure"])
    fig.text(0.008, 1 - 0.6 / units_high, "hopzero training", color=_THEME["row"], fontsize=15, weight="bold",
             va="center")
    for item in placed:
        if item.panel is None:
            fig.text(0.008, 1 - (item.y + 1.6) / units_high, item.row.title, color=_THEME["row"], fontsize=12,
                     weight="bold", va="center")
        else:
            _draw_panel(fig.add_axes(_box(item, units_high)), item.panel, data.get(item.panel.title, []), start, end)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80, facecolor=_THEME["figure"])
    plt.close(fig)
    return out


def render(
    prometheus_url: str,
    out: str | Path,
    *,
    start: float | None = None,
    end: float | None = None,
    step: float | None = None,
    scrape_s: float = SCRAPE_INTERVAL_S,
    rows: tuple[Row, ...] = ROWS,
) -> Path:
    """:func:`fetch` then :func:`draw`: the dashboard between ``start`` and ``end`` (default: the
    last hour) as a PNG, about 300 points per curve unless ``step`` says otherwise."""
    end = time.time() if end is None else end
    start = end - 3600 if start is None else start
    step = step or max(scrape_s, (end - start) / 300)
    return draw(fetch(prometheus_url, start, end, step, scrape_s=scrape_s, rows=rows), out, start, end, rows=rows)


def _box(item: Placed, units_high: int) -> tuple[float, float, float, float]:
    """Figure coordinates (left, bottom, width, height) of a panel's plot area: its grid cell
    (below the title unit) less room for the panel title above, the tick labels on the left
    and the axis label and legend below."""
    title, legend, gap = 1.0, 2.1, 0.012  # grid units; figure fraction between panels
    left = item.x / 24 + 0.03 + gap
    width = item.w / 24 - 0.03 - 2 * gap
    top = 1 - (1 + item.y + title) / units_high
    bottom = 1 - (1 + item.y + item.h - legend) / units_high
    return left, bottom, width, top - bottom


def _draw_panel(ax: Any, panel: Panel, data: list[tuple[Query, list[Series]]], start: float, end: float) -> None:
    """One panel: lines over time (minutes before ``end``), or for a stat the last values large."""
    ax.set_facecolor(_THEME["panel"])
    for spine in ax.spines.values():
        spine.set_color(_THEME["grid"])
    ax.tick_params(colors=_THEME["text"], labelsize=8)
    ax.set_title(panel.title, color=_THEME["text"], fontsize=10, loc="left", pad=6)
    if panel.kind == "stat":
        _draw_stat(ax, panel, data)
        return
    color = iter(_COLORS * 4)
    curves = 0
    for query, series in data:
        for labels, times, values in series:
            minutes = [(t - end) / 60 for t in times]
            ax.plot(minutes, values, color=next(color), linewidth=1.6, label=legend_text(query.legend, labels))
            curves += 1
    if panel.threshold is not None:
        ax.axhline(panel.threshold, color="#f2495c", linestyle="--", linewidth=1)
    if panel.min is not None and panel.max is not None:  # a little room: a line at the bound stays visible
        margin = 0.03 * (panel.max - panel.min)
        ax.set_ylim(panel.min - margin, panel.max + margin)
    if panel.unit == "percentunit":
        ax.yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    ax.set_xlim((start - end) / 60, 0)
    ax.set_xlabel("minutes before the end", color=_THEME["text"], fontsize=7)
    ax.grid(color=_THEME["grid"], linewidth=0.6)
    if curves:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4, fontsize=7, frameon=False,
                  labelcolor=_THEME["text"])
    else:
        ax.text(0.5, 0.5, "No data", transform=ax.transAxes, ha="center", va="center", color=_THEME["text"])


def _draw_stat(ax: Any, panel: Panel, data: list[tuple[Query, list[Series]]]) -> None:
    """A stat panel: each query's last value and its legend, side by side."""
    ax.set_xticks([])
    ax.set_yticks([])
    cells = [(legend_text(q.legend, labels), values[-1]) for q, series in data for labels, _, values in series
             if values]
    if not cells:
        ax.text(0.5, 0.5, "No data", transform=ax.transAxes, ha="center", va="center", color=_THEME["text"])
        return
    for i, (name, value) in enumerate(cells):
        x = (i + 0.5) / len(cells)
        ax.text(x, 0.55, f"{value:,.0f}", transform=ax.transAxes, ha="center", va="center", fontsize=30,
                color=_COLORS[0], weight="bold")
        ax.text(x, 0.2, name, transform=ax.transAxes, ha="center", va="center", fontsize=9, color=_THEME["text"])
