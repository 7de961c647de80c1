"""PreScore / Score / NormalizeScore: upstream's TestPodTopologySpreadScore,
TestPreScoreStateEmptyNodes and TestPreScoreSkip tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.common.k8s.labels import label_selector_as_selector
from services.framework.api.interface import CycleState
from services.framework.api.status import Code
from services.framework.api.types import PodInfo
from services.framework.plugins.podtopologyspread.scoring import (
    PRE_SCORE_STATE_KEY,
    PreScoreState,
    go_round,
)
from tests.builders import make_node, make_pod
from tests.builders.workloads import make_replica_set, make_service
from tests.unit.framework.plugins.podtopologyspread.helpers import (
    BAR,
    FOO,
    HOSTNAME,
    UNSCHEDULABLE_TAINT,
    ZONE,
    exists,
    labels,
    node_affinity,
    node_selector,
    owned_by,
    plugin,
    spread,
    table,
)

SA, DNS = "ScheduleAnyway", "DoNotSchedule"
FOO_POD = make_pod("p", labels={"foo": ""})
RS1_FOO = make_replica_set("rs1", FOO)


def host(name: str, **extra: str) -> object:
    return make_node(name, labels={HOSTNAME: name, **extra})


def zone_host(name: str, zone: str) -> object:
    return make_node(name, labels={HOSTNAME: name, "zone": zone})


def pods_on(**per_node: int) -> list:
    """``pods_on(a=2, b=1)``: matching ``foo`` pods p-a1, p-a2 on node-a, p-b1 on node-b."""
    return [
        make_pod(f"p-{n}{i}", node_name=f"node-{n}", labels={"foo": ""})
        for n, k in per_node.items()
        for i in range(1, k + 1)
    ]


HOSTS = [host(f"node-{n}") for n in "abcd"]
POLICY_NODES = [
    make_node("node-a", labels={"node": "node-a", "foo": ""}),
    make_node("node-b", labels={"node": "node-b", "foo": ""}),
    make_node("node-c", labels={"node": "node-c"}),
]
TAINTED_NODES = [
    make_node("node-a", labels={"node": "node-a"}),
    make_node("node-b", labels={"node": "node-b"}),
    make_node("node-c", labels={"node": "node-c"}, taints=[UNSCHEDULABLE_TAINT]),
]
ZONES_ABCD = [zone_host(f"node-{n}", f"zone{z}") for n, z in zip("abcd", "1122", strict=True)]
ZONES_ABXY = [zone_host(f"node-{n}", f"zone{z}") for n, z in zip("abxy", "1122", strict=True)]
SPLIT_PODS = [
    make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
    make_pod("p-b1", node_name="node-b", labels={"foo": "", "bar": ""}),
    make_pod("p-y1", node_name="node-y", labels={"foo": ""}),
    make_pod("p-y2", node_name="node-y", labels={"bar": ""}),
]
FOO_ZONE_BAR_HOST = spread(
    spread(make_pod("p", labels={"foo": "", "bar": ""}), 1, "zone", SA, FOO), 1, HOSTNAME, SA, BAR
)

SCORES = [
    pytest.param(
        spread(FOO_POD, 1, HOSTNAME, SA, FOO),
        [],
        HOSTS[:2],
        [],
        [100, 100],
        id="one constraint on node, no existing pods",
    ),
    pytest.param(
        spread(FOO_POD, 1, HOSTNAME, SA, FOO),
        pods_on(a=2, b=1),
        HOSTS[:1],
        HOSTS[1:2],
        [100],
        id="one constraint on node, only one node is candidate",
    ),
    pytest.param(
        spread(FOO_POD, 1, HOSTNAME, SA, FOO),
        pods_on(a=1, b=1),
        HOSTS[:2],
        [],
        [100, 100],
        id="one constraint on node, all nodes have the same number of matching pods",
    ),
    pytest.param(
        spread(FOO_POD, 1, HOSTNAME, SA, FOO),
        pods_on(a=2, b=1, d=3),
        HOSTS,
        [],
        [20, 60, 100, 0],
        id="one constraint on node, all 4 nodes are candidates",
    ),
    pytest.param(
        spread(FOO_POD, 1, HOSTNAME, SA, None),
        pods_on(a=2, b=1, d=3),
        HOSTS,
        [],
        [100, 100, 100, 100],
        id="one constraint on node, null selector",
    ),
    pytest.param(
        spread(FOO_POD, 2, HOSTNAME, SA, FOO),
        pods_on(a=2, b=1, d=3),
        HOSTS,
        [],
        [33, 66, 100, 16],
        id="one constraint on node, all 4 nodes are candidates, maxSkew=2",
    ),
    pytest.param(
        spread(FOO_POD, 3, HOSTNAME, SA, FOO),
        pods_on(a=4, b=3, c=2, d=1),
        HOSTS,
        [],
        [44, 66, 77, 100],
        id="one constraint on node, all 4 nodes are candidates, maxSkew=3",
    ),
    pytest.param(
        spread(FOO_POD, 1, HOSTNAME, SA, FOO),
        pods_on(a=4, b=2, x=1, y=3),
        [host("node-a"), host("node-b"), host("node-x")],
        [host("node-y")],
        [33, 83, 100],
        id="one constraint on node, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        spread(FOO_POD, 1, HOSTNAME, SA, FOO),
        pods_on(a=4, b=2, x=1, y=3),
        [host("node-a"), make_node("node-b", labels={"n": "node-b"}), host("node-x")],
        [host("node-y")],
        [16, 0, 100],
        id="one constraint on node, 3 out of 4 nodes are candidates, one lacks the key",
    ),
    pytest.param(
        spread(FOO_POD, 1, "zone", SA, FOO),
        pods_on(a=4, b=2, x=1, y=3),
        ZONES_ABXY[:3],
        ZONES_ABXY[3:],
        [75, 75, 100],
        id="one constraint on zone, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        spread(spread(FOO_POD, 1, "zone", SA, FOO), 1, HOSTNAME, SA, FOO),
        pods_on(a=2, b=1, x=2, y=4),
        [ZONES_ABXY[0], ZONES_ABXY[2]],
        [ZONES_ABXY[1], ZONES_ABXY[3]],
        [100, 63],
        id="two Constraints on zone and node, 2 out of 4 nodes are candidates",
    ),
    pytest.param(
        FOO_ZONE_BAR_HOST,
        SPLIT_PODS,
        ZONES_ABXY,
        [],
        [60, 20, 100, 60],
        id="two Constraints on zone and node, with different labelSelectors",
    ),
    pytest.param(
        FOO_ZONE_BAR_HOST,
        [
            make_pod("p-b1", node_name="node-b", labels={"bar": ""}),
            make_pod("p-x1", node_name="node-x", labels={"foo": ""}),
            make_pod("p-y1", node_name="node-y", labels={"foo": "", "bar": ""}),
        ],
        ZONES_ABXY,
        [],
        [100, 60, 40, 0],
        id="two Constraints on zone and node, with different labelSelectors, some nodes 0 pods",
    ),
    pytest.param(
        FOO_ZONE_BAR_HOST,
        SPLIT_PODS,
        ZONES_ABXY[:3],
        ZONES_ABXY[3:],
        [50, 25, 100],
        id="two Constraints on zone and node, with different labelSelectors, 3 of 4 candidates",
    ),
    pytest.param(
        spread(FOO_POD, 1, HOSTNAME, SA, FOO),
        [
            make_pod("p-a1", "ns1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-a2", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": ""}),
            make_pod("p-b2", node_name="node-b", labels={"foo": ""}),
        ],
        HOSTS[:2],
        [],
        [100, 33],
        id="existing pods in a different namespace do not count",
    ),
    pytest.param(
        spread(FOO_POD, 1, HOSTNAME, SA, FOO),
        [
            make_pod("p-a", node_name="node-a", labels={"foo": ""}, terminating=True),
            make_pod("p-b", node_name="node-b", labels={"foo": ""}),
        ],
        HOSTS[:2],
        [],
        [100, 0],
        id="terminating Pods should be excluded",
    ),
    pytest.param(
        spread(FOO_POD, 2, "node", SA, FOO, min_domains=10),
        pods_on(a=2, b=2, c=1),
        [make_node(n, labels={"node": n}) for n in ("node-a", "node-b", "node-c")],
        [],
        [75, 75, 100],
        id="minDomains has no effect when ScheduleAnyway",
    ),
    pytest.param(
        node_selector(spread(FOO_POD, 1, "node", SA, FOO), foo=""),
        pods_on(a=2, b=1, c=1),
        POLICY_NODES,
        [],
        [0, 33, 100],
        id="NodeAffinityPolicy honored with labelSelectors",
    ),
    pytest.param(
        node_selector(spread(FOO_POD, 1, "node", SA, FOO, affinity_policy="Ignore"), foo=""),
        pods_on(a=2, b=1, c=1),
        POLICY_NODES,
        [],
        [66, 100, 100],
        id="NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        node_affinity(spread(FOO_POD, 1, "node", SA, FOO), "foo", "In", [""]),
        pods_on(a=2, b=1, c=1),
        POLICY_NODES,
        [],
        [0, 33, 100],
        id="NodeAffinityPolicy honored with nodeAffinity",
    ),
    pytest.param(
        node_affinity(
            spread(FOO_POD, 1, "node", SA, FOO, affinity_policy="Ignore"), "foo", "In", [""]
        ),
        pods_on(a=2, b=1, c=1),
        POLICY_NODES,
        [],
        [66, 100, 100],
        id="NodeAffinityPolicy ignored with nodeAffinity",
    ),
    pytest.param(
        spread(FOO_POD, 1, "node", SA, FOO, taints_policy="Honor"),
        pods_on(a=2, b=1, c=1),
        TAINTED_NODES,
        [],
        [0, 33, 100],
        id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        spread(FOO_POD, 1, "node", SA, FOO),
        pods_on(a=2, b=1, c=1),
        TAINTED_NODES,
        [],
        [66, 100, 100],
        id="NodeTaintsPolicy ignored",
    ),
    pytest.param(
        spread(
            spread(
                make_pod("p", labels={"foo": "", "bar": ""}),
                1,
                "zone",
                SA,
                labels(),
                match_label_keys=["foo"],
            ),
            1,
            HOSTNAME,
            SA,
            labels(),
            match_label_keys=["bar"],
        ),
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": "", "bar": ""}),
            make_pod("p-y1", node_name="node-c", labels={"foo": ""}),
            make_pod("p-y2", node_name="node-c", labels={"bar": ""}),
        ],
        ZONES_ABCD,
        [],
        [60, 20, 60, 100],
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
    ),
    pytest.param(
        spread(
            spread(make_pod("p", labels={"foo": "", "bar": "", "baz": ""}), 1, "zone", SA, FOO),
            1,
            HOSTNAME,
            SA,
            BAR,
            match_label_keys=["baz"],
        ),
        [
            make_pod("p-a1", node_name="node-a", labels={"foo": ""}),
            make_pod("p-b1", node_name="node-b", labels={"foo": "", "bar": "", "baz": ""}),
            make_pod("p-c1", node_name="node-c", labels={"foo": ""}),
            make_pod("p-c2", node_name="node-c", labels={"bar": ""}),
            make_pod("p-d3", node_name="node-c", labels={"bar": "", "baz": ""}),
        ],
        ZONES_ABCD,
        [],
        [60, 20, 60, 100],
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
    ),
]


def scored(pl, incoming, existing, candidates, failed):
    """PreScore, Score and NormalizeScore over ``candidates`` (``failed`` nodes exist
    but did not pass Filter)."""
    nodes = table([*candidates, *failed], existing)
    rows = np.arange(len(candidates), dtype=np.intp)
    state, info = CycleState(), PodInfo.of(incoming)
    status = pl.pre_score(state, info, nodes, rows)
    assert status.is_success(), status
    raw = pl.score_all(state, info, nodes, rows)
    return state, raw, pl.normalize_score(state, info, raw)


@pytest.mark.parametrize(("incoming", "existing", "candidates", "failed", "want"), SCORES)
def test_score(incoming, existing, candidates, failed, want):
    _, _, normalized = scored(plugin("System"), incoming, existing, candidates, failed)
    assert normalized.tolist() == want


def pre_score_state(pl, incoming, nodes) -> PreScoreState:
    state, _, _ = scored(pl, incoming, [], nodes, [])
    return state.read(PRE_SCORE_STATE_KEY, PreScoreState)


def weight(size: int) -> float:
    return math.log(size + 2)


def test_pre_score_state_weights_and_ignored_nodes():
    nodes = [zone_host("node-a", "zone1"), zone_host("node-b", "zone1"), host("node-x")]
    incoming = spread(spread(FOO_POD, 1, "zone", SA, FOO), 1, HOSTNAME, SA, BAR)
    built = pre_score_state(plugin(), incoming, nodes)
    assert built.ignored.tolist() == [False, False, True]
    assert [p.weight for p in built.parts] == [weight(1), weight(2)]


def test_system_defaulting_nodes_without_zone_pods_match_service():
    """Upstream's "system defaulting, nodes don't have zone, pods match service": the
    Service's selector spreads the pod, with the scores of one spreading constraint."""
    objects = [make_service("s1", {"foo": ""})]
    existing = pods_on(a=4, b=3, c=2, d=1)
    _, _, normalized = scored(plugin("System", objects=objects), FOO_POD, existing, HOSTS, [])
    assert normalized.tolist() == [44, 66, 77, 100]


def test_system_defaults_count_nodes_without_a_zone_as_one_more_zone():
    """Upstream's "system default constraints and a replicaset"."""
    incoming = owned_by(make_pod("p", labels={"foo": "tar", "baz": "sup"}), "ReplicaSet", "rs1")
    nodes = [
        make_node("node-a", labels={HOSTNAME: "node-a", ZONE: "mars"}),
        make_node("node-b", labels={HOSTNAME: "node-b", ZONE: "mars"}),
        host("node-c"),
        host("node-d"),
    ]
    built = pre_score_state(plugin("System", objects=[RS1_FOO]), incoming, nodes)
    assert [(c.topology_key, c.max_skew) for c in built.constraints] == [(HOSTNAME, 3), (ZONE, 5)]
    assert {c.selector for c in built.constraints} == {label_selector_as_selector(FOO)}
    assert built.ignored.tolist() == [False] * 4
    assert [p.weight for p in built.parts] == [weight(4), weight(2)]


def test_list_defaults_keep_their_soft_constraints():
    """Upstream's "default constraints and a replicaset"."""
    defaults = [
        {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA},
        {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": DNS},
        {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA},
    ]
    incoming = owned_by(make_pod("p", labels={"foo": "tar", "baz": "sup"}), "ReplicaSet", "rs1")
    nodes = [make_node("node-a", labels={"rack": "rack1", "planet": "mars", HOSTNAME: "node-a"})]
    built = pre_score_state(plugin("List", defaults, [RS1_FOO]), incoming, nodes)
    assert [(c.topology_key, c.max_skew) for c in built.constraints] == [
        (HOSTNAME, 1),
        ("planet", 2),
    ]
    assert [p.weight for p in built.parts] == [weight(1), weight(1)]


@pytest.mark.parametrize(
    "incoming",
    [
        pytest.param(make_pod("p"), id="the pod doesn't have soft topology spread constraints"),
        pytest.param(
            make_pod("p", labels={"foo": "bar"}), id="default constraints and no controller"
        ),
        pytest.param(
            owned_by(make_pod("p", labels={"foo": "bar", "baz": "sup"}), "ReplicaSet", "rs2"),
            id="default constraints and a replicaset that doesn't match",
        ),
        pytest.param(spread(FOO_POD, 1, "zone", DNS, FOO), id="only hard constraints"),
    ],
)
def test_pre_score_skip(incoming):
    defaults = [{"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA}]
    pl = plugin("List", defaults, [make_replica_set("rs1", exists("tar"))])
    nodes = table([host("node-a"), host("node-b")])
    rows = np.arange(2, dtype=np.intp)
    assert pl.pre_score(CycleState(), PodInfo.of(incoming), nodes, rows).code == Code.Skip


def test_go_round_halves_away_from_zero():
    values = np.array([0.5, 1.5, 2.5, 2.4999999999999996, 0.49999999999999994, 3.0, -0.5])
    assert go_round(values).tolist() == [1, 2, 3, 2, 0, 3, -1]
