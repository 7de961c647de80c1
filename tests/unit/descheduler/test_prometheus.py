"""Prometheus as LowNodeUtilization's metrics source: the query API's answer read as
upstream's prometheus usage client reads it (the ``instance`` label, values in [0, 1],
its errors), the token, the validation, the plugin on the answers, and the whole
``ksched deschedule`` against a real Prometheus scraping a tiny exporter."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.main import main
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.settings import DeschedulerSettings
from services.common.store.memory import MemoryStore
from services.descheduler.api import PrometheusUsage
from services.descheduler.plugins.nodeutilization import (
    EvictionLimits,
    LowNodeUtilizationArgs,
    MetricsUtilization,
    Prometheus,
    new_low,
)
from services.descheduler.policy import load_policy
from services.descheduler.prometheus import (
    PrometheusClient,
    PrometheusError,
    node_usage,
    read_token,
)
from services.descheduler.registry import in_tree_registry
from services.descheduler.service import DeschedulerService
from services.framework.api.registry import ConfigError
from tests.unit.descheduler import prometheus_support as support
from tests.unit.descheduler.support import build_node, build_pod, evicted_names, run_plugin

QUERY = "node_utilization"


def vector(*samples: tuple[dict[str, str], str]) -> dict[str, Any]:
    result = [{"metric": labels, "value": [1700000000.0, value]} for labels, value in samples]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(vector(({"instance": "n1"}, "0.9"), ({"instance": "n2", "job": "x"}, "0")),
                     {"n1": 90, "n2": 0}, id="percent"),
        pytest.param(vector(({"instance": "n1"}, "0.29"), ({"instance": "n2"}, "1")),
                     {"n1": 28, "n2": 100}, id="truncated-as-int64"),
        pytest.param(vector(), {}, id="empty"),
        pytest.param(vector(({"node": "n1"}, "0.5")),
                     "the collected metrics sample is missing 'instance' key", id="no-instance"),
        pytest.param(vector(({"instance": "n1"}, "1.5")),
                     'the collected metrics sample for "n1" has value 1.5 outside of <0; 1> '
                     "interval", id="above-1"),
        pytest.param(vector(({"instance": "n1"}, "-2")),
                     'the collected metrics sample for "n1" has value -2 outside of <0; 1> '
                     "interval", id="below-0"),
        pytest.param({"status": "success", "data": {"resultType": "scalar", "result": [1, "1"]}},
                     'expected query results to be of type "vector", got "scalar" instead',
                     id="not-a-vector"),
        pytest.param({"status": "error", "errorType": "bad_data", "error": "parse error"},
                     "unable to capture prometheus metrics: bad_data: parse error", id="error"),
        pytest.param(vector(({"instance": "n1"}, "many")),
                     "unable to capture prometheus metrics: could not convert string to float: "
                     "'many'", id="not-a-number"),
        pytest.param({"status": "success", "data": {"resultType": "vector", "result": [{}]}},
                     "unable to capture prometheus metrics: Object missing required field "
                     "`value` - at `$[0]`", id="no-value"),
    ],
)  # fmt: skip
def test_an_answer_becomes_each_nodes_percent_or_upstreams_error(
    answer: dict[str, Any], expected: dict[str, int] | str
) -> None:
    if isinstance(expected, str):
        with pytest.raises(PrometheusError) as caught:
            node_usage(json.dumps(answer).encode())
        assert str(caught.value) == expected
    else:
        assert node_usage(json.dumps(answer).encode()) == expected


@pytest.mark.parametrize(
    ("status", "body", "token", "expected"),
    [
        pytest.param(200, vector(({"instance": "n1"}, "0.5")), "s3cret", {"n1": 50}, id="token"),
        pytest.param(200, vector(({"instance": "n1"}, "0.5")), None, {"n1": 50}, id="no-token"),
        pytest.param(400, {"status": "error", "errorType": "bad_data", "error": "1:5: parse"},
                     None, "unable to capture prometheus metrics: bad_data: 1:5: parse",
                     id="bad-query"),
        pytest.param(503, b"down", None, "unable to capture prometheus metrics: server returned "
                     "HTTP status 503 Service Unavailable", id="not-json"),
    ],
)  # fmt: skip
def test_the_client_asks_the_instant_query_api(
    status: int, body: Any, token: str | None, expected: dict[str, int] | str
) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    served = support.Served(status=status, body=raw)
    with support.serving(served) as url:
        answers = PrometheusClient(url + "/", token).collect([QUERY, QUERY])
    want = (
        PrometheusUsage(error=expected) if isinstance(expected, str) else PrometheusUsage(expected)
    )
    assert answers == {QUERY: want}
    [(path, headers)] = served.requests
    assert path == "/api/v1/query?query=node_utilization"
    assert headers.get("Authorization") == (f"Bearer {token}" if token else None)


def test_an_unreachable_server_is_the_querys_error() -> None:
    port = support.free_port()
    answers = PrometheusClient(f"http://127.0.0.1:{port}", timeout=5).collect([QUERY])
    assert answers[QUERY].error.startswith("unable to capture prometheus metrics: ")
    assert "refused" in answers[QUERY].error.lower()


@pytest.mark.parametrize(
    ("secret", "content", "expected"),
    [
        pytest.param(("kube-system", "prom"), "tok\n", ("tok", ""), id="secret-from-file"),
        pytest.param(None, "tok", ("tok", ""), id="file-without-secret"),
        pytest.param(("kube-system", "prom"), None,
                     (None, "unable to get kube-system/prom secret"), id="secret-no-file"),
        pytest.param(("kube-system", "prom"), "",
                     (None, 'prometheus authentication token secret missing '
                            '"prometheusAuthToken" data or empty'), id="secret-empty"),
        pytest.param(None, None, ("sa-token", ""), id="service-account"),
    ],
)  # fmt: skip
def test_the_token(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    secret: tuple[str, str] | None,
    content: str | None,
    expected: tuple[str | None, str],
) -> None:
    account = tmp_path / "serviceaccount-token"
    account.write_text("sa-token\n")
    monkeypatch.setattr("services.descheduler.prometheus.SERVICE_ACCOUNT_TOKEN", account)
    token_file = None
    if content is not None:
        token_file = tmp_path / "token"
        token_file.write_text(content)
    assert read_token(secret, token_file) == expected


def policy(thresholds: dict[str, float], **prometheus: Any) -> dict[str, Any]:
    args = {
        "thresholds": thresholds,
        "targetThresholds": {k: v + 30 for k, v in thresholds.items()},
        "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": QUERY}},
    }
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "metricsProviders": [{"source": "Prometheus", "prometheus": prometheus}],
        "profiles": [{
            "name": "default",
            "pluginConfig": [{"name": "LowNodeUtilization", "args": args}],
            "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}},
        }],
    }  # fmt: skip


ARGS = "profiles[0].pluginConfig[0].args"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(policy({"cpu": 20}, url="http://p"),
                     f"{ARGS}.thresholds: thresholds are expected to specify a single instance "
                     'of "MetricResource" resource, got [cpu] instead', id="cpu"),
        pytest.param(policy({"MetricResource": 20, "cpu": 20}, url="http://p"),
                     f"{ARGS}.thresholds: thresholds are expected to specify a single instance "
                     'of "MetricResource" resource, got [MetricResource cpu] instead',
                     id="two-resources"),
    ],
)  # fmt: skip
def test_refused_with_upstreams_words(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_policy(raw, in_tree_registry())
    assert str(caught.value) == message


def test_the_policy_names_each_enabled_query_once() -> None:
    loaded = load_policy(policy({"MetricResource": 20}, url="http://p"), in_tree_registry())
    assert loaded.prometheus is not None and loaded.prometheus.url == "http://p"
    assert loaded.prometheus_queries() == [QUERY]


NODES = [build_node(n, 4000, 8_000_000_000, 110) for n in ("n1", "n2", "n3")]
PODS = [build_pod(f"p{i}", 100, 0, "n1", spec_priority=i) for i in range(3, 0, -1)]


def low(node_limit: int | None = None) -> LowNodeUtilizationArgs:
    return LowNodeUtilizationArgs(
        thresholds={"MetricResource": 30.0},
        target_thresholds={"MetricResource": 50.0},
        metrics_utilization=MetricsUtilization(
            source="Prometheus", prometheus=Prometheus(query=QUERY)
        ),
        eviction_limits=EvictionLimits(node=node_limit) if node_limit is not None else None,
    )


@pytest.mark.parametrize(
    ("answers", "node_limit", "evicted", "error"),
    [
        pytest.param({QUERY: PrometheusUsage({"n1": 90, "n2": 10, "n3": 20})}, None, ["p1"], None,
                     id="one-pod-per-node"),
        pytest.param({QUERY: PrometheusUsage({"n1": 90, "n2": 10, "n3": 20})}, 2, ["p1", "p2"],
                     None, id="up-to-the-node-limit"),
        pytest.param({QUERY: PrometheusUsage({"n1": 40, "n2": 10, "n3": 20})}, None, [], None,
                     id="none-over"),
        pytest.param({QUERY: PrometheusUsage({"n1": 90, "n2": 10})}, None, [],
                     "error getting node usage: unable to find metric entry for n3",
                     id="node-missing"),
        pytest.param({QUERY: PrometheusUsage(error="the collected metrics sample is missing "
                                                   "'instance' key")}, None, [],
                     "error getting node usage: the collected metrics sample is missing "
                     "'instance' key", id="query-error"),
        pytest.param(None, None, [],
                     "error initializing usage client: prometheus client not initialized",
                     id="no-client"),
    ],
)  # fmt: skip
def test_low_node_utilization_on_the_answers(
    answers: dict[str, PrometheusUsage] | None,
    node_limit: int | None,
    evicted: list[str],
    error: str | None,
) -> None:
    """Prometheus gives no pod usage: as upstream, each overutilized node gives up its
    lowest-priority pod, or up to ``evictionLimits.node`` pods."""
    seen: list[str | None] = []
    evictor = run_plugin(
        new_low, low(node_limit), NODES, PODS, balance=True, errors=seen, prometheus=answers
    )
    assert evicted_names(evictor) == evicted
    assert seen == [error]


@pytest.mark.slow
def test_deschedule_with_a_real_prometheus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real Prometheus scrapes an exporter serving one gauge per node; ``ksched
    deschedule`` classifies the nodes by the query's answer and evicts one pod of the
    overutilized node (the lowest priority)."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("Debian's prometheus is not installed (.ci/run installs it)")
    exporter = support.Served(
        content_type="text/plain; version=0.0.4",
        body=support.gauges(QUERY, {"n1": 0.9, "n2": 0.1, "n3": 0.2}),
    )
    cluster = tmp_path / "cluster.yaml"
    documents = [
        {"kind": "Node", "metadata": {"name": n},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
        for n in ("n1", "n2", "n3")
    ] + [
        {"kind": "Pod",
         "metadata": {"name": f"p{i}", "namespace": "demo", "ownerReferences": [
             {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs"}]},
         "spec": {"nodeName": "n1", "priority": i, "containers": [{"name": "c", "image": "x"}]}}
        for i in (3, 1, 2)
    ]  # fmt: skip
    cluster.write_text("\n---\n".join(json.dumps(d) for d in documents))
    with (
        support.serving(exporter) as target,
        support.prometheus(binary, tmp_path, target.removeprefix("http://")) as url,
    ):
        support.poll(lambda: support.samples(url, QUERY) == 3, within=90)
        (tmp_path / "policy.yaml").write_text(json.dumps(policy({"MetricResource": 20}, url=url)))
        argv = ["deschedule", str(cluster), "--policy", str(tmp_path / "policy.yaml")]
        assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        "default/LowNodeUtilization: thresholds MetricResource 20%/50%",
        "NODE  CLASS          METRICRESOURCE",
        "n1    overutilized   90%",
        "n2    underutilized  10%",
        "n3    underutilized  20%",
        "",
        "EVICTED  NODE  PROFILE  PLUGIN",
        "demo/p1  n1    default  LowNodeUtilization",
        "",
        "1 evicted on 3 nodes",
    ]


@pytest.mark.parametrize(
    ("auth", "answers", "warning"),
    [
        pytest.param({}, {QUERY: PrometheusUsage({"n1": 90})}, "", id="asked"),
        pytest.param({"authToken": {"secretReference": {"namespace": "ns", "name": "s"}}}, None,
                     "prometheus client not initialized: unable to get ns/s secret",
                     id="secret-unreadable"),
    ],
)  # fmt: skip
async def test_the_service_asks_prometheus_before_each_cycle(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    auth: dict[str, Any],
    answers: dict[str, PrometheusUsage] | None,
    warning: str,
) -> None:
    monkeypatch.setattr(
        "services.descheduler.prometheus.SERVICE_ACCOUNT_TOKEN", tmp_path / "no-token"
    )
    served = support.Served(body=json.dumps(vector(({"instance": "n1"}, "0.9"))).encode())
    with support.serving(served) as url:
        loaded = load_policy(policy({"MetricResource": 20}, url=url, **auth), in_tree_registry())
        service = DeschedulerService(
            MemoryBus(), MemoryStore(), FakeClock(), loaded, in_tree_registry(),
            DeschedulerSettings(),
        )  # fmt: skip
        cluster = await service.read_cluster()
    assert cluster.prometheus == answers
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == (
        [warning] if warning else []
    )


def test_the_readme_policy_loads() -> None:
    """The README's Prometheus policy is a valid policy naming its query once."""
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    section = readme[readme.index("**Prometheus.**") :]
    start = section.index("```yaml\n") + len("```yaml\n")
    block = section[start : section.index("\n```", start)]
    loaded = load_policy(yaml.safe_load(block), in_tree_registry())
    assert loaded.prometheus_queries() == ["instance:node_cpu:rate:sum"]
