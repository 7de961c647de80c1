"""The Grafana dashboard (ops/grafana/dashboards/ksched.json) is a valid dashboard on the
provisioned Prometheus, and graphs exactly what the services export
(ops/grafana/exported-metrics.txt, which the end-to-end test checks against /metrics)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
GRAFANA = ROOT / "ops" / "grafana"
DASHBOARD: dict[str, Any] = json.loads((GRAFANA / "dashboards" / "ksched.json").read_text())
EXPORTED = GRAFANA / "exported-metrics.txt"
DATASOURCES = GRAFANA / "provisioning" / "datasources" / "prometheus.yaml"
DASHBOARD_PROVIDERS = GRAFANA / "provisioning" / "dashboards" / "ksched.yaml"

HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
NOT_NAMES = re.compile(
    r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`"""  # strings
    r"|\{[^}]*\}|\[[^\]]*\]"  # label matchers, ranges and subqueries
    r"|\$\{[^}]*\}|\$\w+"  # Grafana variables
    r"|(?<![\w:])\d[\w.]*"  # numbers and durations
)
IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "atan2"}
AGGREGATIONS = {
    *("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values"),
    *("bottomk", "topk", "quantile", "limitk", "limit_ratio"),
}
FUNCTIONS = {
    *("abs", "absent", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "delta"),
    *("deriv", "exp", "floor", "histogram_quantile", "histogram_fraction", "idelta"),
    *("increase", "irate", "label_join", "label_replace", "ln", "log2", "log10"),
    *("predict_linear", "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc"),
    *("sqrt", "time", "timestamp", "vector"),
    *(f"{f}_over_time" for f in ("avg", "min", "max", "sum", "count", "quantile", "last")),
    *("absent_over_time", "present_over_time", "stddev_over_time", "stdvar_over_time"),
}
# Grafana's interval variables, for promtool, which knows none of them.
GRAFANA_INTERVALS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h"}


def exported_metrics() -> list[str]:
    return [line.strip() for line in EXPORTED.read_text().splitlines() if line.strip()]


def provisioned_datasource() -> dict[str, Any]:
    config = yaml.safe_load(DATASOURCES.read_text())
    (prometheus,) = [d for d in config["datasources"] if d["type"] == "prometheus"]
    return dict(prometheus)


def all_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside collapsed rows included."""
    for panel in panels:
        yield panel
        yield from all_panels(panel.get("panels", []))


def graphs() -> list[dict[str, Any]]:
    return [p for p in all_panels(DASHBOARD["panels"]) if p["type"] != "row"]


def expressions() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every query of the dashboard."""
    return [(p["title"], t["expr"]) for p in graphs() for t in p["targets"]]


def names_in(expr: str) -> tuple[set[str], set[str]]:
    """The metric names and the functions (aggregations included) a PromQL expression
    names. Label names (matchers, grouping), strings, ranges, numbers and Grafana's
    variables are not names."""
    text = NOT_NAMES.sub(" ", GROUPING.sub(" ", expr))
    metrics: set[str] = set()
    functions: set[str] = set()
    for match in IDENTIFIER.finditer(text):
        name = match.group()
        if text[match.end() :].lstrip().startswith("("):
            functions.add(name)
        elif name not in KEYWORDS:
            metrics.add(name)
    return metrics, functions


def family(name: str, exported: set[str]) -> str:
    """The exported name a series belongs to: a histogram's _bucket/_sum/_count series
    belong to its base name."""
    if name in exported:
        return name
    for suffix in HISTOGRAM_SERIES:
        if name.endswith(suffix) and name.removesuffix(suffix) in exported:
            return name.removesuffix(suffix)
    return name


def test_names_in_reads_promql() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, plugin) (rate(a_seconds_bucket{job="x"}'
        "[$__rate_interval]))) / on (job) group_left(node) b_total offset 5m + 1e3"
    )
    assert names_in(expr) == (
        {"a_seconds_bucket", "b_total"},
        {"histogram_quantile", "sum", "rate"},
    )
    assert names_in("sum(rate(c_total[5m])) by (result) > bool 0") == ({"c_total"}, {"sum", "rate"})


def test_the_exported_metrics_are_one_valid_name_a_line() -> None:
    names = exported_metrics()
    assert names, "ops/grafana/exported-metrics.txt lists no metric"
    assert len(names) == len(set(names)), "a name is listed twice"
    for name in names:
        assert re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", name), name
        assert not name.endswith(HISTOGRAM_SERIES), f"{name}: list a histogram's base name"


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    assert isinstance(DASHBOARD["schemaVersion"], int) and DASHBOARD["schemaVersion"] >= 36
    assert DASHBOARD["uid"] and DASHBOARD["title"]
    assert DASHBOARD["editable"] is False, "provisioned: changes belong in the JSON file"
    panels = list(all_panels(DASHBOARD["panels"]))
    assert panels, "the dashboard has no panel"
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for panel in panels:
        pos = panel["gridPos"]
        assert all(isinstance(pos[k], int) for k in ("h", "w", "x", "y")), panel["title"]
        assert pos["w"] > 0 and pos["h"] > 0 and pos["x"] >= 0 and pos["y"] >= 0
        assert pos["x"] + pos["w"] <= 24, f"{panel['title']} is wider than the grid"
        assert panel["title"]


def test_no_two_panels_overlap() -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in all_panels(DASHBOARD["panels"]):
        pos = panel["gridPos"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]
    assert cells, "the dashboard has no panel"


def test_every_panel_queries_the_provisioned_prometheus() -> None:
    datasource = provisioned_datasource()
    uid = datasource["uid"]
    assert DASHBOARD["templating"]["list"] == [], "no datasource variable: the uid is fixed"
    assert graphs(), "the dashboard has no graph"
    for panel in graphs():
        assert panel["datasource"] == {"type": "prometheus", "uid": uid}, panel["title"]
        assert panel["targets"], f"{panel['title']} has no query"
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]
        for target in panel["targets"]:
            assert target.get("datasource", panel["datasource"]) == panel["datasource"]
            assert target["expr"].strip(), panel["title"]


def test_grafana_loads_the_dashboard_from_its_directory() -> None:
    (provider,) = yaml.safe_load(DASHBOARD_PROVIDERS.read_text())["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"], "the path compose.yaml mounts ops/grafana/dashboards at"
    assert provisioned_datasource()["url"] == "http://prometheus:9090"


@pytest.mark.parametrize(("title", "expr"), expressions())
def test_queries_name_only_exported_metrics(title: str, expr: str) -> None:
    exported = set(exported_metrics())
    metrics, functions = names_in(expr)
    assert metrics, f"{title}: {expr} names no metric"
    unknown = {m for m in metrics if family(m, exported) not in exported}
    assert not unknown, f"{title}: not in exported-metrics.txt: {sorted(unknown)}"
    assert functions <= FUNCTIONS | AGGREGATIONS, f"{title}: {sorted(functions - FUNCTIONS)}"


@pytest.mark.parametrize(("title", "expr"), expressions())
def test_queries_use_counters_and_histograms_as_such(title: str, expr: str) -> None:
    """rate() and increase() only on counters and histogram series; counters only under
    them; a quantile only from buckets summed by le."""
    for match in re.finditer(r"\b(?:rate|irate|increase)\(\s*([A-Za-z_:][\w:]*)", expr):
        assert match.group(1).endswith(("_total", *HISTOGRAM_SERIES)), f"{title}: {expr}"
    for match in re.finditer(r"[A-Za-z_:][\w:]*_total\b", expr):
        before = expr[: match.start()].rstrip()
        assert re.search(r"\b(?:rate|irate|increase)\($", before), f"{title}: {expr}"
    if "histogram_quantile" in expr:
        assert "_bucket" in expr and re.search(r"\bby \([^)]*\ble\b", expr), f"{title}: {expr}"


def test_every_exported_metric_is_graphed() -> None:
    exported = set(exported_metrics())
    graphed = {family(m, exported) for _, expr in expressions() for m in names_in(expr)[0]}
    assert not exported - graphed, f"no panel shows {sorted(exported - graphed)}"


@pytest.mark.parametrize(
    "metric",
    [
        "scheduler_schedule_attempts_total",
        "scheduler_scheduling_attempt_duration_seconds",
        "scheduler_pod_scheduling_sli_duration_seconds",
        "scheduler_pending_pods",
        "scheduler_unschedulable_pods",
        "scheduler_preemption_attempts_total",
        "scheduler_preemption_victims",
        "scheduler_permit_wait_duration_seconds",
        "ksched_broker_connected",
        "ksched_redis_connected",
        "ksched_publish_confirm_duration_seconds",
        "ksched_redis_call_duration_seconds",
        "ksched_projection_lag",
        "descheduler_pods_evicted_total",
    ],
)
def test_the_operators_panels_are_there(metric: str) -> None:
    """What an operator looks at first: throughput, latencies, the queue, preemption,
    Permit, the broker and Redis, projection lag and evictions."""
    assert metric in exported_metrics()
    assert any(metric in expr for _, expr in expressions()), f"no panel shows {metric}"


def test_promtool_parses_every_query(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian's prometheus package; .ci/run installs it)")
    rules = []
    for number, (_, expr) in enumerate(expressions()):
        for variable, value in GRAFANA_INTERVALS.items():
            expr = expr.replace(variable, value)
        rules.append({"record": f"ksched_dashboard_query_{number}", "expr": expr})
    assert rules, "the dashboard has no query"
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
