"""The rest of upstream's TestTopologySpreadConstraint
(removepodsviolatingtopologyspreadconstraint/topologyspreadconstraint_test.go): the
cases test_topologyspread.py does not port, case by case with upstream's names and
expectations. Upstream's handle lists the pods sorted by name (so that
``expectedEvictedPods`` is deterministic); so does :func:`run`. Where upstream names
the pods evicted, it checks only that those were evicted (``sets.Difference``), the
count being checked apart; the names are checked the same way here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec
import pytest

from contracts.k8s import (
    Affinity,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)
from services.descheduler.evictions import PodEvictor
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.plugins.topologyspread import (
    RemovePodsViolatingTopologySpreadConstraintArgs as Args,
)
from services.descheduler.plugins.topologyspread import new
from services.descheduler.podutil import Namespaces
from tests.unit.descheduler.support import (
    STAMP,
    build_node,
    build_pod,
    evicted_names,
    run_plugin,
    with_,
)
from tests.unit.descheduler.topologyspread_cases import CASES as PORTED
from tests.unit.descheduler.topologyspread_support import FOO, RS, spread, zone

POD_TEMPLATE_HASH = "pod-template-hash"
"""``appsv1.DefaultDeploymentUniqueLabelKey``."""
ARCH = "kubernetes.io/arch"
"""``v1.LabelArchStable``."""


def constraints(
    max_skew: int, *edits: Callable[[TopologySpreadConstraint], TopologySpreadConstraint]
) -> list[TopologySpreadConstraint]:
    """``getDefaultTopologyConstraints(maxSkew, edits...)``."""
    (constraint,) = spread(max_skew)
    for edit in edits:
        constraint = edit(constraint)
    return [constraint]


def node_constraints(max_skew: int) -> list[TopologySpreadConstraint]:
    """``getDefaultNodeTopologyConstraints``: topology key ``node``."""
    return constraints(max_skew, lambda c: msgspec.structs.replace(c, topology_key="node"))


def hash_constraints(max_skew: int) -> list[TopologySpreadConstraint]:
    """``getDefaultTopologyConstraintsWithPodTemplateHashMatch``."""
    return constraints(
        max_skew, lambda c: msgspec.structs.replace(c, match_label_keys=[POD_TEMPLATE_HASH])
    )


def label_selector(key: str, values: list[str], operator: str) -> LabelSelector:
    """``getLabelSelector``."""
    return LabelSelector(
        match_expressions=[LabelSelectorRequirement(key=key, operator=operator, values=values)]
    )


def required(key: str, operator: str, values: Sequence[str] = ()) -> Affinity:
    """A required node affinity of one term with one expression."""
    requirement = NodeSelectorRequirement(key=key, operator=operator, values=list(values))
    return Affinity(
        node_affinity=NodeAffinity(
            required_during_scheduling_ignored_during_execution=NodeSelector(
                node_selector_terms=[NodeSelectorTerm(match_expressions=[requirement])]
            )
        )
    )


@dataclass
class Pods:
    """``testPodList``."""

    count: int
    node: str
    labels: dict[str, str] = field(default_factory=lambda: dict(FOO))
    constraints: list[TopologySpreadConstraint] = field(default_factory=list)
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: Affinity | None = None
    no_owners: bool = False
    tolerations: list[Toleration] = field(default_factory=list)
    deleting: bool = False


def create(*groups: Pods) -> list[Pod]:
    """``createTestPods``: pod-0, pod-1, … of 100m in namespace ns1."""
    pods, n = [], 0
    for g in groups:
        for _ in range(g.count):
            base = build_pod(f"pod-{n}", 100, 0, g.node, owners=[] if g.no_owners else RS)
            pods.append(
                with_(
                    base,
                    meta_namespace="ns1",
                    meta_labels=dict(g.labels),
                    meta_deletion_timestamp=STAMP if g.deleting else None,
                    spec_topology_spread_constraints=list(g.constraints),
                    spec_node_selector=dict(g.node_selector),
                    spec_affinity=g.affinity,
                    spec_tolerations=list(g.tolerations),
                )
            )
            n += 1
    return pods


def os_nodes(*extra: Node) -> list[Node]:
    """n1-n3 linux (node linNodeA-C), n4-n6 windows (node winNodeA-C)."""
    return [
        *(
            build_node(f"n{i + 1}", labels={"node": f"linNode{c}", "os": "linux"})
            for i, c in enumerate("ABC")
        ),
        *(
            build_node(f"n{i + 4}", labels={"node": f"winNode{c}", "os": "windows"})
            for i, c in enumerate("ABC")
        ),
        *extra,
    ]


def zoned(*names: tuple[str, str], cpu: dict[str, int] | None = None) -> list[Node]:
    """``BuildTestNode(name, cpu, 2000, 9)`` with a zone label."""
    return [build_node(n, (cpu or {}).get(n, 1000), 2000, 9, labels={"zone": z}) for n, z in names]


AB = [zone("n1", "zoneA"), zone("n2", "zoneB")]
TAINT_TEST = Taint(key="taint-test", value="test", effect="NoSchedule")
TAINTED_B = [zone("n1", "zoneA"), zone("n2", "zoneB", taints=[TAINT_TEST])]
ZONE_A = {"zone": "zoneA"}
WHOAMI = {"app": "whoami"}
WHOAMI_SPREAD = [
    TopologySpreadConstraint(
        label_selector=LabelSelector(match_labels=WHOAMI),
        max_skew=1,
        topology_key="topology.kubernetes.io/zone",
        when_unsatisfiable="ScheduleAnyway",
    ),
    TopologySpreadConstraint(
        label_selector=LabelSelector(match_labels=WHOAMI),
        max_skew=1,
        topology_key="kubernetes.io/hostname",
        when_unsatisfiable="DoNotSchedule",
    ),
]
SERVICE = {"app.kubernetes.io/name": "service"}
SERVICE_SPREAD = [
    TopologySpreadConstraint(
        max_skew=1,
        topology_key="kubernetes.io/hostname",
        when_unsatisfiable="DoNotSchedule",
        label_selector=LabelSelector(match_labels=SERVICE),
    )
]
BOTH = ["DoNotSchedule", "ScheduleAnyway"]


def ignore_affinity(c: TopologySpreadConstraint) -> TopologySpreadConstraint:
    return msgspec.structs.replace(c, node_affinity_policy="Ignore")


@dataclass
class Case:
    nodes: list[Node]
    pods: list[Pod]
    count: int
    names: list[str] | None = None
    args: Args = field(default_factory=Args)
    node_fit: bool = False
    differs: tuple[int, str] | None = None
    """Where ksched's documented nodeFit (the scheduler's own filters, README
    "nodeFit through the scheduler's filters") answers otherwise: ksched's count, why."""


CASES: dict[str, Case] = {
    "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (both constraints)": Case(
        AB,
        create(
            Pods(1, "n1", constraints=spread(1, "ScheduleAnyway")),
            Pods(2, "n1"),
            Pods(1, "n2"),
        ),
        1,
        args=Args(constraints=BOTH),
    ),
    # test_topologyspread.py ports this one with constraints [ScheduleAnyway] only;
    # upstream's args allow both.
    "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (soft constraints)": Case(
        AB,
        create(
            Pods(1, "n1", constraints=spread(1, "ScheduleAnyway")),
            Pods(2, "n1"),
            Pods(1, "n2"),
        ),
        1,
        args=Args(constraints=BOTH),
    ),
    # test_topologyspread.py ports this one without upstream's nodeFit: true.
    "2 domains size [2 6], maxSkew=2, can't move any because node1 does not have enough CPU": Case(
        [zone("n1", "zoneA", cpu=200), zone("n2", "zoneB")],
        create(Pods(1, "n1", constraints=constraints(2)), Pods(1, "n1"), Pods(6, "n2")),
        0,
        node_fit=True,
    ),
    "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2], "
    "exclude kube-system namespace": Case(
        AB,
        create(Pods(1, "n1", constraints=constraints(1)), Pods(2, "n1"), Pods(1, "n2")),
        1,
        args=Args(namespaces=Namespaces(exclude=["kube-system"])),
        node_fit=True,
    ),
    "2 domains, sizes [4,0], maxSkew=1, only move 1 pod since pods with nodeSelector "
    "and nodeAffinity aren't evicted": Case(
        AB,
        create(
            Pods(1, "n1", constraints=constraints(1), node_selector=ZONE_A),
            Pods(1, "n1", constraints=constraints(1), node_selector=ZONE_A),
            Pods(1, "n1", constraints=constraints(1), affinity=required("foo", "In", ["bar"])),
            Pods(1, "n1", constraints=constraints(1)),
        ),
        1,
        node_fit=True,
    ),
    "6 domains, sizes [0,0,0,3,3,2], maxSkew=1, No pod is evicted since topology is balanced": Case(
        os_nodes(),
        create(
            Pods(3, "n4", constraints=node_constraints(1), node_selector={"os": "windows"}),
            Pods(3, "n5", constraints=node_constraints(1), node_selector={"os": "windows"}),
            Pods(2, "n6", constraints=node_constraints(1), node_selector={"os": "windows"}),
        ),
        0,
    ),
    "7 domains, sizes [0,0,0,3,3,2], maxSkew=1, two pods are evicted and moved to new "
    "node added": Case(
        os_nodes(build_node("n7", labels={"node": "winNodeD", "os": "windows"})),
        create(
            Pods(3, "n4", constraints=node_constraints(1), node_selector={"os": "windows"}),
            Pods(3, "n5", constraints=node_constraints(1), node_selector={"os": "windows"}),
            Pods(2, "n6", constraints=node_constraints(1), node_selector={"os": "windows"}),
        ),
        2,
    ),
    "6 domains, sizes [0,0,0,4,3,1], maxSkew=1, 1 pod is evicted from node 4": Case(
        os_nodes(),
        create(
            Pods(4, "n4", constraints=node_constraints(1), node_selector={"os": "windows"}),
            Pods(3, "n5", constraints=node_constraints(1), node_selector={"os": "windows"}),
            Pods(1, "n6", constraints=node_constraints(1), node_selector={"os": "windows"}),
        ),
        1,
    ),
    "6 domains, sizes [0,0,0,4,3,1], maxSkew=1, 0 pod is evicted as pods of "
    "node:winNodeA can only be scheduled on this node and nodeFit is true ": Case(
        os_nodes(),
        create(
            Pods(4, "n4", constraints=node_constraints(1), node_selector={"node": "winNodeA"}),
            Pods(3, "n5", constraints=node_constraints(1), node_selector={"os": "windows"}),
            Pods(1, "n6", constraints=node_constraints(1), node_selector={"os": "windows"}),
        ),
        0,
        node_fit=True,
    ),
    "2 domains, sizes [4,0], maxSkew=1, move 2 pods since selector matches multiple nodes": Case(
        [
            build_node("n1", labels={"zone": "zoneA", "region": "boston"}),
            build_node("n2", labels={"zone": "zoneB", "region": "boston"}),
        ],
        create(
            Pods(1, "n1", constraints=constraints(1), node_selector={"region": "boston"}),
            Pods(1, "n1", node_selector={"region": "boston"}),
            Pods(1, "n1", node_selector={"region": "boston"}),
            Pods(1, "n1", node_selector={"region": "boston"}),
        ),
        2,
    ),
    "Multiple constraints (6 nodes/2 zones, 4 pods)": Case(
        [
            build_node(
                f"n{i}",
                labels={
                    "topology.kubernetes.io/zone": "zoneA" if i <= 3 else "zoneB",
                    "kubernetes.io/hostname": f"n{i}",
                },
            )
            for i in range(1, 7)
        ],
        create(*(Pods(1, f"n{i}", labels=WHOAMI, constraints=WHOAMI_SPREAD) for i in range(1, 5))),
        1,
        args=Args(constraints=BOTH),
    ),
    "2 domains, sizes [2,0], maxSkew=1, move 1 pod since pod tolerates the node with taint": Case(
        TAINTED_B,
        create(
            Pods(
                1,
                "n1",
                constraints=constraints(1),
                tolerations=[
                    Toleration(
                        key="taint-test", value="test", operator="Equal", effect="NoSchedule"
                    )
                ],
            ),
            Pods(1, "n1", node_selector=ZONE_A),
        ),
        1,
        ["pod-0"],
    ),
    "2 domains, sizes [2,0], maxSkew=1, move 0 pods since pod does not tolerate the "
    "tainted node": Case(
        TAINTED_B,
        create(Pods(1, "n1", constraints=constraints(1)), Pods(1, "n1", node_selector=ZONE_A)),
        0,
    ),
    "2 domains, sizes [2,0], maxSkew=1, move 0 pods since pod does not tolerate the "
    "tainted node, and NodeFit is enabled": Case(
        TAINTED_B,
        create(Pods(1, "n1", constraints=constraints(1)), Pods(1, "n1", node_selector=ZONE_A)),
        0,
        node_fit=True,
    ),
    "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with PreferNoSchedule Taint": Case(
        [
            zone("n1", "zoneA"),
            zone(
                "n2",
                "zoneB",
                taints=[Taint(key="taint-test", value="test", effect="PreferNoSchedule")],
            ),
        ],
        create(Pods(1, "n1", constraints=constraints(1)), Pods(1, "n1", node_selector=ZONE_A)),
        1,
        ["pod-0"],
    ),
    "2 domains, sizes [2,0], maxSkew=1, move 0 pod for node with unmatched label filtering": Case(
        AB,
        create(Pods(1, "n1", constraints=constraints(1)), Pods(1, "n1")),
        0,
        args=Args(label_selector=label_selector("foo", ["baz"], "In")),
    ),
    "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label filtering": Case(
        AB,
        create(Pods(1, "n1", constraints=constraints(1)), Pods(1, "n1")),
        1,
        ["pod-1"],
        args=Args(label_selector=label_selector("foo", ["bar"], "In")),
    ),
    "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label filtering "
    "(NotIn op)": Case(
        AB,
        create(Pods(1, "n1", constraints=constraints(1)), Pods(1, "n1")),
        1,
        ["pod-1"],
        args=Args(label_selector=label_selector("foo", ["baz"], "NotIn")),
    ),
    "2 domains, sizes [2,0], maxSkew=1, move 1 pods given matchLabelKeys on same replicaset": Case(
        AB,
        create(
            Pods(1, "n1", {**FOO, POD_TEMPLATE_HASH: "foo"}, hash_constraints(1)),
            Pods(1, "n1", {**FOO, POD_TEMPLATE_HASH: "foo"}, hash_constraints(1)),
        ),
        1,
        ["pod-1"],
        args=Args(label_selector=label_selector("foo", ["baz"], "NotIn")),
    ),
    "2 domains, sizes [2,0], maxSkew=1, move 0 pods given matchLabelKeys on two "
    "different replicasets": Case(
        AB,
        create(
            Pods(1, "n1", {**FOO, POD_TEMPLATE_HASH: "foo"}, hash_constraints(1)),
            Pods(1, "n1", {**FOO, POD_TEMPLATE_HASH: "bar"}, hash_constraints(1)),
        ),
        0,
        args=Args(label_selector=label_selector("foo", ["baz"], "NotIn")),
    ),
    "2 domains, sizes [4,2], maxSkew=1, 2 pods in termination; nothing should be moved": Case(
        AB,
        create(
            Pods(2, "n1", constraints=constraints(1)),
            Pods(2, "n1", constraints=constraints(1), deleting=True),
            Pods(2, "n2", constraints=constraints(1)),
        ),
        0,
        args=Args(label_selector=label_selector("foo", ["bar"], "In")),
    ),
    "3 domains, sizes [2,3,4], maxSkew=1, NodeFit is enabled, and not enough cpu on "
    "zoneA; nothing should be moved": Case(
        zoned(("n1", "zoneA"), ("n2", "zoneB"), ("n3", "zoneC"), cpu={"n1": 250}),
        create(
            Pods(2, "n1", constraints=constraints(1)),
            Pods(3, "n2", constraints=constraints(1)),
            Pods(4, "n3", constraints=constraints(1)),
        ),
        0,
        node_fit=True,
    ),
    "3 domains, sizes [2,3,4], maxSkew=1, args.NodeFit is false, and not enough cpu on "
    "zoneA; 1 should be moved to force scale-up": Case(
        zoned(("n1", "zoneA"), ("n2", "zoneB"), ("n3", "zoneC"), cpu={"n1": 250}),
        create(
            Pods(2, "n1", constraints=constraints(1)),
            Pods(3, "n2", constraints=constraints(1)),
            Pods(4, "n3", constraints=constraints(1)),
        ),
        1,
        args=Args(topology_balance_node_fit=False),
        node_fit=True,
        differs=(
            0,
            "upstream's NodeFit lets pod-8 go to n2 (cpu fits); ksched's nodeFit runs the "
            "scheduler's filters, and PodTopologySpread refuses n2 (zoneB 4 vs zoneA 2)",
        ),
    ),
    "3 domains, sizes [[1,0], [1,1], [2,1]], maxSkew=1, NodeFit is enabled, and not "
    "enough cpu on ZoneA; nothing should be moved": Case(
        zoned(
            ("A1", "zoneA"),
            ("B1", "zoneB"),
            ("C1", "zoneC"),
            ("A2", "zoneA"),
            ("B2", "zoneB"),
            ("C2", "zoneC"),
            cpu={"A1": 150, "A2": 50},
        ),
        create(
            Pods(1, "A1", constraints=constraints(1)),
            Pods(1, "B1", constraints=constraints(1)),
            Pods(1, "B2", constraints=constraints(1)),
            Pods(2, "C1", constraints=constraints(1)),
            Pods(1, "C2", constraints=constraints(1)),
        ),
        0,
        node_fit=True,
    ),
    "2 domains, sizes [[1,4], [2,1]], maxSkew=1, NodeFit is enabled; should move 1": Case(
        zoned(("A1", "zoneA"), ("A2", "zoneA"), ("B1", "zoneB"), ("B2", "zoneB")),
        create(
            Pods(1, "A1", constraints=constraints(1)),
            Pods(4, "A2", constraints=constraints(1)),
            Pods(2, "B1", constraints=constraints(1)),
            Pods(1, "B2", constraints=constraints(1)),
        ),
        1,
        ["pod-4"],
        node_fit=True,
    ),
    "2 domains, sizes [3, 1], maxSkew=1, Tainted nodes; nothing should be moved": Case(
        [
            build_node(
                "controlplane1",
                labels={"zone": "zoneA", "kubernetes.io/hostname": "cp-1"},
                taints=[
                    Taint(
                        effect="NoSchedule",
                        key="node-role.kubernetes.io/controlplane",
                        value="true",
                    ),
                    Taint(effect="NoSchedule", key="node-role.kubernetes.io/etcd", value="true"),
                ],
            ),
            build_node(
                "infraservices1",
                labels={
                    "zone": "zoneA",
                    "infra_service": "true",
                    "kubernetes.io/hostname": "infra-1",
                },
                taints=[Taint(effect="NoSchedule", key="infra_service")],
            ),
            build_node(
                "app1",
                labels={"zone": "zoneA", "app_service": "true", "kubernetes.io/hostname": "app-1"},
            ),
            build_node(
                "app2",
                labels={"zone": "zoneB", "app_service": "true", "kubernetes.io/hostname": "app-2"},
            ),
        ],
        create(
            Pods(
                2,
                "app1",
                SERVICE,
                SERVICE_SPREAD,
                affinity=required("app_service", "Exists"),
            ),
            Pods(
                2,
                "app2",
                SERVICE,
                SERVICE_SPREAD,
                affinity=required("app_service", "Exists"),
            ),
        ),
        0,
        node_fit=True,
    ),
    "3 domains, sizes [2, 1, 0] with selectors, maxSkew=1, nodeTaintsPolicy=Ignore, "
    "should move 1 for [1, 1, 1]": Case(
        [
            build_node("A1", 1000, 2000, 9, labels={"zone": "zoneA", ARCH: "arm64"}),
            build_node("B1", 1000, 2000, 9, labels={"zone": "zoneB", ARCH: "arm64"}),
            build_node("C1", 1000, 2000, 9, labels={"zone": "zoneC", ARCH: "arm64"}),
        ],
        create(
            Pods(
                1,
                "A1",
                constraints=constraints(1, ignore_affinity),
                node_selector={ARCH: "arm64"},
            ),
            Pods(
                1,
                "A1",
                constraints=constraints(1, ignore_affinity),
                node_selector={"zone": "zoneA", ARCH: "arm64"},
            ),
            Pods(
                1,
                "B1",
                constraints=constraints(1, ignore_affinity),
                node_selector={ARCH: "arm64"},
            ),
        ),
        1,
        ["pod-0"],
    ),
}


def run(case: Case) -> PodEvictor:
    """Upstream's loop: DefaultEvictorArgs{NodeFit: tc.nodeFit}, the args defaulted
    (``SetDefaults_…``), Balance over every node, pods listed sorted by name."""
    return run_plugin(
        new,
        case.args.defaulted(),
        case.nodes,
        sorted(case.pods, key=lambda p: p.metadata.name),
        evictor_args=DefaultEvictorArgs(node_fit=case.node_fit),
        balance=True,
    )


@pytest.mark.parametrize(
    "case",
    list(CASES.values()),
    ids=CASES.keys(),
)
def test_topology_spread_constraint(case: Case) -> None:
    evictor = run(case)
    if case.differs is not None:
        assert evictor.total_evicted == case.differs[0], case.differs[1]
        return
    assert evictor.total_evicted == case.count
    if case.names is not None:
        assert set(case.names) <= set(evicted_names(evictor))


def test_cases_are_upstreams_remaining() -> None:
    """With test_topologyspread.py's (topologyspread_cases.py), upstream's 38 cases; two
    of its ports are ported again here with upstream's exact setup (args, nodeFit)."""
    again = set(CASES) & set(PORTED)
    assert again == {
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (soft constraints)",
        "2 domains size [2 6], maxSkew=2, can't move any because node1 does not have enough CPU",
    }
    assert len(set(CASES) | set(PORTED)) == 38
