"""Upstream's TestRequiredAffinitySingleNode (filtering_test.go), case by case.

Upstream's pods live in namespace "" (``defaultNamespace``); here that is "default".
"""

from __future__ import annotations

import pytest

from contracts.k8s import LabelSelector
from services.framework.api.status import SKIP, SUCCESS, Code, Status
from tests.builders import make_node, make_pod
from tests.builders.selectors import pod_affinity
from tests.unit.framework.plugins.interpodaffinity.support import (
    does_not_exist,
    exists,
    fresh,
    in_,
    not_in,
    run_filter,
    term,
)

AFFINITY = Status(Code.UnschedulableAndUnresolvable, ("node(s) didn't match pod affinity rules",))
ANTI = Status(Code.Unschedulable, ("node(s) didn't match pod anti-affinity rules",))
EXISTING = Status(Code.Unschedulable, ("node(s) didn't satisfy existing pods anti-affinity rules",))
BAD_VALUE = (
    'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": '
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = make_node("node1", labels={"region": "r1", "zone": "z11"})
TEAM1 = LabelSelector(match_expressions=[in_("team", "team1")])


CASES = [
    (
        "no required pod affinity and no existing pods",
        make_pod(fresh()),
        [],
        SKIP,
        None,
    ),
    (
        "In operator matches the existing pod",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity([term("region", in_("service", "securityscan", "value2"))]),
        ),
        [make_pod(fresh(), labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        None,
    ),
    (
        "NotIn operator matches the existing pod",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity([term("region", not_in("service", "securityscan3", "value3"))]),
        ),
        [make_pod(fresh(), labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        None,
    ),
    (
        "different namespace does not satisfy the affinity",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity(
                [term("", in_("service", "securityscan", "value2"), namespaces=["DiffNameSpace"])]
            ),
        ),
        [make_pod(fresh(), "ns", labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        AFFINITY,
    ),
    (
        "unmatching label selector",
        make_pod(
            fresh(),
            labels=POD_LABEL,
            affinity=pod_affinity([term("", in_("service", "antivirusscan", "value2"))]),
        ),
        [make_pod(fresh(), labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        AFFINITY,
    ),
    (
        "different operators in several required terms",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity(
                [
                    term("region", exists("service"), does_not_exist("wrongkey")),
                    term("region", in_("service", "securityscan"), not_in("service", "WrongValue")),
                ]
            ),
        ),
        [make_pod(fresh(), labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        None,
    ),
    (
        "requirements are ANDed: one expression does not match",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity(
                [
                    term("region", exists("service"), does_not_exist("wrongkey")),
                    term(
                        "region", in_("service", "securityscan2"), not_in("service", "WrongValue")
                    ),
                ]
            ),
        ),
        [make_pod(fresh(), labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        AFFINITY,
    ),
    (
        "affinity and anti-affinity both satisfied",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity(
                [term("region", in_("service", "securityscan", "value2"))],
                anti=[term("node", in_("service", "antivirusscan", "value2"))],
            ),
        ),
        [make_pod(fresh(), labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        None,
    ),
    (
        "affinity, anti-affinity and anti-affinity symmetry satisfied",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity(
                [term("region", in_("service", "securityscan", "value2"))],
                anti=[term("node", in_("service", "antivirusscan", "value2"))],
            ),
        ),
        [
            make_pod(
                fresh(),
                labels=POD_LABEL,
                node_name="node1",
                affinity=pod_affinity(
                    anti=[term("node", in_("service", "antivirusscan", "value2"))]
                ),
            )
        ],
        SUCCESS,
        None,
    ),
    (
        "affinity satisfied but not anti-affinity",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity(
                [term("region", in_("service", "securityscan", "value2"))],
                anti=[term("zone", in_("service", "securityscan", "value2"))],
            ),
        ),
        [make_pod(fresh(), labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        ANTI,
    ),
    (
        "affinity and anti-affinity satisfied but not anti-affinity symmetry",
        make_pod(
            fresh(),
            labels=POD_LABEL,
            affinity=pod_affinity(
                [term("region", in_("service", "securityscan", "value2"))],
                anti=[term("node", in_("service", "antivirusscan", "value2"))],
            ),
        ),
        [
            make_pod(
                fresh(),
                labels=POD_LABEL,
                node_name="node1",
                affinity=pod_affinity(
                    anti=[term("zone", in_("service", "securityscan", "value2"))]
                ),
            )
        ],
        SUCCESS,
        EXISTING,
    ),
    (
        "pod does not match its own affinity and the matching pod is elsewhere",
        make_pod(
            fresh(),
            labels=POD_LABEL,
            affinity=pod_affinity([term("region", not_in("service", "securityscan", "value2"))]),
        ),
        [make_pod(fresh(), labels={"service": "securityscan"}, node_name="node2")],
        SUCCESS,
        AFFINITY,
    ),
    (
        "existing anti-affinity applies to a pod without anti-affinity",
        make_pod(fresh(), labels=POD_LABEL),
        [
            make_pod(
                fresh(),
                labels=POD_LABEL,
                node_name="node1",
                affinity=pod_affinity(
                    anti=[term("zone", in_("service", "securityscan", "value2"))]
                ),
            )
        ],
        SUCCESS,
        EXISTING,
    ),
    (
        "existing anti-affinity that does not select the pod: Skip",
        make_pod(fresh(), labels=POD_LABEL),
        [
            make_pod(
                fresh(),
                labels=POD_LABEL,
                node_name="node1",
                affinity=pod_affinity(
                    anti=[term("zone", not_in("service", "securityscan", "value2"))]
                ),
            )
        ],
        SKIP,
        None,
    ),
    (
        "anti-affinity against the existing pod fails before its symmetry",
        make_pod(
            fresh(),
            labels=POD_LABEL,
            affinity=pod_affinity(
                anti=[term("region", exists("service")), term("region", exists("security"))]
            ),
        ),
        [
            make_pod(
                fresh(),
                labels=POD_LABEL2,
                node_name="node1",
                affinity=pod_affinity(anti=[term("zone", exists("security"))]),
            )
        ],
        SUCCESS,
        ANTI,
    ),
    (
        "symmetry a1: partial matches on both sides",
        make_pod(
            fresh(),
            labels=POD_LABEL,
            affinity=pod_affinity(
                anti=[term("zone", exists("service")), term("zone", exists("security"))]
            ),
        ),
        [
            make_pod(
                fresh(),
                labels=POD_LABEL2,
                node_name="node1",
                affinity=pod_affinity(anti=[term("zone", exists("security"))]),
            )
        ],
        SUCCESS,
        ANTI,
    ),
    (
        "symmetry a2: partial matches on both sides",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity(anti=[term("zone", exists("security"))]),
        ),
        [
            make_pod(
                fresh(),
                labels=POD_LABEL,
                node_name="node1",
                affinity=pod_affinity(
                    anti=[term("zone", exists("service")), term("zone", exists("security"))]
                ),
            )
        ],
        SUCCESS,
        EXISTING,
    ),
    (
        "symmetry b1: partial matches on both sides",
        make_pod(
            fresh(),
            labels={"abc": "", "xyz": ""},
            affinity=pod_affinity(anti=[term("zone", exists("abc")), term("zone", exists("def"))]),
        ),
        [
            make_pod(
                fresh(),
                labels={"def": "", "xyz": ""},
                node_name="node1",
                affinity=pod_affinity(
                    anti=[term("zone", exists("abc")), term("zone", exists("def"))]
                ),
            )
        ],
        SUCCESS,
        ANTI,
    ),
    (
        "symmetry b2: partial matches on both sides",
        make_pod(
            fresh(),
            labels={"def": "", "xyz": ""},
            affinity=pod_affinity(anti=[term("zone", exists("abc")), term("zone", exists("def"))]),
        ),
        [
            make_pod(
                fresh(),
                labels={"abc": "", "xyz": ""},
                node_name="node1",
                affinity=pod_affinity(
                    anti=[term("zone", exists("abc")), term("zone", exists("def"))]
                ),
            )
        ],
        SUCCESS,
        ANTI,
    ),
    (
        "invalid label value in the first affinity term fails PreFilter",
        make_pod(
            fresh(),
            labels=POD_LABEL,
            affinity=pod_affinity(
                [
                    term("region", in_("service", "{{.bad-value.}}")),
                    term("node", in_("service", "antivirusscan", "value2")),
                ]
            ),
        ),
        [],
        Status(Code.UnschedulableAndUnresolvable, (BAD_VALUE,)),
        None,
    ),
    (
        "invalid label value in the second affinity term fails PreFilter",
        make_pod(
            fresh(),
            labels=POD_LABEL,
            affinity=pod_affinity(
                [
                    term("region", in_("service", "foo")),
                    term("node", in_("service", "{{.bad-value.}}")),
                ]
            ),
        ),
        [],
        Status(Code.UnschedulableAndUnresolvable, (BAD_VALUE,)),
        None,
    ),
    (
        "affinity with a namespace selector",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity(
                [
                    term(
                        "region",
                        in_("service", "securityscan", "value2"),
                        namespace_selector=TEAM1,
                    )
                ]
            ),
        ),
        [make_pod(fresh(), "subteam1.team1", labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        None,
    ),
    (
        "affinity with a non-matching namespace selector",
        make_pod(
            fresh(),
            labels=POD_LABEL2,
            affinity=pod_affinity(
                [
                    term(
                        "region",
                        in_("service", "securityscan", "value2"),
                        namespace_selector=TEAM1,
                    )
                ]
            ),
        ),
        [make_pod(fresh(), "subteam1.team2", labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        AFFINITY,
    ),
    (
        "anti-affinity with a matching namespace selector",
        make_pod(
            fresh(),
            "subteam1.team1",
            labels=POD_LABEL2,
            affinity=pod_affinity(
                anti=[
                    term("zone", in_("service", "securityscan", "value2"), namespace_selector=TEAM1)
                ]
            ),
        ),
        [make_pod(fresh(), "subteam2.team1", labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        ANTI,
    ),
    (
        "anti-affinity with an empty namespace selector (all namespaces)",
        make_pod(
            fresh(),
            "subteam1.team1",
            labels=POD_LABEL2,
            affinity=pod_affinity(
                anti=[
                    term(
                        "zone",
                        in_("service", "securityscan", "value2"),
                        namespace_selector=LabelSelector(),
                    )
                ]
            ),
        ),
        [make_pod(fresh(), "subteam2.team1", labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        ANTI,
    ),
    (
        "anti-affinity with a non-matching namespace selector",
        make_pod(
            fresh(),
            "subteam1.team1",
            labels=POD_LABEL2,
            affinity=pod_affinity(
                anti=[
                    term("zone", in_("service", "securityscan", "value2"), namespace_selector=TEAM1)
                ]
            ),
        ),
        [make_pod(fresh(), "subteam1.team2", labels=POD_LABEL, node_name="node1")],
        SUCCESS,
        None,
    ),
]


@pytest.mark.parametrize(
    ("incoming", "pods", "want_pre_filter", "want_filter"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_required_affinity_single_node(incoming, pods, want_pre_filter, want_filter):
    status, verdicts = run_filter(incoming, pods, [NODE1])
    assert status == want_pre_filter
    if status.is_success():
        assert verdicts == [want_filter]
