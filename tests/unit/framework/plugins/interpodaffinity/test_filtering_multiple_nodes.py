"""Upstream's TestRequiredAffinityMultipleNodes (filtering_test.go), case by case."""

from __future__ import annotations

import pytest

from contracts.k8s import Namespace, ObjectMeta
from services.framework.api.status import SKIP, SUCCESS, Code, Status
from tests.builders import make_node, make_pod
from tests.builders.selectors import pod_affinity
from tests.unit.framework.plugins.interpodaffinity.support import (
    exists,
    fresh,
    in_,
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
        make_pod(fresh(), affinity=pod_affinity([term("region", in_("foo", "bar"))])),
        [make_pod("p1", labels={"foo": "bar"}, node_name="node1")],
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
        make_pod(
            fresh(),
            labels={"foo": "bar", "service": "securityscan"},
            affinity=pod_affinity(
                [
                    term("zone", in_("foo", "bar")),
                    term("zone", in_("service", "securityscan")),
                ]
            ),
        ),
        [make_pod("p1", labels={"foo": "bar"}, node_name="nodeA")],
        [
            make_node("nodeA", labels={"zone": "az1", "hostname": "h1"}),
            make_node("nodeB", labels={"zone": "az2", "hostname": "h2"}),
        ],
        SUCCESS,
        [None, None],
    ),
    (
        "the first pod of a group needs nodes with the topology keys",
        make_pod(
            fresh(),
            labels={"foo": "bar", "service": "securityscan"},
            affinity=pod_affinity(
                [
                    term("zone", in_("foo", "bar")),
                    term("zone", in_("service", "securityscan")),
                ]
            ),
        ),
        [make_pod("p1", labels={"foo": "bar"}, node_name="nodeA")],
        [
            make_node("nodeA", labels={"zoneLabel": "az1", "hostname": "h1"}),
            make_node("nodeB", labels={"zoneLabel": "az2", "hostname": "h2"}),
        ],
        SUCCESS,
        [AFFINITY, AFFINITY],
    ),
    (
        "anti-affinity blocks every node of the matching pod's region",
        make_pod(fresh(), affinity=pod_affinity(anti=[term("region", in_("foo", "abc"))])),
        [make_pod(fresh(), labels={"foo": "abc"}, node_name="nodeA")],
        [
            make_node("nodeA", labels={"region": "r1", "hostname": "nodeA"}),
            make_node("nodeB", labels={"region": "r1", "hostname": "nodeB"}),
        ],
        SUCCESS,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity matches when any term matches",
        make_pod(
            fresh(),
            affinity=pod_affinity(
                anti=[
                    term("region", in_("foo", "abc")),
                    term("zone", in_("service", "securityscan")),
                ]
            ),
        ),
        [make_pod(fresh(), labels={"foo": "abc", "service": "securityscan"}, node_name="nodeA")],
        [
            make_node("nodeA", labels={"region": "r1", "zone": "z1", "hostname": "nodeA"}),
            make_node("nodeB", labels={"region": "r1", "zone": "z2", "hostname": "nodeB"}),
        ],
        SUCCESS,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity leaves the other region free",
        make_pod(fresh(), affinity=pod_affinity(anti=[term("region", in_("foo", "abc"))])),
        [make_pod(fresh(), labels={"foo": "abc"}, node_name="nodeA")],
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
        make_pod(
            fresh(),
            "NS1",
            labels={"foo": "123"},
            affinity=pod_affinity(anti=[term("region", in_("foo", "bar"))]),
        ),
        [
            make_pod(fresh(), "NS1", labels={"foo": "bar"}, node_name="nodeA"),
            make_pod(
                fresh(),
                "NS2",
                node_name="nodeC",
                affinity=pod_affinity(anti=[term("region", in_("foo", "123"))]),
            ),
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
        make_pod(fresh(), labels={"foo": ""}),
        [
            make_pod(
                fresh(),
                node_name="nodeA",
                affinity=pod_affinity(anti=[term("invalid-node-label", exists("foo"))]),
            )
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z1")],
        SKIP,
        [None, None],
    ),
    (
        "incoming anti-affinity with a topology key no node has",
        make_pod(
            fresh(),
            node_name="nodeA",
            affinity=pod_affinity(anti=[term("invalid-node-label", exists("foo"))]),
        ),
        [make_pod(fresh(), labels={"foo": ""}, node_name="nodeA")],
        [rzh("nodeA", "z1"), rzh("nodeB", "z1")],
        SUCCESS,
        [None, None],
    ),
    (
        "the pod violates each existing pod's anti-affinity on every node",
        make_pod(fresh(), labels={"foo": "", "bar": ""}),
        [
            make_pod(
                fresh(),
                node_name="nodeA",
                affinity=pod_affinity(anti=[term("zone", exists("foo"))]),
            ),
            make_pod(
                fresh(),
                node_name="nodeA",
                affinity=pod_affinity(anti=[term("region", exists("bar"))]),
            ),
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [EXISTING, EXISTING],
    ),
    (
        "the pod's anti-affinity is violated by one term on every node",
        make_pod(
            fresh(),
            affinity=pod_affinity(
                anti=[term("zone", exists("foo")), term("region", exists("bar"))]
            ),
        ),
        [
            make_pod(fresh(), labels={"foo": ""}, node_name="nodeA"),
            make_pod(fresh(), labels={"bar": ""}, node_name="nodeB"),
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [ANTI, ANTI],
    ),
    (
        "existing anti-affinity: selector and topology key must both match (invalid key)",
        make_pod(fresh(), labels={"foo": "", "bar": ""}),
        [
            make_pod(
                fresh(),
                node_name="nodeA",
                affinity=pod_affinity(
                    anti=[term("invalid-node-label", exists("foo")), term("zone", exists("bar"))]
                ),
            )
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [EXISTING, None],
    ),
    (
        "incoming anti-affinity: selector and topology key must both match (invalid key)",
        make_pod(
            fresh(),
            affinity=pod_affinity(
                anti=[term("invalid-node-label", exists("foo")), term("zone", exists("bar"))]
            ),
        ),
        [make_pod("podA", labels={"foo": "", "bar": ""}, node_name="nodeA")],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [ANTI, None],
    ),
    (
        "existing anti-affinity: selector and topology key must both match (valid keys)",
        make_pod(fresh(), labels={"foo": "", "bar": ""}),
        [
            make_pod(
                fresh(),
                node_name="nodeA",
                affinity=pod_affinity(
                    anti=[term("region", exists("foo")), term("zone", exists("bar"))]
                ),
            )
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [EXISTING, EXISTING],
    ),
    (
        "incoming anti-affinity: selector and topology key must both match (valid keys)",
        make_pod(
            fresh(),
            affinity=pod_affinity(
                anti=[term("region", exists("foo")), term("zone", exists("bar"))]
            ),
        ),
        [make_pod(fresh(), labels={"foo": "", "bar": ""}, node_name="nodeA")],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
        SUCCESS,
        [ANTI, ANTI],
    ),
    (
        "existing pods on two nodes each have a term selecting the pod",
        make_pod(fresh(), labels={"foo": "", "bar": ""}),
        [
            make_pod(
                fresh(),
                node_name="nodeA",
                affinity=pod_affinity(
                    anti=[term("zone", exists("foo")), term("zone", exists("labelA"))]
                ),
            ),
            make_pod(
                fresh(),
                node_name="nodeB",
                affinity=pod_affinity(
                    anti=[term("zone", exists("bar")), term("zone", exists("labelB"))]
                ),
            ),
        ],
        [rzh("nodeA", "z1"), rzh("nodeB", "z2"), rzh("nodeC", "z3")],
        SUCCESS,
        [EXISTING, EXISTING, None],
    ),
    (
        "affinity: all terms match one pod, then all topology keys",
        make_pod(
            fresh(),
            affinity=pod_affinity([term("region", exists("foo")), term("zone", exists("bar"))]),
        ),
        [make_pod("pod1", labels={"foo": "", "bar": ""}, node_name="nodeA")],
        [rzh("nodeA", "z1"), rzh("nodeB", "z1")],
        SUCCESS,
        [None, None],
    ),
    (
        "affinity: the terms must be satisfied by the same pod",
        make_pod(
            fresh(),
            affinity=pod_affinity([term("region", exists("foo")), term("zone", exists("bar"))]),
        ),
        [
            make_pod("pod1", labels={"foo": ""}, node_name="nodeA"),
            make_pod("pod2", labels={"bar": ""}, node_name="nodeB"),
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
