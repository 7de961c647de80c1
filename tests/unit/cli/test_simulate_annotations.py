"""``ksched simulate -o annotations``: kube-scheduler-simulator's result annotations on
the pods of small clusters, every value worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli import annotations as a
from services.cli.annotations import annotated_pods
from services.cli.main import main
from services.cli.simulate import load_cluster, simulate
from services.framework.config import Profile
from tests.unit.cli import coscheduling_support as gang

# Three nodes: a has 2 CPU / 4Gi, b 4 CPU / 8Gi with a pod of 2 CPU / 2Gi on it, c is
# tainted dedicated=gpu:NoSchedule. web asks 1 CPU / 1Gi, then huge asks 3 CPU.
CLUSTER = """\
kind: Node
metadata: {name: a}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}}
---
kind: Node
metadata: {name: b}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
kind: Node
metadata: {name: c}
spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
kind: Pod
metadata: {name: db, namespace: demo}
spec:
  nodeName: b
  containers: [{name: db, image: db, resources: {requests: {cpu: "2", memory: 2Gi}}}]
---
kind: Pod
metadata: {name: web, namespace: demo, labels: {app: web}}
spec:
  containers: [{name: web, image: web, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
kind: Pod
metadata: {name: huge, namespace: demo}
spec:
  containers: [{name: huge, image: huge, resources: {requests: {cpu: "3", memory: 1Gi}}}]
"""

# The default profile's PreFilter plugins: only NodeResourcesFit has something to do
# for these pods, every other says Skip (written as its empty message).
PRE_FILTER = {
    "DynamicResources": "",
    "InterPodAffinity": "",
    "NodeAffinity": "",
    "NodePorts": "",
    "NodeResourcesFit": "success",
    "NodeVolumeLimits": "",
    "PodTopologySpread": "",
    "VolumeBinding": "",
    "VolumeRestrictions": "",
    "VolumeZone": "",
}
# The Filter plugins left after PreFilter's Skips, in the profile's order.
PASSED = {p: "passed" for p in ("NodeName", "NodeResourcesFit", "NodeUnschedulable")}
PASSED_ALL = {**PASSED, "TaintToleration": "passed"}
TAINTED = {
    "NodeName": "passed",
    "NodeUnschedulable": "passed",
    "TaintToleration": "node(s) had untolerated taint(s)",
}
BOUND_BY_DEFAULT = {"DynamicResources": "success", "VolumeBinding": "success"}

# web: a and b pass, c's taint rejects it. Raw scores: NodeResourcesFit (LeastAllocated,
# cpu and memory weight 1) a (50 + 75) / 2 = 62, b ((4-3)/4 = 25 + (8-3)/8 = 62) / 2 = 43;
# BalancedAllocation 100 * (1 - |cpu - memory fraction| / 2): a 1 - |0.5-0.25|/2 = 87,
# b 1 - |0.75-0.375|/2 = 81; TaintToleration counts no PreferNoSchedule taint (0), and
# normalizes 0 everywhere to 100, weight 3; ImageLocality 0. a: 62+87+300 = 449 wins.
WEB = {
    a.PREFILTER: {},
    a.PREFILTER_STATUS: PRE_FILTER,
    a.FILTER: {"a": PASSED_ALL, "b": PASSED_ALL, "c": TAINTED},
    a.POSTFILTER: {},
    a.PRESCORE: {
        "DynamicResources": "",
        "InterPodAffinity": "",
        "NodeAffinity": "",
        "NodeResourcesBalancedAllocation": "success",
        "NodeResourcesFit": "success",
        "PodTopologySpread": "",
        "TaintToleration": "success",
        "VolumeBinding": "",
    },
    a.SCORE: {
        "a": {
            "ImageLocality": "0",
            "NodeResourcesBalancedAllocation": "87",
            "NodeResourcesFit": "62",
            "TaintToleration": "0",
        },
        "b": {
            "ImageLocality": "0",
            "NodeResourcesBalancedAllocation": "81",
            "NodeResourcesFit": "43",
            "TaintToleration": "0",
        },
    },
    a.FINALSCORE: {
        "a": {
            "ImageLocality": "0",
            "NodeResourcesBalancedAllocation": "87",
            "NodeResourcesFit": "62",
            "TaintToleration": "300",
        },
        "b": {
            "ImageLocality": "0",
            "NodeResourcesBalancedAllocation": "81",
            "NodeResourcesFit": "43",
            "TaintToleration": "300",
        },
    },
    a.RESERVE: BOUND_BY_DEFAULT,
    a.PERMIT: {},
    a.PERMIT_TIMEOUT: {},
    a.PREBIND: BOUND_BY_DEFAULT,
    a.BIND: {"DefaultBinder": "success"},
}

# huge, after web took 1 CPU of a: a has 1 CPU left, b 2, c is tainted. PostFilter ran
# (DynamicResources, DefaultPreemption) over the three rejected nodes and nominated none.
HUGE = {
    a.PREFILTER: {},
    a.PREFILTER_STATUS: PRE_FILTER,
    a.FILTER: {
        "a": {**PASSED_ALL, "NodeResourcesFit": "Insufficient cpu"},
        "b": {**PASSED_ALL, "NodeResourcesFit": "Insufficient cpu"},
        "c": TAINTED,
    },
    a.POSTFILTER: {"a": {}, "b": {}, "c": {}},
    a.PRESCORE: {},
    a.SCORE: {},
    a.FINALSCORE: {},
    a.RESERVE: {},
    a.PERMIT: {},
    a.PERMIT_TIMEOUT: {},
    a.PREBIND: {},
    a.BIND: {},
}

RESULT_KEYS = {*WEB, a.SELECTED_NODE, a.HISTORY}


async def run(text: str, profiles: list[Profile] | None = None) -> list[dict[str, Any]]:
    documents = load_cluster(text, "cluster.yaml")
    records = await simulate(documents, seed=0, profiles=profiles, explain=True)
    return annotated_pods(documents, records)


def decoded(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod's simulator annotations, JSON values decoded (selected-node is a name)."""
    found = pod["metadata"].get("annotations", {})
    return {
        k: v if k == a.SELECTED_NODE else json.loads(v)
        for k, v in found.items()
        if k.startswith(a.PREFIX)
    }


def by_name(pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in pods}


@pytest.mark.parametrize(
    ("pod", "node", "expected", "selected"),
    [("web", "a", WEB, "a"), ("huge", None, HUGE, "")],
    ids=["bound", "failed"],
)
async def test_each_attempted_pod_carries_the_simulators_results(
    pod: str, node: str | None, expected: dict[str, Any], selected: str
) -> None:
    found = by_name(await run(CLUSTER))[pod]
    annotations = decoded(found)
    assert set(annotations) == RESULT_KEYS
    history = annotations.pop(a.HISTORY)
    assert annotations == {**expected, a.SELECTED_NODE: selected}
    # One attempt: the history holds it, its values as the annotations' own strings.
    raw = {k: v for k, v in found["metadata"]["annotations"].items() if k != a.HISTORY}
    assert history == [raw]
    assert found["spec"].get("nodeName") == node


async def test_pods_come_in_file_order_and_a_bound_pod_of_the_input_as_written() -> None:
    pods = await run(CLUSTER)
    assert [p["metadata"]["name"] for p in pods] == ["db", "web", "huge"]
    assert pods[0] == yaml.safe_load(CLUSTER.split("---\n")[3])
    assert by_name(pods)["web"]["metadata"]["labels"] == {"app": "web"}


async def test_values_are_json_as_go_writes_it() -> None:
    web = by_name(await run(CLUSTER))["web"]["metadata"]["annotations"]
    assert web[a.BIND] == '{"DefaultBinder":"success"}'
    assert web[a.FILTER].startswith('{"a":{"NodeName":"passed","NodeResourcesFit":"passed",')
    assert a.go_json({"b": "<&>", "a": "é"}) == '{"a":"é","b":"\\u003c\\u0026\\u003e"}'


# One node of 2 CPU running a low-priority pod that takes both; urgent (priority 1000)
# asks 2 CPU: its first attempt fails and DefaultPreemption nominates n1, evicting low;
# the second binds it there.
PREEMPTION = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}}
---
kind: Pod
metadata: {name: low, namespace: demo}
spec:
  nodeName: n1
  containers: [{name: low, image: low, resources: {requests: {cpu: "2"}}}]
---
kind: Pod
metadata: {name: urgent, namespace: demo}
spec:
  priorityClassName: high
  containers: [{name: urgent, image: urgent, resources: {requests: {cpu: "2"}}}]
"""


async def test_a_pod_bound_after_preemption_keeps_the_nomination_in_its_history() -> None:
    pods = await run(PREEMPTION)
    assert [p["metadata"]["name"] for p in pods] == ["urgent"]  # low was evicted
    urgent = pods[0]
    assert urgent["spec"]["nodeName"] == "n1"
    annotations = decoded(urgent)
    first, second = annotations[a.HISTORY]
    assert json.loads(first[a.POSTFILTER]) == {"n1": {"DefaultPreemption": "preemption victim"}}
    assert json.loads(first[a.FILTER]) == {
        "n1": {**PASSED_ALL, "NodeResourcesFit": "Insufficient cpu"}
    }
    assert first[a.SELECTED_NODE] == ""
    # The second attempt is the pod's annotations: n1 alone fits, so nothing is scored.
    assert {k: v for k, v in urgent["metadata"]["annotations"].items() if k != a.HISTORY} == second
    assert annotations[a.FILTER] == {"n1": PASSED_ALL}
    assert annotations[a.POSTFILTER] == {}
    assert annotations[a.SCORE] == annotations[a.FINALSCORE] == {}
    assert annotations[a.SELECTED_NODE] == "n1"
    assert annotations[a.BIND] == {"DefaultBinder": "success"}


async def test_a_gang_member_that_waited_at_permit_says_so() -> None:
    """Coscheduling (minMember 2, scheduleTimeoutSeconds 10): the first member waits at
    Permit for 10s, the second completes the gang and is let through at once."""
    docs = [
        gang.node("n1", cpu="4", memory="4Gi"),
        gang.pod_group("pg", 2),
        gang.pod("m1", "pg", cpu="1"),
        gang.pod("m2", "pg", cpu="1"),
    ]
    pods = by_name(await run("---\n".join(docs), gang.upstream_profiles()))
    first, second = decoded(pods["m1"]), decoded(pods["m2"])
    assert first[a.PERMIT] == {"Coscheduling": "wait"}
    assert first[a.PERMIT_TIMEOUT] == {"Coscheduling": "10s"}
    assert second[a.PERMIT] == {"Coscheduling": "success"}
    assert second[a.PERMIT_TIMEOUT] == {"Coscheduling": "0s"}
    assert first[a.PREFILTER_STATUS]["Coscheduling"] == "success"
    assert pods["m1"]["spec"]["nodeName"] == pods["m2"]["spec"]["nodeName"] == "n1"


def test_the_command_prints_yaml_whose_values_are_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    assert main(["simulate", str(cluster), "-o", "annotations"]) == 0
    out = capsys.readouterr().out
    pods = list(yaml.safe_load_all(out))
    assert [p["metadata"]["name"] for p in pods] == ["db", "web", "huge"]
    assert out.count("\n---\n") == 2
    values = [
        v
        for p in pods
        for k, v in p["metadata"].get("annotations", {}).items()
        if k != a.SELECTED_NODE
    ]
    assert len(values) == 2 * (len(RESULT_KEYS) - 1)
    for value in values:
        json.loads(value)


def test_bad_input_is_reported_as_simulate_reports_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "bad.yaml"
    cluster.write_text("kind: Pod\nmetadata: {name: x}\nspec: {containers: 3}\n")
    code = main(["simulate", str(cluster), "-o", "annotations"])
    err = capsys.readouterr()
    assert code != 0 and err.out == ""
    assert str(cluster) in err.err


def test_history_drops_the_oldest_attempts_over_the_annotation_limit() -> None:
    big = {"k": "x" * (a.ANNOTATION_LIMIT // 2)}
    assert json.loads(a.history([{"k": "old"}, big, big])) == [big]
    assert json.loads(a.history([{"k": "1"}, {"k": "2"}])) == [{"k": "1"}, {"k": "2"}]
