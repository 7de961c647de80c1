"""NodeUnschedulable, from upstream's node_unschedulable_test.go."""

from __future__ import annotations

import pytest

from services.framework.api.events import QueueingHint
from services.framework.api.status import Code, Status
from services.framework.plugins.nodeunschedulable import (
    ERR_REASON_UNSCHEDULABLE,
    NodeUnschedulable,
    after_node_change,
    after_pod_toleration_change,
)
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.basic_plugins import filter_statuses, tol

REJECTED = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_UNSCHEDULABLE,))
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "fits"),
    [
        pytest.param(True, (), False, id="cordoned node"),
        pytest.param(False, (), True, id="schedulable node"),
        pytest.param(
            True, [tol(UNSCHEDULABLE, "Exists", effect="NoSchedule")], True, id="tolerated cordon"
        ),
        pytest.param(True, [tol(operator="Exists")], True, id="tolerate everything"),
        pytest.param(
            True, [tol(UNSCHEDULABLE, "Exists", effect="NoExecute")], False, id="wrong effect"
        ),
    ],
)
def test_filter(unschedulable, tolerations, fits):
    node = make_node("n", unschedulable=unschedulable)
    statuses = filter_statuses(NodeUnschedulable(), make_pod(tolerations=tolerations), [node])
    assert statuses == [None if fits else REJECTED]


def test_queueing_hints():
    pod = make_pod()
    cordoned, open_ = make_node("n", unschedulable=True), make_node("n")
    assert after_node_change(pod, None, open_) == QueueingHint.Queue
    assert after_node_change(pod, None, cordoned) == QueueingHint.QueueSkip
    assert after_node_change(pod, cordoned, open_) == QueueingHint.Queue
    assert after_node_change(pod, open_, open_) == QueueingHint.QueueSkip
    tolerant = make_pod(tolerations=[tol(UNSCHEDULABLE, "Exists", effect="NoSchedule")])
    assert after_pod_toleration_change(pod, pod, tolerant) == QueueingHint.Queue
    assert after_pod_toleration_change(pod, tolerant, tolerant) == QueueingHint.QueueSkip
