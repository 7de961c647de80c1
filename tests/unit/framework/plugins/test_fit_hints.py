"""NodeResourcesFit's registered events and queueing hints (fit.go's isSchedulableAfter*)."""

from __future__ import annotations

import msgspec
import pytest

from contracts.k8s import PodStatus
from services.framework.api.events import ActionType, ClusterEvent, EventResource
from services.framework.api.events import QueueingHint as Q
from services.framework.config import default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.noderesources.fit_hints import after_node_change, after_pod_event
from services.framework.runtime.framework import Framework
from tests.builders import make_node, make_pod

POD = make_pod("pending", requests={"cpu": "2"})


def test_registered_events():
    (pod_event, node_event) = Framework(default_profile(), in_tree_registry()).events_to_register()[
        "NodeResourcesFit"
    ]
    assert pod_event.event.matches(ClusterEvent(EventResource.AssignedPod, ActionType.Delete))
    assert not pod_event.event.matches(ClusterEvent(EventResource.Pod, ActionType.Add))
    assert node_event.event.matches(ClusterEvent(EventResource.Node, ActionType.Add))
    assert node_event.event.matches(
        ClusterEvent(EventResource.Node, ActionType.UpdateNodeAllocatable)
    )
    assert not node_event.event.matches(
        ClusterEvent(EventResource.Node, ActionType.UpdateNodeLabel)
    )


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(make_pod("gone", node_name="n"), None, Q.Queue, id="bound pod deleted"),
        pytest.param(make_pod("gone"), None, Q.QueueSkip, id="pending pod deleted"),
        pytest.param(
            msgspec.structs.replace(
                make_pod("gone"),
                status=PodStatus(nominated_node_name="n"),
            ),
            None,
            Q.Queue,
            id="nominated pod deleted",
        ),
        pytest.param(
            make_pod("x", node_name="n", requests={"cpu": "3"}),
            make_pod("x", node_name="n", requests={"cpu": "1"}),
            Q.Queue,
            id="bound pod scaled down in cpu",
        ),
        pytest.param(
            make_pod("x", node_name="n", requests={"memory": "3"}),
            make_pod("x", node_name="n", requests={"memory": "1"}),
            Q.QueueSkip,
            id="scaled down in a resource the pod does not request",
        ),
        pytest.param(
            make_pod("x", requests={"cpu": "3"}),
            make_pod("x", requests={"cpu": "1"}),
            Q.QueueSkip,
            id="unbound pod scaled down",
        ),
    ],
)
def test_after_pod_event(old, new, hint):
    assert after_pod_event(POD, old, new) == hint


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, make_node("n", allocatable={"cpu": "4", "pods": 1}), Q.Queue, id="fits"),
        pytest.param(
            None, make_node("n", allocatable={"cpu": "1", "pods": 1}), Q.QueueSkip, id="too small"
        ),
        pytest.param(
            make_node("n", allocatable={"cpu": "2", "pods": 1}),
            make_node("n", allocatable={"cpu": "4", "pods": 1}),
            Q.Queue,
            id="cpu grew",
        ),
        pytest.param(
            make_node("n", allocatable={"cpu": "4", "memory": "1", "pods": 1}),
            make_node("n", allocatable={"cpu": "4", "memory": "2", "pods": 1}),
            Q.QueueSkip,
            id="an unrequested resource grew",
        ),
        pytest.param(
            make_node("n", allocatable={"cpu": "4", "pods": 1}),
            make_node("n", allocatable={"cpu": "4", "pods": 2}),
            Q.Queue,
            id="more pods allowed",
        ),
    ],
)
def test_after_node_change(old, new, hint):
    assert after_node_change(POD, old, new) == hint
