"""Events and queueing hints: upstream's TestEventsToRegister-style cases for
isSchedulableAfterPodChange and isSchedulableAfterNodeChange."""

from __future__ import annotations

import pytest

from services.framework.api.events import ActionType, EventResource, QueueingHint
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.podtopologyspread.helpers import (
    FOO,
    UNSCHEDULABLE_TAINT,
    exists,
    plugin,
    spread,
    toleration,
)

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
DNS = "DoNotSchedule"
TARGET = spread(
    spread(make_pod("p", labels={"foo": ""}), 1, "zone", DNS, FOO), 1, "node", DNS, exists("bar")
)


def hints():
    events = plugin().events_to_register()
    return events[0].queueing_hint, events[1].queueing_hint


def test_registered_events():
    pods, nodes = plugin().events_to_register()
    assert pods.event.resource == EventResource.Pod
    assert pods.event.action_type == (
        ActionType.Add
        | ActionType.UpdatePodLabel
        | ActionType.UpdatePodToleration
        | ActionType.Delete
    )
    assert nodes.event.resource == EventResource.Node
    assert nodes.event.action_type == (
        ActionType.Add | ActionType.Delete | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint
    )


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            None,
            make_pod("p1", node_name="node-a", labels={"foo": ""}),
            Q,
            id="add a pod with a matching label",
        ),
        pytest.param(
            None,
            make_pod("p1", node_name="node-a", labels={"baz": ""}),
            SKIP,
            id="add a pod without one",
        ),
        pytest.param(None, make_pod("p1", labels={"foo": ""}), SKIP, id="add an unscheduled pod"),
        pytest.param(
            None,
            make_pod("p1", "other", node_name="node-a", labels={"foo": ""}),
            SKIP,
            id="another namespace",
        ),
        pytest.param(
            make_pod("p1", node_name="node-a", labels={"foo": ""}),
            None,
            Q,
            id="delete a matching pod",
        ),
        pytest.param(
            make_pod("p1", node_name="node-a", labels={"baz": ""}),
            None,
            SKIP,
            id="delete another pod",
        ),
        pytest.param(
            make_pod("p1", node_name="node-a", labels={"foo": ""}),
            make_pod("p1", node_name="node-a", labels={"baz": ""}),
            Q,
            id="a label update stops matching",
        ),
        pytest.param(
            make_pod("p1", node_name="node-a", labels={"foo": "", "baz": "1"}),
            make_pod("p1", node_name="node-a", labels={"foo": "", "baz": "2"}),
            SKIP,
            id="a label update keeps matching",
        ),
        pytest.param(
            make_pod("p1", node_name="node-a", labels={"foo": ""}),
            make_pod("p1", node_name="node-a", labels={"foo": ""}),
            SKIP,
            id="no label change",
        ),
    ],
)
def test_after_pod_change(old, new, want):
    after_pod, _ = hints()
    assert after_pod(TARGET, old, new) == want


def test_new_toleration_of_the_pod_itself_queues_when_taints_are_honored():
    after_pod, _ = hints()
    target = spread(make_pod("p", labels={"foo": ""}), 1, "zone", DNS, FOO, taints_policy="Honor")
    tolerant = toleration(target, "node.kubernetes.io/unschedulable")
    assert after_pod(target, target, tolerant) == Q
    assert after_pod(TARGET, TARGET, toleration(TARGET, "x")) == SKIP


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            None,
            make_node("n", labels={"zone": "z1", "node": "n"}),
            Q,
            id="add a node with both keys",
        ),
        pytest.param(
            None, make_node("n", labels={"zone": "z1"}), SKIP, id="add a node missing a key"
        ),
        pytest.param(
            make_node("n", labels={"zone": "z1", "node": "n"}),
            None,
            Q,
            id="delete a node with both keys",
        ),
        pytest.param(
            make_node("n", labels={"zone": "z1"}), None, SKIP, id="delete a node missing a key"
        ),
        pytest.param(
            make_node("n", labels={"zone": "z1"}),
            make_node("n", labels={"zone": "z1", "node": "n"}),
            Q,
            id="update adds a key",
        ),
        pytest.param(
            make_node("n", labels={"zone": "z1", "node": "n"}),
            make_node("n", labels={"zone": "z2", "node": "n"}),
            Q,
            id="update moves the node to another zone",
        ),
        pytest.param(
            make_node("n", labels={"zone": "z1", "node": "n"}),
            make_node("n", labels={"zone": "z1", "node": "n", "other": "x"}),
            SKIP,
            id="update of an unrelated label",
        ),
        pytest.param(
            make_node("n", labels={"zone": "z1", "node": "n"}),
            make_node("n", labels={"zone": "z1", "node": "n"}, taints=[UNSCHEDULABLE_TAINT]),
            Q,
            id="update of the taints",
        ),
        pytest.param(
            make_node("n", labels={"zone": "z1"}),
            make_node("n", labels={"zone": "z2"}),
            SKIP,
            id="update of a node that matches neither before nor after",
        ),
    ],
)
def test_after_node_change(old, new, want):
    _, after_node = hints()
    assert after_node(TARGET, old, new) == want


def test_bad_selector_queues():
    after_pod, after_node = hints()
    broken = spread(make_pod("p", labels={"foo": ""}), 1, "zone", DNS, exists("bad key!"))
    assert after_pod(broken, None, make_pod("p1", node_name="node-a", labels={"foo": ""})) == Q
    assert after_node(broken, None, make_node("n", labels={})) == Q
