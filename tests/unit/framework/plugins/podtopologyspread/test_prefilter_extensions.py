"""AddPod / RemovePod: upstream's TestPreFilterStateAddPod and TestPreFilterStateRemovePod."""

from __future__ import annotations

import pytest

from services.framework.api.types import PodInfo
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.podtopologyspread.helpers import (
    BAR,
    FOO,
    UNSCHEDULABLE_TAINT,
    domain_counts,
    min_matches,
    node_affinity,
    plugin,
    pre_filtered,
    spread,
    table,
    toleration,
    zoned,
)

DNS = "DoNotSchedule"
ON_NODE = spread(make_pod("p", labels={"foo": ""}), 1, "node", DNS, FOO)
ON_ZONE = spread(make_pod("p", labels={"foo": ""}), 1, "zone", DNS, FOO)
ON_BOTH = spread(ON_ZONE, 1, "node", DNS, FOO)
SPLIT = spread(
    spread(make_pod("p", labels={"foo": "", "bar": ""}), 1, "zone", DNS, FOO), 1, "node", DNS, BAR
)
AB = [zoned("node-a", "zone1"), zoned("node-b", "zone1")]
AX = [zoned("node-a", "zone1"), zoned("node-x", "zone2")]
ABX = [*AB, zoned("node-x", "zone2")]
AFFINITY_NODES = [
    zoned("node-a", "zone1", foo="bar"),
    zoned("node-b", "zone2", foo=""),
]
AVOID_FOO_BAR = node_affinity(ON_ZONE, "foo", "NotIn", ["bar"])
TAINTED = [
    make_node("node-a", labels={"zone": "zone1", "node": "node-a"}, taints=[UNSCHEDULABLE_TAINT]),
    zoned("node-b", "zone2"),
]

ADD = [
    pytest.param(
        ON_NODE,
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        [],
        AB,
        [{"node-a": 1, "node-b": 0}],
        [0],
        id="node a and b both impact current min match",
    ),
    pytest.param(
        ON_NODE,
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        [make_pod("p-b1", node_name="node-b", labels={"foo": ""})],
        AB,
        [{"node-a": 1, "node-b": 1}],
        [1],
        id="only node a impacts current min match",
    ),
    pytest.param(
        ON_NODE,
        make_pod("p-a1", "ns1", node_name="node-a", labels={"foo": ""}),
        [make_pod("p-b1", node_name="node-b", labels={"foo": ""})],
        AB,
        [{"node-a": 0, "node-b": 1}],
        [0],
        id="add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
    ),
    pytest.param(
        ON_NODE,
        make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
        [make_pod("p-b1", node_name="node-b", labels={"foo": ""})],
        AB,
        [{"node-a": 0, "node-b": 2}],
        [0],
        id="add pod on non-critical node won't trigger re-calculation",
    ),
    pytest.param(
        ON_BOTH,
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        [],
        AX,
        [{"zone1": 1, "zone2": 0}, {"node-a": 1, "node-x": 0}],
        [0, 0],
        id="node a and x both impact topologyKeyToMinPodsMap on zone and node",
    ),
    pytest.param(
        ON_BOTH,
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        [make_pod("p-x1", node_name="node-x", labels={"foo": ""})],
        AX,
        [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-x": 1}],
        [1, 1],
        id="only node a impacts topologyKeyToMinPodsMap on zone and node",
    ),
    pytest.param(
        ON_BOTH,
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        [
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
        ],
        ABX,
        [{"zone1": 3, "zone2": 1}, {"node-a": 1, "node-b": 2, "node-x": 1}],
        [1, 1],
        id="node a impacts the minimum on node, node x on zone",
    ),
    pytest.param(
        SPLIT,
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        [
            make_pod("p-b1", node_name="node-b", labels={"foo": "", "bar": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": "", "bar": ""}),
            make_pod("p-x2", node_name="node-x", labels={"bar": ""}),
        ],
        ABX,
        [{"zone1": 2, "zone2": 1}, {"node-a": 0, "node-b": 1, "node-x": 2}],
        [1, 0],
        id="Constraints hold different labelSelectors, node a impacts the minimum on zone",
    ),
    pytest.param(
        SPLIT,
        make_pod("p-a1", node_name="node-a", labels={"foo": "", "bar": ""}),
        [
            make_pod("p-b1", node_name="node-b", labels={"bar": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": "", "bar": ""}),
            make_pod("p-x2", node_name="node-x", labels={"bar": ""}),
        ],
        ABX,
        [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-b": 1, "node-x": 2}],
        [1, 1],
        id="Constraints hold different labelSelectors, node a impacts both minimums",
    ),
    pytest.param(
        AVOID_FOO_BAR,
        make_pod("p-a1", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
        [
            make_pod("p-a2", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
        ],
        AFFINITY_NODES,
        [{"zone2": 1}],
        [1],
        id="add a pod when scheduling node affinity unmatched pod",
    ),
    pytest.param(
        ON_ZONE,
        make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
        ],
        AFFINITY_NODES,
        [{"zone1": 1, "zone2": 2}],
        [1],
        id="add a pod when scheduling node affinity matched pod",
    ),
    pytest.param(
        ON_ZONE,
        make_pod("p-b1", node_name="node-b"),
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
        ],
        AFFINITY_NODES,
        [{"zone1": 1, "zone2": 1}],
        [1],
        id="add a label selector not matched pod",
    ),
    pytest.param(
        toleration(ON_ZONE, "node.kubernetes.io/unschedulable"),
        make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
        ],
        TAINTED,
        [{"zone1": 1, "zone2": 2}],
        [1],
        id="add a pod when scheduling taint tolerated pod",
    ),
]


@pytest.mark.parametrize(("preemptor", "added", "existing", "nodes", "counts", "minimums"), ADD)
def test_add_pod(preemptor, added, existing, nodes, counts, minimums):
    pl = plugin()
    state, info = pre_filtered(pl, preemptor, table(nodes, existing))
    status = pl.add_pod(state, info, PodInfo.of(added), added.spec.node_name)
    assert status.is_success()
    assert domain_counts(state) == counts
    assert min_matches(state) == minimums


FOUR = [*ABX, zoned("node-y", "zone2")]
ONE_EACH = [make_pod(f"p-{n}1", node_name=f"node-{n}", labels={"foo": ""}) for n in "abxy"]

REMOVE = [
    pytest.param(
        ON_ZONE,
        ABX,
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
        ],
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        [{"zone1": 1, "zone2": 1}],
        [1],
        id="one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
    ),
    pytest.param(
        ON_ZONE,
        FOUR,
        ONE_EACH,
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        [{"zone1": 1, "zone2": 2}],
        [1],
        id="one spreadConstraint on node, topologyKeyToMinPodsMap changed",
    ),
    pytest.param(
        ON_ZONE,
        FOUR,
        [make_pod("p-a0", node_name="node-a", labels={"bar": ""}), *ONE_EACH],
        make_pod("p-a0", node_name="node-a", labels={"bar": ""}),
        [{"zone1": 2, "zone2": 2}],
        [2],
        id="delete an irrelevant pod won't help",
    ),
    pytest.param(
        ON_ZONE,
        FOUR,
        ONE_EACH,
        make_pod("p-a0", node_name="node-a", labels={"bar": ""}),
        [{"zone1": 2, "zone2": 2}],
        [2],
        id="delete a non-existing pod won't help",
    ),
    pytest.param(
        ON_BOTH,
        ABX,
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-a2", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
            make_pod("p-x2", node_name="node-x", labels={"foo": ""}),
        ],
        make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
        [{"zone1": 3, "zone2": 1}, {"node-a": 2, "node-b": 1, "node-x": 1}],
        [1, 1],
        id="two spreadConstraints",
    ),
    pytest.param(
        AVOID_FOO_BAR,
        AFFINITY_NODES,
        [
            make_pod("p-a2", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
        ],
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        [{"zone2": 1}],
        [1],
        id="remove a pod when scheduling node affinity unmatched pod",
    ),
    pytest.param(
        ON_ZONE,
        AFFINITY_NODES,
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
        ],
        make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
        [{"zone1": 1, "zone2": 0}],
        [0],
        id="remove a pod when scheduling node affinity matched pod",
    ),
]


@pytest.mark.parametrize(
    ("preemptor", "nodes", "existing", "removed", "counts", "minimums"), REMOVE
)
def test_remove_pod(preemptor, nodes, existing, removed, counts, minimums):
    pl = plugin()
    state, info = pre_filtered(pl, preemptor, table(nodes, existing))
    status = pl.remove_pod(state, info, PodInfo.of(removed), removed.spec.node_name)
    assert status.is_success()
    assert domain_counts(state) == counts
    assert min_matches(state) == minimums


def test_add_pod_on_an_unknown_node_changes_nothing():
    pl = plugin()
    state, info = pre_filtered(pl, ON_NODE, table(AB))
    pl.add_pod(state, info, PodInfo.of(make_pod("p", node_name="gone", labels={"foo": ""})), "gone")
    assert domain_counts(state) == [{"node-a": 0, "node-b": 0}]


def test_cloned_state_is_independent():
    pl = plugin()
    state, info = pre_filtered(pl, ON_NODE, table(AB))
    copy = state.clone()
    pl.add_pod(
        copy, info, PodInfo.of(make_pod("p-a1", node_name="node-a", labels={"foo": ""})), "node-a"
    )
    assert domain_counts(state) == [{"node-a": 0, "node-b": 0}]
    assert domain_counts(copy) == [{"node-a": 1, "node-b": 0}]


def test_extensions_need_pre_filter_state():
    from services.framework.api.interface import CycleState
    from services.framework.api.status import StatusError

    pl = plugin()
    with pytest.raises(StatusError):
        pl.add_pod(
            CycleState(),
            PodInfo.of(ON_NODE),
            PodInfo.of(make_pod("x", node_name="node-a")),
            "node-a",
        )
