"""Taints and tolerations: upstream's ``TestTolerationToleratesTaint``
(staging/src/k8s.io/api/core/v1/toleration_test.go); its ``Gt`` / ``Lt`` rows tolerate
nothing here, as upstream with the TaintTolerationComparisonOperators gate off. Then
``FindMatchingUntoleratedTaint`` with and without an inclusion filter."""

from __future__ import annotations

import pytest

from contracts.k8s import Taint, Toleration
from services.common.k8s.taints import (
    find_matching_untolerated_taint,
    taint_key,
    toleration_key,
    tolerations_of,
)
from services.common.k8s.taints import tolerates as toleration_tolerates


def toleration(key: str, operator: str, effect: str = "NoSchedule", value: str = "") -> Toleration:
    return Toleration(key=key, operator=operator, value=value or None, effect=effect)


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Taint:
    return Taint(key=key, value=value or None, effect=effect)


SLA = "node.kubernetes.io/sla"


@pytest.mark.parametrize(
    ("tol", "tnt", "want"),
    [
        pytest.param(toleration("foo", "Exists"), taint("foo"), True, id="exists, no value"),
        pytest.param(
            toleration("foo", "Exists"), taint("foo", "bar"), True, id="exists, some value"
        ),
        pytest.param(toleration("", "Exists"), taint("foo", "bar"), True, id="empty key"),
        pytest.param(
            toleration("foo", "Equal", value="bar"), taint("foo", "bar"), True, id="equal"
        ),
        pytest.param(
            toleration("foo", "Equal", value="value1"),
            taint("foo", "value2"),
            False,
            id="equal, different values",
        ),
        pytest.param(
            toleration("foo", "Equal", value="bar"),
            taint("foo", "bar", "NoExecute"),
            False,
            id="equal, different effects",
        ),
        pytest.param(
            toleration(SLA, "Gt", value="750"), taint(SLA, "950"), False, id="Gt, gate off"
        ),
        pytest.param(
            toleration(SLA, "Lt", value="950"), taint(SLA, "800"), False, id="Lt, gate off"
        ),
    ],
)
def test_toleration_tolerates_taint(tol: Toleration, tnt: Taint, want: bool) -> None:
    assert toleration_tolerates(toleration_key(tol), taint_key(tnt)) is want


def no_schedule_only(t: Taint) -> bool:
    return t.effect == "NoSchedule"


@pytest.mark.parametrize(
    ("tolerations", "taints", "inclusion", "want"),
    [
        pytest.param([], [], None, None, id="empty tolerations tolerate empty taints"),
        pytest.param(
            [toleration("foo", "Exists")], [], None, None, id="non-empty tolerations, no taints"
        ),
        pytest.param(
            [toleration("foo", "Exists")],
            [taint("foo")],
            None,
            None,
            id="tolerations match all taints",
        ),
        pytest.param(
            [toleration("foo", "Exists")],
            [taint("foo"), taint("bar")],
            None,
            1,
            id="the first untolerated taint",
        ),
        pytest.param(
            [],
            [taint("bar", effect="PreferNoSchedule"), taint("baz")],
            no_schedule_only,
            1,
            id="the filter skips a taint",
        ),
        pytest.param(
            [],
            [taint("bar", effect="PreferNoSchedule")],
            no_schedule_only,
            None,
            id="the filter skips every taint",
        ),
    ],
)
def test_find_matching_untolerated_taint(tolerations, taints, inclusion, want) -> None:
    found = find_matching_untolerated_taint(taints, tolerations_of(tolerations), inclusion)
    assert found is (None if want is None else taints[want])
