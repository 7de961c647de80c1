"""Upstream's TestRequiredAffinitySingleNode (filtering_test.go), case by case.

Upstream's pods live in namespace "" (``defaultNamespace``); here that is "default".
"""

from __future__ import annotations

import pytest

from contracts.k8s import LabelSelector
from services.framework.api.status import SKIP, SUCCESS, Code, Status
from tests.builders import make_node
from tests.unit.framework.plugins.interpodaffinity.support import (
    does_not_exist,
    exists,
    in_,
    not_in,
    pod,
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


def existing(**kwargs):
    return pod(node="node1", **kwargs)


CASES = [
    (
        "no required pod affinity and no existing pods",
        pod(),
        [],
        SKIP,
        None,
    ),
    (
        "In operator matches the existing pod",
        pod(labels=POD_LABEL2, affinity=[term("region", in_("service", "securityscan", "value2"))]),
        [existing(labels=POD_LABEL)],
        SUCCESS,
        None,
    ),
    (
        "NotIn operator matches the existing pod",
        pod(
            labels=POD_LABEL2,
            affinity=[term("region", not_in("service", "securityscan3", "value3"))],
        ),
        [existing(labels=POD_LABEL)],
        SUCCESS,
        None,
    ),
    (
        "different namespace does not satisfy the affinity",
        pod(
            labels=POD_LABEL2,
            affinity=[
                term("", in_("service", "securityscan", "value2"), namespaces=["DiffNameSpace"])
            ],
        ),
        [existing(namespace="ns", labels=POD_LABEL)],
        SUCCESS,
        AFFINITY,
    ),
    (
        "unmatching label selector",
        pod(labels=POD_LABEL, affinity=[term("", in_("service", "antivirusscan", "value2"))]),
        [existing(labels=POD_LABEL)],
        SUCCESS,
        AFFINITY,
    ),
    (
        "different operators in several required terms",
        pod(
            labels=POD_LABEL2,
            affinity=[
                term("region", exists("service"), does_not_exist("wrongkey")),
                term("region", in_("service", "securityscan"), not_in("service", "WrongValue")),
            ],
        ),
        [existing(labels=POD_LABEL)],
        SUCCESS,
        None,
    ),
    (
        "requirements are ANDed: one expression does not match",
        pod(
            labels=POD_LABEL2,
            affinity=[
                term("region", exists("service"), does_not_exist("wrongkey")),
                term("region", in_("service", "securityscan2"), not_in("service", "WrongValue")),
            ],
        ),
        [existing(labels=POD_LABEL)],
        SUCCESS,
        AFFINITY,
    ),
    (
        "affinity and anti-affinity both satisfied",
        pod(
            labels=POD_LABEL2,
            affinity=[term("region", in_("service", "securityscan", "value2"))],
            anti=[term("node", in_("service", "antivirusscan", "value2"))],
        ),
        [existing(labels=POD_LABEL)],
        SUCCESS,
        None,
    ),
    (
        "affinity, anti-affinity and anti-affinity symmetry satisfied",
        pod(
            labels=POD_LABEL2,
            affinity=[term("region", in_("service", "securityscan", "value2"))],
            anti=[term("node", in_("service", "antivirusscan", "value2"))],
        ),
        [
            existing(
                labels=POD_LABEL, anti=[term("node", in_("service", "antivirusscan", "value2"))]
            )
        ],
        SUCCESS,
        None,
    ),
    (
        "affinity satisfied but not anti-affinity",
        pod(
            labels=POD_LABEL2,
            affinity=[term("region", in_("service", "securityscan", "value2"))],
            anti=[term("zone", in_("service", "securityscan", "value2"))],
        ),
        [existing(labels=POD_LABEL)],
        SUCCESS,
        ANTI,
    ),
    (
        "affinity and anti-affinity satisfied but not anti-affinity symmetry",
        pod(
            labels=POD_LABEL,
            affinity=[term("region", in_("service", "securityscan", "value2"))],
            anti=[term("node", in_("service", "antivirusscan", "value2"))],
        ),
        [existing(labels=POD_LABEL, anti=[term("zone", in_("service", "securityscan", "value2"))])],
        SUCCESS,
        EXISTING,
    ),
    (
        "pod does not match its own affinity and the matching pod is elsewhere",
        pod(
            labels=POD_LABEL, affinity=[term("region", not_in("service", "securityscan", "value2"))]
        ),
        [pod(labels={"service": "securityscan"}, node="node2")],
        SUCCESS,
        AFFINITY,
    ),
    (
        "existing anti-affinity applies to a pod without anti-affinity",
        pod(labels=POD_LABEL),
        [existing(labels=POD_LABEL, anti=[term("zone", in_("service", "securityscan", "value2"))])],
        SUCCESS,
        EXISTING,
    ),
    (
        "existing anti-affinity that does not select the pod: Skip",
        pod(labels=POD_LABEL),
        [
            existing(
                labels=POD_LABEL, anti=[term("zone", not_in("service", "securityscan", "value2"))]
            )
        ],
        SKIP,
        None,
    ),
    (
        "anti-affinity against the existing pod fails before its symmetry",
        pod(
            labels=POD_LABEL,
            anti=[term("region", exists("service")), term("region", exists("security"))],
        ),
        [existing(labels=POD_LABEL2, anti=[term("zone", exists("security"))])],
        SUCCESS,
        ANTI,
    ),
    (
        "symmetry a1: partial matches on both sides",
        pod(
            labels=POD_LABEL,
            anti=[term("zone", exists("service")), term("zone", exists("security"))],
        ),
        [existing(labels=POD_LABEL2, anti=[term("zone", exists("security"))])],
        SUCCESS,
        ANTI,
    ),
    (
        "symmetry a2: partial matches on both sides",
        pod(labels=POD_LABEL2, anti=[term("zone", exists("security"))]),
        [
            existing(
                labels=POD_LABEL,
                anti=[term("zone", exists("service")), term("zone", exists("security"))],
            )
        ],
        SUCCESS,
        EXISTING,
    ),
    (
        "symmetry b1: partial matches on both sides",
        pod(
            labels={"abc": "", "xyz": ""},
            anti=[term("zone", exists("abc")), term("zone", exists("def"))],
        ),
        [
            existing(
                labels={"def": "", "xyz": ""},
                anti=[term("zone", exists("abc")), term("zone", exists("def"))],
            )
        ],
        SUCCESS,
        ANTI,
    ),
    (
        "symmetry b2: partial matches on both sides",
        pod(
            labels={"def": "", "xyz": ""},
            anti=[term("zone", exists("abc")), term("zone", exists("def"))],
        ),
        [
            existing(
                labels={"abc": "", "xyz": ""},
                anti=[term("zone", exists("abc")), term("zone", exists("def"))],
            )
        ],
        SUCCESS,
        ANTI,
    ),
    (
        "invalid label value in the first affinity term fails PreFilter",
        pod(
            labels=POD_LABEL,
            affinity=[
                term("region", in_("service", "{{.bad-value.}}")),
                term("node", in_("service", "antivirusscan", "value2")),
            ],
        ),
        [],
        Status(Code.UnschedulableAndUnresolvable, (BAD_VALUE,)),
        None,
    ),
    (
        "invalid label value in the second affinity term fails PreFilter",
        pod(
            labels=POD_LABEL,
            affinity=[
                term("region", in_("service", "foo")),
                term("node", in_("service", "{{.bad-value.}}")),
            ],
        ),
        [],
        Status(Code.UnschedulableAndUnresolvable, (BAD_VALUE,)),
        None,
    ),
    (
        "affinity with a namespace selector",
        pod(
            labels=POD_LABEL2,
            affinity=[
                term(
                    "region",
                    in_("service", "securityscan", "value2"),
                    namespace_selector=TEAM1,
                )
            ],
        ),
        [existing(namespace="subteam1.team1", labels=POD_LABEL)],
        SUCCESS,
        None,
    ),
    (
        "affinity with a non-matching namespace selector",
        pod(
            labels=POD_LABEL2,
            affinity=[
                term(
                    "region",
                    in_("service", "securityscan", "value2"),
                    namespace_selector=TEAM1,
                )
            ],
        ),
        [existing(namespace="subteam1.team2", labels=POD_LABEL)],
        SUCCESS,
        AFFINITY,
    ),
    (
        "anti-affinity with a matching namespace selector",
        pod(
            namespace="subteam1.team1",
            labels=POD_LABEL2,
            anti=[term("zone", in_("service", "securityscan", "value2"), namespace_selector=TEAM1)],
        ),
        [existing(namespace="subteam2.team1", labels=POD_LABEL)],
        SUCCESS,
        ANTI,
    ),
    (
        "anti-affinity with an empty namespace selector (all namespaces)",
        pod(
            namespace="subteam1.team1",
            labels=POD_LABEL2,
            anti=[
                term(
                    "zone",
                    in_("service", "securityscan", "value2"),
                    namespace_selector=LabelSelector(),
                )
            ],
        ),
        [existing(namespace="subteam2.team1", labels=POD_LABEL)],
        SUCCESS,
        ANTI,
    ),
    (
        "anti-affinity with a non-matching namespace selector",
        pod(
            namespace="subteam1.team1",
            labels=POD_LABEL2,
            anti=[term("zone", in_("service", "securityscan", "value2"), namespace_selector=TEAM1)],
        ),
        [existing(namespace="subteam1.team2", labels=POD_LABEL)],
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
