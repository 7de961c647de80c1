"""Filter: upstream's TestSingleConstraint and TestMultipleConstraints tables, and the
reasons each rejection carries."""

from __future__ import annotations

import pytest

from services.framework.api.status import Code, Status
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.podtopologyspread.helpers import (
    BAR,
    FOO,
    UNSCHEDULABLE_TAINT,
    node_affinity,
    node_selector,
    plugin,
    pre_filtered,
    spread,
    table,
    zoned,
)

DNS = "DoNotSchedule"
OK, NO, NEVER = Code.Success, Code.Unschedulable, Code.UnschedulableAndUnresolvable
FOUR_NODES = [
    zoned("node-a", "zone1"),
    zoned("node-b", "zone1"),
    zoned("node-x", "zone2"),
    zoned("node-y", "zone2"),
]
SPREAD_2103 = [
    make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
    make_pod("p-a2", node_name="node-a", labels={"foo": ""}),
    make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
    make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
    make_pod("p-y2", node_name="node-y", labels={"foo": ""}),
    make_pod("p-y3", node_name="node-y", labels={"foo": ""}),
]
FOO_POD = make_pod("p", labels={"foo": ""})
THREE_NODES = [make_node(n, labels={"node": n}) for n in ("node-a", "node-b", "node-c")]
SPREAD_221 = [
    make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
    make_pod("p-a2", node_name="node-a", labels={"foo": ""}),
    make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
    make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
    make_pod("p-c1", node_name="node-c", labels={"foo": ""}),
]
POLICY_NODES = [
    make_node("node-a", labels={"node": "node-a", "foo": ""}),
    make_node("node-b", labels={"node": "node-b", "foo": ""}),
    make_node("node-x", labels={"node": "node-x", "foo": ""}),
    make_node("node-y", labels={"node": "node-y"}),
]
TAINTED_NODES = [
    *POLICY_NODES[:3],
    make_node("node-y", labels={"node": "node-y"}, taints=[UNSCHEDULABLE_TAINT]),
]
POLICY_PODS = [
    make_pod("p-b1", node_name="node-a", labels={"foo": ""}),
    make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
    make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
]
SPREAD_ZONE_21 = [
    make_pod("p-b1", node_name="node-a", labels={"foo": ""}),
    make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
    make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
]

SINGLE = [
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, FOO), FOUR_NODES, [], [OK, OK, OK, OK], id="no pods"
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, BAR),
        FOUR_NODES,
        [],
        [OK, OK, OK, OK],
        id="no existing pods, incoming pod doesn't match itself",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, FOO),
        FOUR_NODES,
        [
            make_pod("p-a1", "ns1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", "ns2", node_name="node-a", labels={"foo": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
        ],
        [OK, OK, NO, NO],
        id="existing pods in a different namespace do not count",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, None),
        FOUR_NODES,
        [
            make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
        ],
        [OK, OK, OK, OK],
        id="existing pods do not match null selector",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, FOO),
        FOUR_NODES,
        SPREAD_2103,
        [OK, OK, OK, OK],
        id="pods spread across zones as 3/3, all nodes fit",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", DNS, FOO),
        [
            zoned("node-a", "zone1"),
            make_node("node-b", labels={"zon": "zone1", "node": "node-b"}),
            zoned("node-x", "zone2"),
            zoned("node-y", "zone2"),
        ],
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
        ],
        [OK, NEVER, NO, NO],
        id="pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
    ),
    pytest.param(
        spread(FOO_POD, 1, "rack", DNS, FOO),
        [zoned("node-a", "zone1"), zoned("node-x", "zone2")],
        [],
        [NEVER, NEVER],
        id="pod cannot be scheduled as all nodes don't have label 'rack'",
    ),
    pytest.param(
        spread(FOO_POD, 1, "node", DNS, FOO),
        FOUR_NODES,
        SPREAD_2103,
        [NO, NO, OK, NO],
        id="pods spread across nodes as 2/1/0/3, only node-x fits",
    ),
    pytest.param(
        spread(FOO_POD, 2, "node", DNS, FOO),
        FOUR_NODES,
        SPREAD_2103,
        [NO, OK, OK, NO],
        id="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
    ),
    pytest.param(
        spread(make_pod("p", labels={"bar": ""}), 1, "node", DNS, FOO),
        FOUR_NODES,
        SPREAD_2103,
        [NO, OK, OK, NO],
        id="pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
    ),
    pytest.param(
        node_affinity(spread(FOO_POD, 1, "node", DNS, FOO), "node", "In", ["node-a", "node-y"]),
        FOUR_NODES,
        SPREAD_2103,
        [OK, OK, OK, NO],
        id="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
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
        [OK, NO],
        id="terminating Pods should be excluded",
    ),
    pytest.param(
        node_affinity(spread(FOO_POD, 1, "zone", DNS, FOO), "node", "NotIn", ["node-b"]),
        FOUR_NODES,
        [
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
        ],
        [OK, OK, NO, NO],
        id="incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
    ),
    pytest.param(
        spread(FOO_POD, 2, "node", DNS, FOO, min_domains=4),
        THREE_NODES,
        SPREAD_221,
        [NO, NO, OK],
        id="pods spread across nodes as 2/2/1, maxSkew is 2, domains < minDomains",
    ),
    pytest.param(
        spread(FOO_POD, 2, "node", DNS, FOO, min_domains=2),
        THREE_NODES,
        SPREAD_221,
        [OK, OK, OK],
        id="pods spread across nodes as 2/2/1, maxSkew is 2, domains > minDomains",
    ),
    pytest.param(
        spread(FOO_POD, 2, "zone", DNS, FOO, min_domains=3),
        FOUR_NODES,
        SPREAD_ZONE_21,
        [NO, NO, OK, OK],
        id="pods spread across zone as 2/1, maxSkew is 2, domains < minDomains",
    ),
    pytest.param(
        spread(FOO_POD, 2, "zone", DNS, FOO, min_domains=1),
        FOUR_NODES,
        SPREAD_ZONE_21,
        [OK, OK, OK, OK],
        id="pods spread across zone as 2/1, maxSkew is 2, domains > minDomains",
    ),
    pytest.param(
        node_selector(spread(FOO_POD, 1, "node", DNS, FOO), foo=""),
        POLICY_NODES,
        POLICY_PODS,
        [NO, NO, OK, OK],
        id="NodeAffinityPolicy honored with labelSelectors",
    ),
    pytest.param(
        node_selector(spread(FOO_POD, 1, "node", DNS, FOO, affinity_policy="Ignore"), foo=""),
        POLICY_NODES,
        POLICY_PODS,
        [NO, NO, OK, NO],
        id="NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        node_affinity(spread(FOO_POD, 1, "node", DNS, FOO), "foo", "In", [""]),
        POLICY_NODES,
        POLICY_PODS,
        [NO, NO, OK, OK],
        id="NodeAffinityPolicy honored with nodeAffinity",
    ),
    pytest.param(
        node_affinity(
            spread(FOO_POD, 1, "node", DNS, FOO, affinity_policy="Ignore"), "foo", "In", [""]
        ),
        POLICY_NODES,
        POLICY_PODS,
        [NO, NO, OK, NO],
        id="NodeAffinityPolicy ignored with nodeAffinity",
    ),
    pytest.param(
        spread(FOO_POD, 1, "node", DNS, FOO, taints_policy="Honor"),
        TAINTED_NODES,
        POLICY_PODS,
        [NO, NO, OK, OK],
        id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        spread(FOO_POD, 1, "node", DNS, FOO),
        TAINTED_NODES,
        POLICY_PODS,
        [NO, NO, OK, NO],
        id="NodeTaintsPolicy ignored",
    ),
]

MULTIPLE = [
    pytest.param(
        spread(spread(FOO_POD, 1, "zone", DNS, FOO), 1, "node", DNS, FOO),
        FOUR_NODES,
        SPREAD_2103,
        [NO, NO, OK, NO],
        id="two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
    ),
    pytest.param(
        spread(spread(FOO_POD, 1, "zone", DNS, FOO), 1, "node", DNS, FOO),
        FOUR_NODES,
        [*SPREAD_2103, make_pod("p-y4", node_name="node-y", labels={"foo": ""})],
        [NO, NO, NO, NO],
        id="two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
    ),
    pytest.param(
        spread(
            spread(make_pod("p", labels={"foo": "", "bar": ""}), 1, "zone", DNS, FOO),
            1,
            "node",
            DNS,
            BAR,
        ),
        FOUR_NODES,
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"bar": ""}),
        ],
        [NO, NO, OK, NO],
        id="Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
    ),
    pytest.param(
        spread(
            spread(make_pod("p", labels={"foo": "", "bar": ""}), 1, "zone", DNS, FOO),
            1,
            "node",
            DNS,
            BAR,
        ),
        FOUR_NODES,
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-x1", node_name="node-x", labels={"bar": ""}),
            make_pod("p-y1", node_name="node-y", labels={"bar": ""}),
        ],
        [NO, NO, NO, NO],
        id="Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
    ),
    pytest.param(
        spread(
            spread(make_pod("p", labels={"foo": "", "bar": ""}), 1, "zone", DNS, FOO),
            1,
            "node",
            DNS,
            BAR,
        ),
        FOUR_NODES,
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-a2", node_name="node-a", labels={"foo": "", "bar": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
            make_pod("p-y2", node_name="node-y", labels={"foo": "", "bar": ""}),
            make_pod("p-y3", node_name="node-y", labels={"foo": ""}),
        ],
        [NO, OK, NO, NO],
        id="Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
    ),
    pytest.param(
        spread(spread(make_pod("p", labels={"bar": ""}), 1, "zone", DNS, FOO), 1, "node", DNS, BAR),
        FOUR_NODES,
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-x1", node_name="node-x", labels={"bar": ""}),
            make_pod("p-y1", node_name="node-y", labels={"bar": ""}),
        ],
        [OK, OK, NO, NO],
        id="Constraints hold different labelSelectors but pod doesn't match itself on zone",
    ),
    pytest.param(
        spread(spread(FOO_POD, 1, "zone", DNS, FOO), 1, "node", DNS, FOO),
        [
            zoned("node-a", "zone1"),
            zoned("node-b", "zone1"),
            make_node("node-x", labels={"zone": "zone2"}),
            zoned("node-y", "zone2"),
        ],
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-y3", node_name="node-y", labels={"foo": ""}),
        ],
        [NO, OK, NEVER, NO],
        id="two Constraints on zone and node, absence of label 'node' on node-x",
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
            zoned("node-b", "zone1", foo=""),
            zoned("node-x", "zone2", foo=""),
            zoned("node-y", "zone2"),
        ],
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
        ],
        [NO, NO, OK, NO],
        id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
    ),
    pytest.param(
        spread(spread(FOO_POD, 1, "zone", DNS, FOO, taints_policy="Honor"), 1, "node", DNS, FOO),
        [
            zoned("node-a", "zone1", foo=""),
            zoned("node-b", "zone1", foo=""),
            zoned("node-x", "zone2", foo=""),
            make_node(
                "node-y", labels={"zone": "zone2", "node": "node-y"}, taints=[UNSCHEDULABLE_TAINT]
            ),
        ],
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
        ],
        [NO, NO, OK, NO],
        id="two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
    ),
    pytest.param(
        node_selector(spread(spread(FOO_POD, 1, "zone", DNS, FOO), 1, "node", DNS, FOO), foo=""),
        [
            zoned("node-a", "zone1", foo=""),
            zoned("node-b", "zone1"),
            zoned("node-x", "zone2", foo=""),
            make_node(
                "node-y",
                labels={"zone": "zone2", "node": "node-y", "foo": ""},
                taints=[UNSCHEDULABLE_TAINT],
            ),
        ],
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
        ],
        [NO, OK, OK, NO],
        id="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
    ),
]


@pytest.mark.parametrize(("incoming", "nodes", "existing", "want"), [*SINGLE, *MULTIPLE])
def test_filter(incoming, nodes, existing, want):
    nodes_table = table(nodes, existing)
    pl = plugin()
    state, info = pre_filtered(pl, incoming, nodes_table)
    result = pl.filter_all(state, info, nodes_table)
    got = {}
    for row, name in enumerate(nodes_table.names):
        passed = bool(result.passed[row])
        got[name] = OK if passed else result.describe(int(result.codes[row])).code
    assert got == {n.metadata.name: code for n, code in zip(nodes, want, strict=True)}


def test_reasons_are_upstreams():
    nodes = [
        zoned("node-a", "zone1"),
        zoned("node-x", "zone2"),
        make_node("node-z", labels={"node": "node-z"}),
    ]
    existing = [
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        make_pod("p-a2", node_name="node-a", labels={"foo": ""}),
    ]
    nodes_table = table(nodes, existing)
    pl = plugin()
    state, info = pre_filtered(pl, spread(FOO_POD, 1, "zone", DNS, FOO), nodes_table)
    result = pl.filter_all(state, info, nodes_table)
    statuses = [
        None if result.passed[r] else result.describe(int(result.codes[r])) for r in range(3)
    ]
    assert statuses == [
        Status(Code.Unschedulable, ("node(s) didn't match pod topology spread constraints",)),
        None,
        Status(
            Code.UnschedulableAndUnresolvable,
            ("node(s) didn't match pod topology spread constraints (missing required label)",),
        ),
    ]


def test_filter_reads_a_narrower_table_by_label_value():
    """The nominated-pods pass filters a Snapshot of a few rows, whose label codes
    differ from the PreFilter table's: domains are matched by value."""
    nodes = [zoned("node-a", "zone1"), zoned("node-b", "zone2"), zoned("node-c", "zone3")]
    existing = [
        make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
        make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
    ]
    full = table(nodes, existing)
    pl = plugin()
    state, info = pre_filtered(pl, spread(FOO_POD, 1, "zone", DNS, FOO), full)
    view = full.with_pods([1], {})
    result = pl.filter_all(state, info, view)
    assert not result.passed[0]
    view = full.with_pods([2, 0], {})
    assert list(pl.filter_all(state, info, view).passed) == [True, False]
