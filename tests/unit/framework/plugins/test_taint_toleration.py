"""TaintToleration, from upstream's taint_toleration_test.go (Filter and Score tables)."""

from __future__ import annotations

import pytest

from services.framework.api.events import QueueingHint
from services.framework.api.status import Code, Status
from services.framework.plugins.tainttoleration import (
    ERR_REASON_UNTOLERATED,
    TaintToleration,
    after_node_change,
    after_pod_toleration_change,
)
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.basic_plugins import filter_statuses, scores, tol

UNTOLERATED = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_UNTOLERATED,))
PREFER = "PreferNoSchedule"


@pytest.mark.parametrize(
    ("tolerations", "taints", "fits"),
    [
        pytest.param((), [("dedicated", "user1", "NoSchedule")], False, id="no tolerations"),
        pytest.param(
            [tol("dedicated", "Equal", "user1", "NoSchedule")],
            [("dedicated", "user1", "NoSchedule")],
            True,
            id="tolerated dedicated node",
        ),
        pytest.param(
            [tol("dedicated", "Equal", "user2", "NoSchedule")],
            [("dedicated", "user1", "NoSchedule")],
            False,
            id="other user's dedicated node",
        ),
        pytest.param(
            [tol("foo", "Exists", effect="NoSchedule")],
            [("foo", "bar", "NoSchedule")],
            True,
            id="operator Exists",
        ),
        pytest.param(
            [
                tol("dedicated", "Equal", "user2", "NoSchedule"),
                tol("foo", "Exists", effect="NoSchedule"),
            ],
            [("dedicated", "user2", "NoSchedule"), ("foo", "bar", "NoSchedule")],
            True,
            id="every taint tolerated",
        ),
        pytest.param(
            [tol("foo", "Equal", "bar", PREFER)],
            [("foo", "bar", "NoSchedule")],
            False,
            id="effect differs",
        ),
        pytest.param(
            [tol("foo", "Equal", "bar")],
            [("foo", "bar", "NoSchedule")],
            True,
            id="empty effect tolerates every effect",
        ),
        pytest.param(
            [tol("dedicated", "Equal", "user2", "NoSchedule")],
            [("dedicated", "user1", PREFER)],
            True,
            id="PreferNoSchedule is not filtered",
        ),
        pytest.param((), [("dedicated", "user1", PREFER)], True, id="no toleration, soft taint"),
        pytest.param(
            [tol(operator="Exists")],
            [("a", "b", "NoSchedule"), ("c", "", "NoExecute")],
            True,
            id="empty key with Exists tolerates all",
        ),
        pytest.param(
            [tol(operator="Equal", value="b", effect="NoSchedule")],
            [("a", "b", "NoSchedule")],
            True,
            id="empty key with Equal matches any key with the value",
        ),
        pytest.param((), [("a", "b", "NoExecute")], False, id="NoExecute is filtered"),
        pytest.param(
            [tol("a", "Equal", "b", "NoSchedule")],
            [("a", "b", "NoSchedule"), ("a", "b", "NoExecute")],
            False,
            id="second taint untolerated",
        ),
        pytest.param(
            [tol("a", "Lt", "5", "NoSchedule")],
            [("a", "3", "NoSchedule")],
            False,
            id="Lt is an alpha operator, off by default",
        ),
        pytest.param(
            [tol("a", "Exists", "ignored")],
            [("a", "x", "NoSchedule")],
            True,
            id="Exists ignores the value",
        ),
    ],
)
def test_filter(tolerations, taints, fits):
    node = make_node("n", taints=taints)
    statuses = filter_statuses(TaintToleration(), make_pod(tolerations=tolerations), [node])
    assert statuses == [None if fits else UNTOLERATED]


@pytest.mark.parametrize(
    ("tolerations", "node_taints", "expected"),
    [
        pytest.param(
            [tol("foo", "Equal", "bar", PREFER)],
            [[("foo", "bar", PREFER)], [("foo", "blah", PREFER)]],
            [100, 0],
            id="tolerated taints score higher",
        ),
        pytest.param(
            [tol("cpu-type", "Equal", "arm64", PREFER), tol("disk-type", "Equal", "ssd", PREFER)],
            [
                [],
                [("cpu-type", "arm64", PREFER)],
                [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
            ],
            [100, 100, 100],
            id="all tolerated, however many",
        ),
        pytest.param(
            [tol("foo", "Equal", "bar", PREFER)],
            [
                [],
                [("cpu-type", "arm64", PREFER)],
                [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
            ],
            [100, 50, 0],
            id="more intolerable taints, lower score",
        ),
        pytest.param(
            [tol("cpu-type", "Equal", "arm64", "NoSchedule"), tol("disk-type", "Equal", "ssd")],
            [
                [],
                [("cpu-type", "arm64", "NoSchedule")],
                [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
            ],
            [100, 100, 0],
            id="only PreferNoSchedule taints and tolerations count",
        ),
        pytest.param(
            (),
            [[], [("cpu-type", "arm64", PREFER)]],
            [100, 0],
            id="no taints and tolerations",
        ),
    ],
)
def test_score(tolerations, node_taints, expected):
    nodes = [make_node(f"n{i}", taints=t) for i, t in enumerate(node_taints)]
    assert scores(TaintToleration(), make_pod(tolerations=tolerations), nodes) == expected


def test_score_without_pre_score_matches():
    nodes = [make_node("a"), make_node("b", taints=[("x", "", PREFER)])]
    plugin, pod = TaintToleration(), make_pod()
    assert scores(plugin, pod, nodes, pre_score=False) == scores(plugin, pod, nodes)


def test_filter_mask_is_reused_until_a_node_changes():
    nodes = [make_node("a", taints=[("k", "v", "NoSchedule")]), make_node("b")]
    pod = make_pod(tolerations=[tol("other", "Exists")])
    assert filter_statuses(TaintToleration(), pod, nodes) == [UNTOLERATED, None]
    assert filter_statuses(TaintToleration(), pod, nodes) == [UNTOLERATED, None]


def test_queueing_hints():
    pod = make_pod(tolerations=[tol("k", "Equal", "v", "NoSchedule")])
    tainted = make_node("n", taints=[("k", "other", "NoSchedule")])
    fine = make_node("n", taints=[("k", "v", "NoSchedule")])
    assert after_node_change(pod, None, fine) == QueueingHint.Queue
    assert after_node_change(pod, None, tainted) == QueueingHint.QueueSkip
    assert after_node_change(pod, tainted, fine) == QueueingHint.Queue
    assert after_node_change(pod, fine, fine) == QueueingHint.QueueSkip
    assert after_pod_toleration_change(pod, pod, pod) == QueueingHint.Queue
    other = make_pod("other")
    assert after_pod_toleration_change(pod, other, other) == QueueingHint.QueueSkip
