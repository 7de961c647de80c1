"""Upstream's TestRequiredAffinityMultipleNodes (filtering_test.go), case by case."""

from __future__ import annotations

import pytest

from contracts.k8s import Namespace, ObjectMeta
from services.framework.api.status import SKIP, SUCCESS, Code, Status
from tests.builders import make_node
from tests.unit.framework.plugins.interpodaffinity.support import (
    exists,
    in_,
    pod,
    run_filter,
    term,
)

AFFINITY = Status(Code.UnschedulableAndUnresolvable, ("node(s) didn't match pod affinity rules",))
ANTI = Status(Code.Unschedulable, ("node(s) didn't match pod anti-affinity rules",))
EXISTING = Status(Code.Unschedulable, ("node(s) didn't satisfy existing pods anti-affinity rules",))

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def rzh(name: str, zone: str):
    return make_node(name, labels={"region": "r1", "zone": zone, "hostname": name})


CASES = [
    (
        "all nodes sharing the topology value of a matching pod pass",
        pod(affinity=[term("region", in_("foo", "bar"))]),
        [pod("p1", node="node1", labels={"foo": "bar"})],
        [
            make_node("node1", labels=RG_CHINA),
            make_node("node2", labels=RG_CHINA_AZ1),
            make_node("node3", labels=RG_INDIA),
        ],
        SUCCESS,
        [None, None, AFFINITY],
    ),
    (
        "the first pod of a group is not blocked anywhere",
        pod(
            labels={"foo": "bar", "service": "securityscan"},
            affinity=[
                term("zone", in_("foo", "bar")),
                term("zone", in_("service", "securityscan")),
            ],
        ),
        [pod("p1", node="nodeA", labels={"foo": "bar"})],
        [
            make_node("nodeA", labels={"zone": "az1", "hostname": "h1"}),
            make_node("nodeB", labels={"zone": "az2", "hostname": "h2"}),
        ],
        SUCCESS,
        [None, None],
    ),
    (
        "the first pod of a group needs nodes with the topology keys",
        pod(
            labels={"foo": "bar", "service": "securityscan"},
            affinity=[
                term("zone", in_("foo", "bar")),
                term("zone", in_("service", "securityscan")),
            ],
        ),
        [pod("p1", node="nodeA", labels={"foo": "bar"})],
        [
            make_node("nodeA", labels={"zoneLabel": "az1", "hostname": "h1"}),
            make_node("nodeB", labels={"zoneLabel": "az2", "hostname": "h2"}),
        ],
        SUCCESS,
        [AFFINITY, AFFINITY],
    ),
    (
        "anti-affinity blocks every node of the matching pod's region",
        pod(anti=[term("region", in_("foo", "abc"))]),
        [pod(node="nodeA", labels={"foo": "abc"})],
        [
            make_node("nodeA", labels={"region": "r1", "hostname": "nodeA"}),
            make_node("nodeB", labels={"region": "r1", "hostname": "nodeB"}),
        ],
        SUCCESS,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity matches when any term matches",
        pod(anti=[term("region", in_("foo", "abc")), term("zone", in_("service", "securityscan"))]),
        [pod(node="nodeA", labels={"foo": "abc", "service": "securityscan"})],
        [
            make_node("nodeA", labels={"region": "r1", "zone": "z1", "hostname": "nodeA"}),
            make_node("nodeB", labels={"region": "r1", "zone": "z2", "hostname": "nodeB"}),
        ],
        SUCCESS,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity leaves the other region free",
        pod(anti=[term("region", in_("foo", "abc"))]),
        [pod(node="nodeA", labels={"foo": "abc"})],
        [
            make_node("nodeA", labels=RG_CHINA),
            make_node("nodeB", labels=RG_CHINA_AZ1),
            make_node("nodeC", labels=RG_INDIA),
        ],
        SUCCESS,
        [ANTI, ANTI, None],
    ),
    (
        "an anti-affinity match in another namespace does not count",
        pod(namespace="NS1", labels={"foo": "123"}, anti=[term("region", in_("foo", "bar"))]),
        [
            pod(node="nodeA", namespace="NS1", labels={"foo": "bar"}),
            pod(node="nodeC", namespace="NS2", anti=[term("region", in_("foo", "123"))]),
        ],
        [
            make_node("nodeA", labels=RG_CHINA),
            make_node("nodeB", labels=RG_CHINA_AZ1),
            make_node("nodeC", labels=RG_INDIA),
        ],
        SUCCESS,
        [ANTI, ANTI, None],
    ),
    (
        "existing anti-affinity with a topology key no node has: Skip",
        pod(labels={"foo": ""}),
        [pod(node="nodeA", anti=[term("invalid-node-label", exists("foo"))])],
        [rzh("nodeA", "z1"), rzh("nodeB", "z1")],
        SKIP,
        [None, None],
    ),
    (
        "incoming anti-affinity with a topology key no node has",
        pod(node="nodeA", anti=[term("invalid-node-label", exists("foo"))]),
        [pod(node="nodeA", labels={"foo": ""})],
        [rzh("nodeA", "z1"), rzh("nodeB", "z1")],
        SUCCESS,
        [None, None],
    ),
    (
        "the pod violates each existing pod's anti-affinity on every node",
        pod(labels={"foo": "", "bar": ""}),
        [
            pod(node="nodeA", anti=[term("zone", exists("foo"))]),
            pod(node="nodeA", anti=[term("region", exists("bar"))]),
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [EXISTING, EXISTING],
    ),
    (
        "the pod's anti-affinity is violated by one term on every node",
        pod(anti=[term("zone", exists("foo")), term("region", exists("bar"))]),
        [pod(node="nodeA", labels={"foo": ""}), pod(node="nodeB", labels={"bar": ""})],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [ANTI, ANTI],
    ),
    (
        "existing anti-affinity: selector and topology key must both match (invalid key)",
        pod(labels={"foo": "", "bar": ""}),
        [
            pod(
                node="nodeA",
                anti=[term("invalid-node-label", exists("foo")), term("zone", exists("bar"))],
            )
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [EXISTING, None],
    ),
    (
        "incoming anti-affinity: selector and topology key must both match (invalid key)",
        pod(anti=[term("invalid-node-label", exists("foo")), term("zone", exists("bar"))]),
        [pod("podA", node="nodeA", labels={"foo": "", "bar": ""})],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [ANTI, None],
    ),
    (
        "existing anti-affinity: selector and topology key must both match (valid keys)",
        pod(labels={"foo": "", "bar": ""}),
        [pod(node="nodeA", anti=[term("region", exists("foo")), term("zone", exists("bar"))])],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [EXISTING, EXISTING],
    ),
    (
        "incoming anti-affinity: selector and topology key must both match (valid keys)",
        pod(anti=[term("region", exists("foo")), term("zone", exists("bar"))]),
        [pod(node="nodeA", labels={"foo": "", "bar": ""})],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [ANTI, ANTI],
    ),
    (
        "existing pods on two nodes each have a term selecting the pod",
        pod(labels={"foo": "", "bar": ""}),
        [
            pod(node="nodeA", anti=[term("zone", exists("foo")), term("zone", exists("labelA"))]),
            pod(node="nodeB", anti=[term("zone", exists("bar")), term("zone", exists("labelB"))]),
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2"), rzh("nodeC", "z3")],
        SUCCESS,
        [EXISTING, EXISTING, None],
    ),
    (
        "affinity: all terms match one pod, then all topology keys",
        pod(affinity=[term("region", exists("foo")), term("zone", exists("bar"))]),
        [pod("pod1", node="nodeA", labels={"foo": "", "bar": ""})],
        [rzh("nodeA", "z1"), rzh("nodeB", "z1")],
        SUCCESS,
        [None, None],
    ),
    (
        "affinity: the terms must be satisfied by the same pod",
        pod(affinity=[term("region", exists("foo")), term("zone", exists("bar"))]),
        [
            pod("pod1", node="nodeA", labels={"foo": ""}),
            pod("pod2", node="nodeB", labels={"bar": ""}),
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [AFFINITY, AFFINITY],
    ),
]


@pytest.mark.parametrize(
    ("incoming", "pods", "nodes", "want_pre_filter", "want_filters"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_required_affinity_multiple_nodes(incoming, pods, nodes, want_pre_filter, want_filters):
    status, verdicts = run_filter(
        incoming, pods, nodes, namespaces=[Namespace(metadata=ObjectMeta(name="NS1"))]
    )
    assert status == want_pre_filter
    if status.is_success():
        assert verdicts == want_filters
