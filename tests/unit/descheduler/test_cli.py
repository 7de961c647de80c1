"""``ksched deschedule``: one cycle over a cluster file, json and table output, where
the evicted pods would land, and wrong input as one line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.cli.main import main
from services.common.k8s.labels import SelectorError, parse

CLUSTER = """\
kind: Node
metadata: {name: n1}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}
---
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}
---
kind: Pod
metadata:
  name: web-1
  namespace: demo
  uid: web-1
  creationTimestamp: "2024-01-01T00:00:00Z"
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: rs-web}]
spec:
  nodeName: n1
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m}}}]
status: {phase: Running}
---
kind: Pod
metadata:
  name: old
  namespace: demo
  uid: old
  creationTimestamp: "2024-01-01T00:00:00Z"
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: old, uid: rs-old}]
spec:
  nodeName: n2
  tolerations: [{key: dedicated, operator: Exists}]
  containers: [{name: c, image: nginx}]
status: {phase: Running}
"""
POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 86400}
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints, PodLifeTime]
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "policy.yaml").write_text(POLICY)
    return str(tmp_path / "cluster.yaml"), str(tmp_path / "policy.yaml")


def lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_json_lines_in_eviction_order_then_placements(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, policy = files
    argv = ["deschedule", cluster, "--policy", policy, "--now", "2024-01-03T00:00:00Z"]
    assert main([*argv, "-o", "json", "--placement"]) == 0
    assert lines(capsys) == [
        {
            "kind": "Eviction",
            "pod": "demo/web-1",
            "node": "n1",
            "profile": "default",
            "plugin": "RemovePodsViolatingNodeTaints",
            "reason": "RemovePodsViolatingNodeTaints",
        },
        {
            "kind": "Eviction",
            "pod": "demo/old",
            "node": "n2",
            "profile": "default",
            "plugin": "PodLifeTime",
            "reason": "PodLifeTime",
        },
        {"kind": "Placement", "pod": "demo/web-1", "node": "n2"},
        {"kind": "Placement", "pod": "demo/old", "node": "n1"},
    ]


def test_the_clock_decides_the_age(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, policy = files
    argv = ["deschedule", cluster, "--policy", policy, "--now", "2024-01-01T12:00:00Z"]
    assert main([*argv, "-o", "json"]) == 0
    assert [line["pod"] for line in lines(capsys)] == ["demo/web-1"]


def test_table(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, policy = files
    assert main(["deschedule", cluster, "--policy", policy, "--now", "2024-01-03T00:00:00Z"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "EVICTED     NODE  PROFILE  PLUGIN",
        "demo/web-1  n1    default  RemovePodsViolatingNodeTaints",
        "demo/old    n2    default  PodLifeTime",
        "",
        "2 evicted on 2 nodes",
    ]


@pytest.mark.parametrize(
    ("policy", "now", "message"),
    [
        (
            POLICY.replace("maxPodLifeTimeSeconds", "maxPodLifetimeSeconds"),
            "2024-01-03T00:00:00Z",
            "policy.yaml:7: profiles[0].pluginConfig[0].args.maxPodLifetimeSeconds: unknown field",
        ),
        (POLICY, "yesterday", '--now: "yesterday" is not an RFC 3339 time (2024-05-01T12:00:00Z)'),
    ],
)
def test_wrong_input_is_one_line_and_exit_2(
    files: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    policy: str,
    now: str,
    message: str,
) -> None:
    cluster, path = files
    Path(path).write_text(policy)
    assert main(["deschedule", cluster, "--policy", path, "--now", now]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(message), err


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ("", {}, True),
        ("zone=a", {"zone": "a"}, True),
        ("zone=a", {"zone": "b"}, False),
        ("zone!=a", {}, True),
        ("zone in (a, b),tier", {"zone": "b", "tier": "x"}, True),
        ("zone notin (a)", {"zone": "a"}, False),
        ("!gpu", {"gpu": "1"}, False),
    ],
)
def test_node_selector_strings(selector: str, labels: dict[str, str], selected: bool) -> None:
    assert parse(selector).matches(labels) is selected


def test_a_broken_selector_is_refused() -> None:
    with pytest.raises(SelectorError):
        parse("zone in a")


def test_the_table_shows_how_each_node_was_classified(capsys: pytest.CaptureFixture[str]) -> None:
    here = Path(__file__).parent
    cluster, policy = here / "lnu-cluster.yaml", here / "lnu-policy.yaml"
    assert main(["deschedule", str(cluster), "--policy", str(policy)]) == 0
    assert capsys.readouterr().out.splitlines()[:8] == [
        "balance/LowNodeUtilization: thresholds cpu 20%/50%, pods 20%/50%",
        "NODE  CLASS          CPU  PODS",
        "busy  overutilized   88%  70%",
        "idle  underutilized  0%   0%",
        "",
        "EVICTED  NODE  PROFILE  PLUGIN",
        "demo/w0  busy  balance  LowNodeUtilization",
        "demo/w1  busy  balance  LowNodeUtilization",
    ]


METRICS_CLUSTER = """\
kind: Node
metadata: {name: busy}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
---
kind: Node
metadata: {name: idle}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
---
apiVersion: metrics.k8s.io/v1beta1
kind: NodeMetrics
metadata: {name: busy}
usage: {cpu: 3500m, memory: 1Gi}
---
apiVersion: metrics.k8s.io/v1beta1
kind: NodeMetrics
metadata: {name: idle}
usage: {cpu: 100m, memory: 1Gi}
""" + "".join(
    f"""---
kind: Pod
metadata: {{name: {name}, namespace: demo, uid: {name},
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: w, uid: rs-w}}]}}
spec: {{nodeName: busy, containers: [{{name: c, image: nginx}}]}}
status: {{phase: Running}}
---
apiVersion: metrics.k8s.io/v1beta1
kind: PodMetrics
metadata: {{name: {name}, namespace: demo}}
containers: [{{name: c, usage: {{cpu: 1500m, memory: 100Mi}}}}]
"""
    for name in ("a", "b")
)
METRICS_POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
metricsCollector: {enabled: true}
profiles:
- name: actual
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 20}
      targetThresholds: {cpu: 50}
      metricsUtilization: {metricsServer: true}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
"""


@pytest.mark.parametrize(
    ("policy", "evicted", "errors"),
    [
        (METRICS_POLICY, ["demo/a"], []),
        (
            METRICS_POLICY.replace("metricsCollector: {enabled: true}\n", ""),
            [],
            [
                'profile "actual": plugin "LowNodeUtilization" finished with error: error '
                "initializing usage client: metrics client not initialized"
            ],
        ),
    ],
    ids=["collector", "no collector"],
)
def test_metrics_utilization_reads_node_and_pod_metrics(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    policy: str,
    evicted: list[str],
    errors: list[str],
) -> None:
    """Requests say both nodes are idle; metrics-server says busy runs at 88%: one
    pod of 1500m moves busy to 50%, the target, and the plugin stops."""
    (tmp_path / "c.yaml").write_text(METRICS_CLUSTER)
    (tmp_path / "p.yaml").write_text(policy)
    argv = ["deschedule", str(tmp_path / "c.yaml"), "--policy", str(tmp_path / "p.yaml")]
    assert main([*argv, "-o", "json"]) == 0
    out = capsys.readouterr()
    assert [line["pod"] for line in map(json.loads, out.out.splitlines())] == evicted
    assert [e for e in errors if e not in out.err] == []


SCHEDULER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: lenient
  plugins:
    filter:
      disabled: [{name: TaintToleration}]
"""
FIT_POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
    args: {nodeFit: true%s}
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 86400}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
"""


NO_FIT = (
    "pod does not fit on any other node because of nodeSelector(s), Taint(s), or nodes "
    "marked as unschedulable"
)


@pytest.mark.parametrize(
    ("extra", "evicted", "stayed"),
    [("", ["demo/web-1"], {"demo/old": [NO_FIT]}),
     (", nodeFitProfile: default-scheduler", ["demo/web-1"], {"demo/old": [NO_FIT]}),
     (", nodeFitProfile: lenient", ["demo/web-1", "demo/old"], {})],
)  # fmt: skip
def test_node_fit_asks_the_named_scheduler_profile(
    files: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: str,
    evicted: list[str],
    stayed: dict[str, list[str]],
) -> None:
    """Both pods are old enough. web-1 (on the tainted n1) fits n2 under every
    profile; ``old``, here without its toleration, fits the tainted n1 only under the
    profile that runs no TaintToleration filter."""
    cluster, policy = files
    Path(cluster).write_text(
        CLUSTER.replace("  tolerations: [{key: dedicated, operator: Exists}]\n", "")
    )
    Path(policy).write_text(FIT_POLICY % extra)
    (tmp_path / "config.yaml").write_text(SCHEDULER_CONFIG)
    argv = ["deschedule", cluster, "--policy", policy, "--config", str(tmp_path / "config.yaml")]
    assert main([*argv, "--now", "2024-01-03T00:00:00Z", "-o", "json"]) == 0
    out = lines(capsys)
    assert [line["pod"] for line in out if line["kind"] == "Eviction"] == evicted
    assert {line["pod"]: line["reasons"] for line in out if line["kind"] == "NotEvicted"} == stayed


def test_an_unknown_node_fit_profile_is_refused(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, policy = files
    Path(policy).write_text(FIT_POLICY % ", nodeFitProfile: nope")
    assert main(["deschedule", cluster, "--policy", policy]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].endswith(
        'profiles[0].pluginConfig[name=DefaultEvictor].args.nodeFitProfile: Not found: "nope": '
        "the scheduler configuration's profiles are default-scheduler"
    ), err
