"""The node-level plugins together, through Framework.schedule_pod in upstream's
default order: the FitError message aggregates every plugin's reasons per node."""

from __future__ import annotations

from services.framework.api.interface import ExtensionPoint
from services.framework.api.status import Code
from services.framework.api.types import PodInfo
from tests.builders import container, host_port, make_node, make_pod
from tests.builders.selectors import affinity, req, term
from tests.unit.framework.helpers import snapshot_of
from tests.unit.framework.plugins.basic_plugins import framework, tol


def test_upstream_order_and_weights():
    fw = framework()
    assert fw.plugin_names(ExtensionPoint.Filter) == (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
    )
    assert fw.plugin_names(ExtensionPoint.PreFilter) == (
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
    )
    assert fw.score_weights == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert fw.plugin_names(ExtensionPoint.PreEnqueue) == ("SchedulingGates",)


def test_fit_error_aggregates_the_first_rejecting_plugin_per_node():
    nodes = [
        make_node("infra", labels={"zone": "zone1"}, taints=[("node-role", "infra", "NoSchedule")]),
        make_node("a", labels={"zone": "zone2"}),
        make_node("b"),
    ]
    pod = make_pod(affinity=affinity(required=[term(req("zone", "In", "zone1"))]))
    result = framework().schedule_pod(snapshot_of(nodes), pod)
    assert result.node is None
    assert result.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 node(s) didn't match Pod's node affinity/selector."
    )
    assert result.unschedulable_plugins == {"TaintToleration", "NodeAffinity"}
    assert result.fit_error is not None
    assert result.fit_error.diagnosis.all_unresolvable


def test_every_filter_reports():
    nodes = [
        make_node("cordoned", unschedulable=True),
        make_node("tainted", taints=[("dedicated", "db", "NoExecute")]),
        make_node("elsewhere", labels={"disk": "hdd"}),
        make_node("busy", labels={"disk": "ssd"}),
        make_node("small", labels={"disk": "ssd"}, allocatable={"cpu": "1", "pods": 10}),
    ]
    web = make_pod(
        "web",
        node_name="busy",
        requests=[container(ports=[host_port(80)])],
    )
    pod = make_pod(
        requests=[container({"cpu": "2"}, ports=[host_port(80)])],
        node_selector={"disk": "ssd"},
    )
    result = framework().schedule_pod(snapshot_of(nodes, [web]), pod)
    assert result.message == (
        "0/5 nodes are available: 1 Insufficient cpu, 1 node(s) didn't have free ports "
        "for the requested pod ports, 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."
    )
    assert result.fit_error is not None
    assert not result.fit_error.diagnosis.all_unresolvable  # ports and cpu may be preempted


def test_node_name_and_pinned_affinity():
    nodes = [make_node("a"), make_node("b")]
    assert framework().schedule_pod(snapshot_of(nodes), make_pod(node_name="b")).node == "b"
    pinned = make_pod(affinity=affinity(required=[term(fields=[req("metadata.name", "In", "a")])]))
    result = framework().schedule_pod(snapshot_of(nodes), pinned)
    assert (result.node, result.evaluated_nodes) == ("a", 1)
    nowhere = make_pod(affinity=affinity(required=[term(fields=[req("metadata.name", "In", "c")])]))
    result = framework().schedule_pod(snapshot_of(nodes), nowhere)
    assert result.message == (
        "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_scores_pick_the_preferred_untainted_node_with_the_image():
    image = (["registry.example/app:v1"], 900 * 1024 * 1024)
    nodes = [
        make_node(
            "soft-tainted", labels={"tier": "fast"}, taints=[("spot", "", "PreferNoSchedule")]
        ),
        make_node("plain"),
        make_node("preferred", labels={"tier": "fast"}, images=[image]),
    ]
    pod = make_pod(
        requests=[container({"cpu": "500m", "memory": "1Gi"}, image="registry.example/app:v1")],
        affinity=affinity(preferred=[(10, term(req("tier", "In", "fast")))]),
    )
    result = framework().schedule_pod(snapshot_of(nodes), pod, explain=True)
    assert result.node == "preferred"
    assert result.scores["TaintToleration"].tolist() == [0, 100, 100]
    assert result.scores["NodeAffinity"].tolist() == [100, 0, 100]
    assert result.scores["ImageLocality"].tolist() == [0, 0, 28]
    tolerant = make_pod(tolerations=[tol("spot", "Exists")], requests={"cpu": "1"})
    result = framework().schedule_pod(snapshot_of(nodes), tolerant, explain=True)
    assert result.scores["TaintToleration"].tolist() == [100, 100, 100]


def test_gated_pods_wait():
    fw = framework()
    gate = fw.plugins["SchedulingGates"]
    status = gate.pre_enqueue(PodInfo.of(make_pod(scheduling_gates=["example.com/quota"])))  # type: ignore[attr-defined]
    assert status.code == Code.UnschedulableAndUnresolvable
    assert status.message() == "Scheduling is blocked due to non-empty scheduling gates"
