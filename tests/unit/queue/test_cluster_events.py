"""Classifying pod and node updates into upstream's ActionTypes, event matching and
metric labels."""

from __future__ import annotations

import pytest

from contracts.k8s import NodeCondition, Toleration
from services.framework.api.events import ActionType, ClusterEvent, EventResource
from services.queue.cluster_events import (
    ASSIGNED_POD_DELETE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    NODE_ADD,
    UNSCHEDULED_POD_ADD,
    label,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from tests.builders import make_node, make_pod
from tests.unit.queue.helpers import with_

A, R = ActionType, EventResource
POD = make_pod("p", requests={"cpu": "1", "memory": "1Gi"}, labels={"app": "a"})
NODE = make_node("n", labels={"zone": "a"})


@pytest.mark.parametrize(
    ("new", "actions"),
    [
        (with_(POD, metadata__labels={"app": "b"}), [A.UpdatePodLabel]),
        (
            make_pod("p", requests={"cpu": "500m", "memory": "1Gi"}, labels={"app": "a"}),
            [A.UpdatePodScaleDown],
        ),
        (make_pod("p", requests={"cpu": "1"}, labels={"app": "a"}), [A.UpdatePodScaleDown]),
        (make_pod("p", requests={"cpu": "2", "memory": "1Gi"}, labels={"app": "a"}), [A.Update]),
        (with_(POD, spec__tolerations=[Toleration(operator="Exists")]), [A.UpdatePodToleration]),
        (with_(POD, status__phase="Pending"), [A.Update]),
        (with_(POD, metadata__annotations={"a": "b"}), [A.Update]),
        (
            with_(POD, metadata__labels={}, spec__tolerations=[Toleration(operator="Exists")]),
            [A.UpdatePodLabel, A.UpdatePodToleration],
        ),
    ],
)
def test_pod_updates_become_the_most_specific_events(new, actions) -> None:  # type: ignore[no-untyped-def]
    events = pod_scheduling_properties_change(new, POD)
    assert events == [ClusterEvent(R.UnschedulablePod, a) for a in actions]


def test_gates_eliminated_only_when_the_last_gate_goes() -> None:
    gated = make_pod("p", scheduling_gates=("a", "b"))
    one_left = make_pod("p", scheduling_gates=("b",))
    assert pod_scheduling_properties_change(one_left, gated) == [
        ClusterEvent(R.UnschedulablePod, A.Update)
    ]
    free = make_pod("p")
    assert pod_scheduling_properties_change(free, one_left) == [
        ClusterEvent(R.UnschedulablePod, A.UpdatePodSchedulingGatesEliminated)
    ]


def test_an_assigned_pod_update_is_an_assigned_pod_event() -> None:
    old = make_pod("p", node_name="n", labels={"a": "1"})
    new = make_pod("p", node_name="n", labels={"a": "2"})
    assert pod_scheduling_properties_change(new, old) == [
        ClusterEvent(R.AssignedPod, A.UpdatePodLabel)
    ]


@pytest.mark.parametrize(
    ("new", "actions"),
    [
        (with_(NODE, metadata__labels={"zone": "b"}), [A.UpdateNodeLabel]),
        (
            with_(NODE, status__allocatable={"cpu": "8", "memory": "32Gi", "pods": 110}),
            [A.UpdateNodeAllocatable],
        ),
        (with_(NODE, status__allocatable={"cpu": "4000m", "memory": "32Gi", "pods": "110"}), []),
        (
            make_node("n", labels={"zone": "a"}, taints=[("k", "v", "NoSchedule")]),
            [A.UpdateNodeTaint],
        ),
        (
            with_(NODE, status__conditions=[NodeCondition(type="Ready", status="True")]),
            [A.UpdateNodeCondition],
        ),
        (with_(NODE, metadata__annotations={"a": "b"}), [A.UpdateNodeAnnotation]),
        (NODE, []),
    ],
)
def test_node_updates_become_the_most_specific_events(new, actions) -> None:  # type: ignore[no-untyped-def]
    assert node_scheduling_properties_change(new, NODE) == [
        ClusterEvent(R.Node, a) for a in actions
    ]


def test_a_condition_whose_reason_changed_is_no_event() -> None:
    before = with_(
        NODE, status__conditions=[NodeCondition(type="Ready", status="True", reason="a")]
    )
    after = with_(NODE, status__conditions=[NodeCondition(type="Ready", status="True", reason="b")])
    assert node_scheduling_properties_change(after, before) == []


def test_uncordoning_is_a_taint_update_cordoning_is_not() -> None:
    cordoned = make_node("n", unschedulable=True)
    open_ = make_node("n")
    assert node_scheduling_properties_change(open_, cordoned) == [
        ClusterEvent(R.Node, A.UpdateNodeTaint)
    ]
    assert node_scheduling_properties_change(cordoned, open_) == []


@pytest.mark.parametrize(
    ("registered", "incoming", "matches"),
    [
        (
            ClusterEvent(R.Node, A.Add | A.UpdateNodeLabel),
            ClusterEvent(R.Node, A.UpdateNodeLabel),
            True,
        ),
        (ClusterEvent(R.Node, A.Add), ClusterEvent(R.Node, A.UpdateNodeLabel), False),
        (ClusterEvent(R.Node, A.Update), ClusterEvent(R.Node, A.UpdateNodeLabel), True),
        # A generic update only matches who registered every update.
        (ClusterEvent(R.Pod, A.UpdatePodLabel), ClusterEvent(R.UnschedulablePod, A.Update), False),
        (ClusterEvent(R.Pod, A.Add | A.Update), ClusterEvent(R.UnschedulablePod, A.Update), True),
        (ClusterEvent(R.Pod, A.Delete), ClusterEvent(R.AssignedPod, A.Delete), True),
        (ClusterEvent(R.AssignedPod, A.Delete), ClusterEvent(R.UnschedulablePod, A.Delete), False),
        (ClusterEvent(R.WildCard, A.All), ClusterEvent(R.Node, A.UpdateNodeCondition), True),
        (ClusterEvent(R.Node, A.All), EVENT_UNSCHEDULABLE_TIMEOUT, False),
        (ClusterEvent(R.WildCard, A.Add), ClusterEvent(R.Node, A.Add), True),
    ],
)
def test_match_cluster_events(registered, incoming, matches) -> None:  # type: ignore[no-untyped-def]
    assert registered.matches(incoming) is matches


@pytest.mark.parametrize(
    ("event", "text"),
    [
        (NODE_ADD, "NodeAdd"),
        (ASSIGNED_POD_DELETE, "AssignedPodDelete"),
        (UNSCHEDULED_POD_ADD, "UnschedulablePodAdd"),
        (ClusterEvent(R.UnschedulablePod, A.Update), "UnschedulablePodUpdate"),
        (ClusterEvent(R.Node, A.UpdateNodeLabel), "NodeUpdateNodeLabel"),
        (ClusterEvent(R.PersistentVolumeClaim, A.Add), "PersistentVolumeClaimAdd"),
        (ClusterEvent(R.StorageClass, A.Update), "storage.k8s.io/StorageClassUpdate"),
        (EVENT_UNSCHEDULABLE_TIMEOUT, "UnschedulableTimeout"),
    ],
)
def test_labels_are_upstreams(event: ClusterEvent, text: str) -> None:
    assert label(event) == text
