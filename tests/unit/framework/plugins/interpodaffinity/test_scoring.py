"""Upstream's TestPreferredAffinity and TestPreferredAffinityWithHardPodAffinitySymmetricWeight
(scoring_test.go): the exact normalized scores. Namespace "" upstream is "default" here."""

from __future__ import annotations

import pytest

from contracts.k8s import Affinity, LabelSelector, PodAffinity, WeightedPodAffinityTerm
from services.framework.api.status import Code
from services.framework.plugins.interpodaffinity import InterPodAffinityArgs
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.interpodaffinity.support import (
    does_not_exist,
    exists,
    fresh,
    in_,
    not_in,
    run_score,
    term,
    with_affinity,
)

RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
TEAM1 = LabelSelector(match_expressions=[in_("team", "team1")])


def preferred(*weighted: tuple[int, object], anti: bool = False) -> Affinity:
    terms = [WeightedPodAffinityTerm(weight=w, pod_affinity_term=t) for w, t in weighted]
    group = PodAffinity(preferred_during_scheduling_ignored_during_execution=terms)
    return Affinity(pod_anti_affinity=group) if anti else Affinity(pod_affinity=group)


STAY_WITH_S1_IN_REGION = preferred((5, term("region", in_("security", "S1"))))
STAY_WITH_S2_IN_REGION = preferred((6, term("region", in_("security", "S2"))))
AFFINITY3 = preferred(
    (8, term("region", not_in("security", "S1"), in_("security", "S2"))),
    (2, term("region", exists("security"), does_not_exist("wrongkey"))),
)
HARD_AFFINITY = Affinity(
    pod_affinity=PodAffinity(
        required_during_scheduling_ignored_during_execution=[
            term("region", in_("security", "S1", "value2")),
            term("region", exists("security"), does_not_exist("wrongkey")),
        ]
    )
)
AWAY_FROM_S1_IN_AZ = preferred((5, term("az", in_("security", "S1"))), anti=True)
AWAY_FROM_S2_IN_AZ = preferred((5, term("az", in_("security", "S2"))), anti=True)
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = Affinity(
    pod_affinity=preferred((8, term("region", in_("security", "S1")))).pod_affinity,
    pod_anti_affinity=AWAY_FROM_S2_IN_AZ.pod_anti_affinity,
)
NS_SELECTOR_TERM = term(
    "region", in_("security", "S1"), namespaces=["subteam2.team2"], namespace_selector=TEAM1
)
AFFINITY_NAMESPACE_SELECTOR = preferred((5, NS_SELECTOR_TERM))
ANTI_AFFINITY_NAMESPACE_SELECTOR = preferred((5, NS_SELECTOR_TERM), anti=True)
INVALID_AFFINITY = preferred((8, term("region", in_("security", "{{.bad-value.}}"))))
INVALID_ANTI_AFFINITY = preferred((5, term("az", in_("security", "{{.bad-value.}}"))), anti=True)


def p(labels=None, node_name=None, affinity=None, namespace="default"):
    made = make_pod(fresh(), namespace, labels=labels, node_name=node_name)
    return with_affinity(made, affinity) if affinity is not None else made


def nodes(*specs: tuple[str, dict[str, str]]):
    return [make_node(name, labels=labels) for name, labels in specs]


SKIP = "Skip"
CASES = [
    (
        "all nodes are the same priority when affinity is nil",
        p(S1),
        [],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)),
        SKIP,
        False,
    ),
    (
        "matching topology key and pods scores high",
        p(S1, affinity=STAY_WITH_S1_IN_REGION),
        [p(S1, "node1"), p(S2, "node2"), p(S1, "node3")],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)),
        [100, 0, 0],
        False,
    ),
    (
        "nodes sharing the topology value of a matching pod score the same",
        p(affinity=STAY_WITH_S1_IN_REGION),
        [p(S1, "node1")],
        nodes(("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)),
        [100, 100, 0],
        False,
    ),
    (
        "the region with more matching pods scores high",
        p(S1, affinity=STAY_WITH_S2_IN_REGION),
        [
            p(S2, "node1"),
            p(S2, "node1"),
            p(S2, "node2"),
            p(S2, "node3"),
            p(S2, "node4"),
            p(S2, "node5"),
        ],
        nodes(
            ("node1", RG_CHINA),
            ("node2", RG_INDIA),
            ("node3", RG_CHINA),
            ("node4", RG_CHINA),
            ("node5", RG_INDIA),
        ),
        [100, 0, 100, 100, 0],
        False,
    ),
    (
        "different label operators and values, some not matching",
        p(S1, affinity=AFFINITY3),
        [p(S1, "node1"), p(S2, "node2"), p(S1, "node3")],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)),
        [20, 100, 0],
        False,
    ),
    (
        "affinity symmetry: existing pods' preferred affinity",
        p(S2),
        [p(S1, "node1", STAY_WITH_S1_IN_REGION), p(S2, "node2", STAY_WITH_S2_IN_REGION)],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)),
        [0, 100, 0],
        False,
    ),
    (
        "affinity symmetry with a namespace selector",
        p(S1, namespace="subteam1.team1"),
        [p(S1, "node1", AFFINITY_NAMESPACE_SELECTOR), p(S2, "node2", STAY_WITH_S2_IN_REGION)],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)),
        [100, 0, 0],
        False,
    ),
    (
        "anti-affinity symmetry with a namespace selector",
        p(S1, namespace="subteam1.team1"),
        [p(S1, "node1", ANTI_AFFINITY_NAMESPACE_SELECTOR), p(S2, "node2", STAY_WITH_S2_IN_REGION)],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)),
        [0, 100, 100],
        False,
    ),
    (
        "affinity symmetry: existing pods' required affinity",
        p(S1),
        [p(S1, "node1", HARD_AFFINITY), p(S2, "node2", HARD_AFFINITY)],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)),
        [100, 100, 0],
        False,
    ),
    (
        "anti-affinity: the node of a matching pod scores low",
        p(S1, affinity=AWAY_FROM_S1_IN_AZ),
        [p(S1, "node1"), p(S2, "node2")],
        nodes(("node1", AZ1), ("node2", RG_CHINA)),
        [0, 100],
        False,
    ),
    (
        "anti-affinity: a node without the topology key scores high",
        p(S1, affinity=AWAY_FROM_S1_IN_AZ),
        [p(S1, "node1"), p(S1, "node2")],
        nodes(("node1", AZ1), ("node2", RG_CHINA)),
        [0, 100],
        False,
    ),
    (
        "anti-affinity: the node with more matching pods scores low",
        p(S1, affinity=AWAY_FROM_S1_IN_AZ),
        [p(S1, "node1"), p(S1, "node1"), p(S2, "node2")],
        nodes(("node1", AZ1), ("node2", RG_INDIA)),
        [0, 100],
        False,
    ),
    (
        "anti-affinity symmetry",
        p(S2),
        [p(S1, "node1", AWAY_FROM_S2_IN_AZ), p(S2, "node2", AWAY_FROM_S1_IN_AZ)],
        nodes(("node1", AZ1), ("node2", AZ2)),
        [0, 100],
        False,
    ),
    (
        "preferred affinity and anti-affinity",
        p(S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [p(S1, "node1"), p(S1, "node2")],
        nodes(("node1", RG_CHINA), ("node2", AZ1)),
        [100, 0],
        False,
    ),
    (
        "affinity and anti-affinity with the pod's own kind",
        p(S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            p(S1, "node1"),
            p(S1, "node1"),
            p(S1, "node2"),
            p(S1, "node3"),
            p(S1, "node3"),
            p(S1, "node4"),
            p(S1, "node5"),
        ],
        nodes(
            ("node1", RG_CHINA_AZ1),
            ("node2", RG_INDIA),
            ("node3", RG_CHINA),
            ("node4", RG_CHINA),
            ("node5", RG_INDIA),
        ),
        [100, 0, 100, 100, 0],
        False,
    ),
    (
        "affinity, anti-affinity and symmetry together",
        p(S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            p(S1, "node1"),
            p(S2, "node2"),
            p(None, "node3", STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            p(None, "node4", AWAY_FROM_S1_IN_AZ),
        ],
        nodes(("node1", RG_CHINA), ("node2", AZ1), ("node3", RG_INDIA), ("node4", AZ2)),
        [100, 0, 100, 0],
        False,
    ),
    (
        "no panic when only some nodes of a topology have pods with affinity",
        p(S1),
        [p(S1, "node1"), p(None, "node2", STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        nodes(("node1", RG_CHINA), ("node2", RG_CHINA)),
        [0, 0],
        False,
    ),
    (
        "pods matching the namespace selector",
        p(S1, affinity=AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            p(S1, "node1", namespace="subteam1.team1"),
            p(S1, "node1", namespace="subteam1.team1"),
            p(S1, "node1", namespace="subteam1.team2"),
            p(S1, "node2", namespace="subteam2.team1"),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [100, 0],
        False,
    ),
    (
        "pods matching both the namespace selector and namespaces",
        p(S1, affinity=AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            p(S1, "node1", namespace="subteam1.team1"),
            p(S1, "node1", namespace="subteam1.team1"),
            p(S1, "node1", namespace="subteam2.team2"),
            p(S1, "node2", namespace="subteam2.team1"),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [100, 0],
        False,
    ),
    (
        "anti-affinity with pods matching the namespace selector",
        p(S1, affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            p(S1, "node1", namespace="subteam1.team1"),
            p(S1, "node1", namespace="subteam1.team1"),
            p(S1, "node1", namespace="subteam1.team2"),
            p(S1, "node2", namespace="subteam2.team1"),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [0, 100],
        False,
    ),
    (
        "anti-affinity with pods matching the namespace selector and namespaces",
        p(S1, affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            p(S1, "node1", namespace="subteam1.team1"),
            p(S1, "node1", namespace="subteam1.team1"),
            p(S1, "node1", namespace="subteam2.team2"),
            p(S1, "node2", namespace="subteam2.team1"),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [0, 100],
        False,
    ),
    (
        "ignore preferred terms of existing pods",
        p(S2),
        [
            p(S1, "node1", STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            p(S2, "node2", STAY_WITH_S2_IN_REGION),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        SKIP,
        True,
    ),
    (
        "do not ignore preferred terms of existing pods",
        p(S2),
        [
            p(S1, "node1", STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            p(S2, "node2", STAY_WITH_S2_IN_REGION),
        ],
        nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [0, 100],
        False,
    ),
    ("no nodes to score", p(S2), [], [], SKIP, False),
]


@pytest.mark.parametrize(
    ("incoming", "pods", "node_list", "want", "ignore_preferred"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_preferred_affinity(incoming, pods, node_list, want, ignore_preferred):
    args = InterPodAffinityArgs(
        hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=ignore_preferred
    )
    status, scores = run_score(incoming, pods, node_list, args)
    if want == SKIP:
        assert status.code == Code.Skip
    else:
        assert status.is_success()
        assert scores == want


@pytest.mark.parametrize("affinity", [INVALID_AFFINITY, INVALID_ANTI_AFFINITY])
def test_invalid_preferred_terms_fail_pre_score(affinity):
    status, _ = run_score(p(affinity=affinity), [], nodes(("node1", RG_CHINA), ("node2", RG_CHINA)))
    assert status.code == Code.Error
    assert 'Invalid value: "{{.bad-value.}}"' in status.message()


HARD_POD_AFFINITY = Affinity(
    pod_affinity=PodAffinity(
        required_during_scheduling_ignored_during_execution=[
            term(
                "region",
                in_("service", "S1"),
                namespaces=["default", "subteam2.team2"],
                namespace_selector=TEAM1,
            )
        ]
    )
)
SERVICE_S1 = {"service": "S1"}
HARD_CASES = [
    ("with default weight", "default", 1, [100, 100, 0]),
    ("with zero weight", "default", 0, SKIP),
    ("with no matching namespace", "subteam1.team2", 1, SKIP),
    ("with matching namespace selector", "subteam1.team1", 1, [100, 100, 0]),
    ("with matching namespaces", "subteam2.team2", 1, [100, 100, 0]),
]


@pytest.mark.parametrize(
    ("namespace", "weight", "want"), [pytest.param(*c[1:], id=c[0]) for c in HARD_CASES]
)
def test_hard_pod_affinity_symmetric_weight(namespace, weight, want):
    existing = [p(None, "node1", HARD_POD_AFFINITY), p(None, "node2", HARD_POD_AFFINITY)]
    node_list = nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1))
    args = InterPodAffinityArgs(hard_pod_affinity_weight=weight)
    status, scores = run_score(p(SERVICE_S1, namespace=namespace), existing, node_list, args)
    if want == SKIP:
        assert status.code == Code.Skip
    else:
        assert status.is_success()
        assert scores == want
