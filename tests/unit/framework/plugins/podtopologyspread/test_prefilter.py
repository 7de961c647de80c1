"""PreFilter's counts per topology domain: upstream's TestPreFilterState table."""

from __future__ import annotations

import pytest

from services.framework.api.interface import CycleState
from services.framework.api.status import Code
from services.framework.api.types import PodInfo
from tests.builders import make_node, make_pod
from tests.builders.workloads import (
    make_replica_set,
    make_replication_controller,
    make_service,
    make_stateful_set,
)
from tests.unit.framework.plugins.podtopologyspread.helpers import (
    BAR,
    FOO,
    UNSCHEDULABLE_TAINT,
    domain_counts,
    exists,
    labels,
    min_matches,
    node_affinity,
    node_selector,
    owned_by,
    plugin,
    pre_filtered,
    spread,
    table,
    toleration,
    zoned,
)

DNS, SA = "DoNotSchedule", "ScheduleAnyway"
FOUR_NODES = [
    zoned("node-a", "zone1"),
    zoned("node-b", "zone1"),
    zoned("node-x", "zone2"),
    zoned("node-y", "zone2"),
]
FIVE_FOO = [
    make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
    make_pod("p-a2", node_name="node-a", labels={"foo": ""}),
    make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
    make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
    make_pod("p-y2", node_name="node-y", labels={"foo": ""}),
]
SEVEN_FOO = [
    *FIVE_FOO,
    make_pod("p-y3", node_name="node-y", labels={"foo": ""}),
    make_pod("p-y4", node_name="node-y", labels={"foo": ""}),
]
POLICY_NODES = [
    make_node("node-a", labels={"node": "node-a", "foo": ""}),
    make_node("node-b", labels={"node": "node-b", "foo": ""}),
    make_node("node-c", labels={"node": "node-c", "bar": ""}),
]
POLICY_PODS = [
    make_pod("p-a", node_name="node-a", labels={"bar": ""}),
    make_pod("p-b", node_name="node-b", labels={"bar": ""}),
    make_pod("p-c", node_name="node-b", labels={"bar": ""}),
    make_pod("p-d", node_name="node-c"),
]
TAINTED_NODES = [
    make_node("node-a", labels={"node": "node-a"}),
    make_node("node-b", labels={"node": "node-b"}),
    make_node("node-c", labels={"node": "node-c", "bar": ""}, taints=[UNSCHEDULABLE_TAINT]),
]
FOO_POD = make_pod("p", labels={"foo": ""})

CASES = [
    pytest.param(
        spread(FOO_POD, 5, "zone", DNS, labels(foo="bar")),
        FOUR_NODES,
        [],
        [{"zone1": 0, "zone2": 0}],
        [0],
        id="clean cluster with one spreadConstraint",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, FOO),
        FOUR_NODES,
        FIVE_FOO,
        [{"zone1": 3, "zone2": 2}],
        [2],
        id="normal case with one spreadConstraint",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, None),
        FOUR_NODES,
        FIVE_FOO,
        [{"zone1": 0, "zone2": 0}],
        [0],
        id="normal case with null label selector",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, FOO),
        [*FOUR_NODES, zoned("node-o", "zone3"), zoned("node-p", "zone3")],
        FIVE_FOO,
        [{"zone1": 3, "zone2": 2, "zone3": 0}],
        [0],
        id="normal case with one spreadConstraint, on a 3-zone cluster",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, FOO),
        FOUR_NODES,
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-a2", "ns1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-y1", "ns2", node_name="node-y", labels={"foo": ""}),
            make_pod("p-y2", node_name="node-y", labels={"foo": ""}),
        ],
        [{"zone1": 2, "zone2": 1}],
        [1],
        id="namespace mismatch doesn't count",
    ),
    pytest.param(
        spread(spread(FOO_POD, 1, "zone", DNS, FOO), 1, "node", DNS, FOO),
        FOUR_NODES,
        SEVEN_FOO,
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
        [3, 0],
        id="normal case with two spreadConstraints",
    ),
    pytest.param(
        spread(
            spread(
                spread(spread(FOO_POD, 1, "zone", SA, FOO), 1, "zone", DNS, FOO),
                1,
                "node",
                SA,
                FOO,
            ),
            1,
            "node",
            DNS,
            FOO,
        ),
        [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-y", "zone2")],
        SEVEN_FOO,
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        [3, 1],
        id="soft spreadConstraints should be bypassed",
    ),
    pytest.param(
        spread(
            spread(make_pod("p", labels={"foo": "", "bar": ""}), 1, "zone", DNS, FOO),
            1,
            "node",
            DNS,
            BAR,
        ),
        [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-y", "zone2")],
        [
            make_pod("p-a", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b", node_name="node-b", labels={"bar": ""}),
        ],
        [{"zone1": 1, "zone2": 0}, {"node-a": 0, "node-b": 1, "node-y": 0}],
        [0, 0],
        id="different labelSelectors - simple version",
    ),
    pytest.param(
        spread(
            spread(make_pod("p", labels={"foo": "", "bar": ""}), 1, "zone", DNS, FOO),
            1,
            "node",
            DNS,
            BAR,
        ),
        [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-y", "zone2")],
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-a2", node_name="node-a", labels={"foo": "", "bar": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
            make_pod("p-y2", node_name="node-y", labels={"foo": "", "bar": ""}),
            make_pod("p-y3", node_name="node-y", labels={"foo": ""}),
            make_pod("p-y4", node_name="node-y", labels={"foo": "", "bar": ""}),
        ],
        [{"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 0, "node-y": 2}],
        [3, 0],
        id="different labelSelectors - complex pods",
    ),
    pytest.param(
        node_affinity(
            spread(spread(FOO_POD, 1, "zone", DNS, FOO), 1, "node", DNS, FOO),
            "node",
            "NotIn",
            ["node-x"],
        ),
        FOUR_NODES,
        SEVEN_FOO,
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        [3, 1],
        id="two spreadConstraints, and with podAffinity",
    ),
    pytest.param(
        node_selector(spread(FOO_POD, 1, "node", DNS, BAR), foo=""),
        POLICY_NODES,
        POLICY_PODS,
        [{"node-a": 1, "node-b": 2}],
        [1],
        id="NodeAffinityPolicy honored with labelSelectors",
    ),
    pytest.param(
        node_selector(spread(FOO_POD, 1, "node", DNS, BAR, affinity_policy="Ignore"), foo=""),
        POLICY_NODES,
        POLICY_PODS,
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [0],
        id="NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        node_affinity(spread(FOO_POD, 1, "node", DNS, BAR), "foo", "In", [""]),
        POLICY_NODES,
        POLICY_PODS,
        [{"node-a": 1, "node-b": 2}],
        [1],
        id="NodeAffinityPolicy honored with nodeAffinity",
    ),
    pytest.param(
        node_affinity(
            spread(FOO_POD, 1, "node", DNS, BAR, affinity_policy="Ignore"), "foo", "In", [""]
        ),
        POLICY_NODES,
        POLICY_PODS,
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [0],
        id="NodeAffinityPolicy ignored with nodeAffinity",
    ),
    pytest.param(
        spread(FOO_POD, 1, "node", DNS, BAR),
        TAINTED_NODES,
        POLICY_PODS,
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [0],
        id="NodeTaintsPolicy ignored",
    ),
    pytest.param(
        spread(FOO_POD, 1, "node", DNS, BAR, taints_policy="Honor"),
        TAINTED_NODES,
        POLICY_PODS,
        [{"node-a": 1, "node-b": 2}],
        [1],
        id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        toleration(
            spread(FOO_POD, 1, "node", DNS, BAR, taints_policy="Honor"),
            "node.kubernetes.io/unschedulable",
        ),
        TAINTED_NODES,
        POLICY_PODS,
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [0],
        id="NodeTaintsPolicy honored with tolerated taints",
    ),
    pytest.param(
        node_selector(
            spread(
                spread(FOO_POD, 1, "zone", DNS, FOO), 1, "node", DNS, FOO, affinity_policy="Ignore"
            ),
            foo="",
        ),
        [
            zoned("node-a", "zone1", foo=""),
            zoned("node-b", "zone1"),
            zoned("node-x", "zone2", foo=""),
        ],
        [
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
        ],
        [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
        [0, 0],
        id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
    ),
    pytest.param(
        node_selector(
            spread(
                spread(FOO_POD, 1, "zone", DNS, FOO, affinity_policy="Ignore"),
                1,
                "node",
                DNS,
                FOO,
                taints_policy="Honor",
            ),
            foo="",
        ),
        [
            zoned("node-a", "zone1"),
            make_node(
                "node-b",
                labels={"zone": "zone1", "node": "node-b", "foo": ""},
                taints=[UNSCHEDULABLE_TAINT],
            ),
            zoned("node-x", "zone2", foo=""),
            zoned("node-y", "zone2", foo=""),
        ],
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-a2", node_name="node-a", labels={"foo": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
            make_pod("p-x2", node_name="node-x", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
        ],
        [{"zone1": 2, "zone2": 3}, {"node-x": 2, "node-y": 1}],
        [2, 1],
        id="two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
    ),
    pytest.param(
        spread(
            make_pod("p", labels={"foo": "", "bar": "a"}),
            1,
            "zone",
            DNS,
            FOO,
            match_label_keys=["bar"],
        ),
        FOUR_NODES,
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-a2", node_name="node-a", labels={"foo": "", "bar": "a"}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": "", "bar": "a"}),
            make_pod("p-y2", node_name="node-y", labels={"bar": ""}),
        ],
        [{"zone1": 1, "zone2": 1}],
        [1],
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
    ),
    pytest.param(
        spread(
            make_pod("p", labels={"foo": "a"}), 1, "zone", DNS, labels(), match_label_keys=["foo"]
        ),
        FOUR_NODES,
        [
            make_pod(f"p-{n}", node_name=f"node-{n[0]}", labels={"foo": "a"})
            for n in ("a1", "a2", "b1", "y1", "y2")
        ],
        [{"zone1": 3, "zone2": 2}],
        [2],
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, None, match_label_keys=["bar"]),
        FOUR_NODES,
        [
            make_pod(f"p-{n}", node_name=f"node-{n[0]}", labels={"foo": "a"})
            for n in ("a1", "a2", "b1", "y1", "y2")
        ],
        [{"zone1": 0, "zone2": 0}],
        [0],
        id="key in matchLabelKeys is ignored when LabelSelector is nil",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, FOO, match_label_keys=["bar"]),
        FOUR_NODES,
        [
            make_pod(f"p-{n}", node_name=f"node-{n[0]}", labels={"foo": "a"})
            for n in ("a1", "a2", "b1", "y1", "y2")
        ],
        [{"zone1": 3, "zone2": 2}],
        [2],
        id="key in matchLabelKeys is ignored when it isn't exist in pod.labels",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, FOO),
        [zoned("node-a", "zone1"), make_node("node-b", labels={"zon": "zone1", "node": "node-b"})],
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
        ],
        [{"zone1": 1}],
        [1],
        id="nodes without the topology key are not counted",
    ),
    pytest.param(
        spread(FOO_POD, 1, "node", DNS, FOO),
        [
            make_node("node-a", labels={"node": "node-a"}),
            make_node("node-b", labels={"node": "node-b"}),
        ],
        [
            make_pod("p-a", node_name="node-a", labels={"foo": ""}, terminating=True),
            make_pod("p-b", node_name="node-b", labels={"foo": ""}),
        ],
        [{"node-a": 0, "node-b": 1}],
        [0],
        id="terminating pods are not counted",
    ),
]


@pytest.mark.parametrize(("incoming", "nodes", "existing", "counts", "minimums"), CASES)
def test_pre_filter_state(incoming, nodes, existing, counts, minimums):
    state, _ = pre_filtered(plugin(), incoming, table(nodes, existing))
    assert domain_counts(state) == counts
    assert min_matches(state) == minimums


ONE_NODE = (zoned("node-a", "zone1"),)


def _status(pl, incoming, nodes=ONE_NODE, existing=()):
    state = CycleState()
    _, status = pl.pre_filter(state, PodInfo.of(incoming), table(nodes, existing))
    return state, status


def test_skip_if_not_specified():
    assert _status(plugin(), FOO_POD)[1].code == Code.Skip


def test_only_soft_constraints_skip():
    assert _status(plugin(), spread(FOO_POD, 1, "zone", SA, FOO))[1].code == Code.Skip


DEFAULTS = [
    {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"},
    {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"},
    {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
]
RACK_NODES = [
    make_node("n1", labels={"node": "n1", "rack": "r1"}),
    make_node("n2", labels={"node": "n2", "rack": "r1"}),
]
RACK_PODS = [
    make_pod("match", node_name="n1", labels={"foo": "bar"}),
    owned_by(
        make_pod("owned-elsewhere", node_name="n1", labels={"foo": "bar"}), "ReplicaSet", "rs2"
    ),
    make_pod("other", node_name="n2", labels={"foo": "baz"}),
]


@pytest.mark.parametrize(
    ("incoming", "objects", "counts"),
    [
        pytest.param(
            make_pod("p", labels={"foo": "bar", "baz": "kar"}),
            [make_service("s1", {"foo": "bar"})],
            [{"n1": 2, "n2": 0}, {"r1": 2}],
            id="default constraints and a service",
        ),
        pytest.param(
            owned_by(make_pod("p", labels={"foo": "bar"}), "ReplicaSet", "rs1"),
            [make_replica_set("rs1", labels(foo="bar"))],
            [{"n1": 2, "n2": 0}, {"r1": 2}],
            id="default constraints and a replicaset",
        ),
        pytest.param(
            owned_by(make_pod("p", labels={"foo": "bar"}), "StatefulSet", "ss1"),
            [make_stateful_set("ss1", exists("foo"))],
            [{"n1": 2, "n2": 1}, {"r1": 3}],
            id="default constraints and a statefulset",
        ),
        pytest.param(
            owned_by(
                make_pod("p", labels={"foo": "bar"}),
                "ReplicationController",
                "rc1",
                api_version="v1",
            ),
            [make_replication_controller("rc1", {"foo": "baz"}), make_service("s", {})],
            [{"n1": 0, "n2": 1}, {"r1": 1}],
            id="default constraints and a replication controller",
        ),
    ],
)
def test_default_constraints_take_the_default_selector(incoming, objects, counts):
    pl = plugin("List", DEFAULTS, objects)
    state, status = _status(pl, incoming, RACK_NODES, RACK_PODS)
    assert status.is_success()
    assert [c.max_skew for c in state.read("PreFilterPodTopologySpread", object).constraints] == [
        3,
        5,
    ]
    assert domain_counts(state) == counts


@pytest.mark.parametrize(
    ("incoming", "objects"),
    [
        pytest.param(
            make_pod("p", labels={"foo": "bar", "baz": "kar"}),
            [make_service("s1", {"baz": "kep"})],
            id="default constraints and a service that doesn't match",
        ),
        pytest.param(make_pod("p", labels={"foo": "bar"}), [], id="no service and no controller"),
        pytest.param(
            owned_by(make_pod("p", labels={"foo": "bar"}), "ReplicaSet", "rs1"),
            [make_replica_set("rs1", labels(foo="bar"), namespace="other")],
            id="the replicaset is in another namespace",
        ),
        pytest.param(
            owned_by(make_pod("p", labels={"foo": "bar"}), "Job", "j1", api_version="batch/v1"),
            [],
            id="an owner upstream does not consult",
        ),
        pytest.param(
            make_pod("p", labels={"foo": "bar"}),
            [make_service("s1", None)],
            id="a service without a selector selects nothing",
        ),
    ],
)
def test_default_constraints_with_an_empty_default_selector_skip(incoming, objects):
    assert _status(plugin("List", DEFAULTS, objects), incoming)[1].code == Code.Skip


def test_pod_constraints_win_over_defaults():
    defaults = [{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}]
    incoming = owned_by(
        spread(
            spread(
                make_pod("p", labels={"foo": "bar", "baz": "tar"}),
                1,
                "zone",
                DNS,
                labels(baz="tar"),
            ),
            2,
            "planet",
            SA,
            labels(fot="rok"),
        ),
        "ReplicaSet",
        "rs1",
    )
    state, status = _status(plugin("List", defaults), incoming)
    assert status.is_success()
    assert domain_counts(state) == [{"zone1": 0}]


def test_system_defaults_are_soft_so_pre_filter_skips():
    incoming = owned_by(make_pod("p", labels={"foo": "bar"}), "ReplicaSet", "rs1")
    objects = [make_replica_set("rs1", labels(foo="bar"))]
    assert _status(plugin("System", objects=objects), incoming)[1].code == Code.Skip


def test_invalid_selector_is_an_error():
    incoming = spread(FOO_POD, 1, "zone", DNS, exists("bad key!"))
    status = _status(plugin(), incoming)[1]
    assert status.code == Code.Error
    assert status.message().startswith(
        "get constraints from pod: obtaining pod's hard topology spread constraints: "
    )


def test_min_domains_treats_the_global_minimum_as_zero():
    incoming = spread(FOO_POD, 2, "node", DNS, FOO, min_domains=4)
    nodes = [make_node(n, labels={"node": n}) for n in ("node-a", "node-b", "node-c")]
    existing = [
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
    ]
    state, _ = pre_filtered(plugin(), incoming, table(nodes, existing))
    assert domain_counts(state) == [{"node-a": 1, "node-b": 1, "node-c": 0}]
    assert min_matches(state) == [0]
