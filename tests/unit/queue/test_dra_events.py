"""DRA's cluster events: ResourceClaim and ResourceSlice add/update/delete, DeviceClass
add/update, and a pod update that changes ``status.resourceClaimStatuses``
(``UpdatePodGeneratedResourceClaim``), as the handlers hand them to the queue."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.k8s import DeviceClass, ObjectMeta, ResourceClaim, ResourceSlice
from contracts.k8s.pod import PodResourceClaim, PodResourceClaimStatus
from contracts.k8s.resource import ResourcePool, ResourceSliceSpec
from services.framework.api.events import ActionType, ClusterEvent, EventResource
from services.queue.cluster_events import pod_scheduling_properties_change
from services.queue.eventhandlers import ClusterState, EventHandlers
from services.queue.nominator import Nominator
from tests.builders import make_pod
from tests.unit.queue.helpers import logged, make_queue, with_

A, R = ActionType, EventResource
CLAIM = ResourceClaim(metadata=ObjectMeta(name="gpu", namespace="default", uid="c1"))
SLICE = ResourceSlice(
    metadata=ObjectMeta(name="s1", uid="s1"),
    spec=ResourceSliceSpec(driver="gpu.example.com", pool=ResourcePool(name="p")),
)
CLASS = DeviceClass(metadata=ObjectMeta(name="gpu.example.com", uid="d1"))
POD = make_pod("p")
CLAIMING = with_(
    POD, spec__resource_claims=[PodResourceClaim(name="gpu", resource_claim_template_name="t")]
)


def recording() -> tuple[EventHandlers, list[tuple[ClusterEvent, Any, Any]]]:
    queue, _ = make_queue()
    handlers = EventHandlers(queue, Nominator())
    seen: list[tuple[ClusterEvent, Any, Any]] = []

    def record(event: ClusterEvent, old: Any, new: Any, pre_check: Any = None) -> int:
        seen.append((event, old, new))
        return 0

    queue.move_all_to_active_or_backoff_queue = record  # type: ignore[method-assign]
    return handlers, seen


@pytest.mark.parametrize(
    ("obj", "resource"),
    [(CLAIM, R.ResourceClaim), (SLICE, R.ResourceSlice), (CLASS, R.DeviceClass)],
)
def test_dra_objects_become_add_update_delete_events(obj: Any, resource: EventResource) -> None:
    handlers, seen = recording()
    changed = with_(obj, metadata__labels={"x": "y"})
    handlers.handle(logged(obj))
    handlers.handle(logged(obj, "MODIFIED"))  # identical: no event
    handlers.handle(logged(changed, "MODIFIED"))
    handlers.handle(logged(changed, "DELETED"))
    expected = [
        (ClusterEvent(resource, A.Add), None, obj),
        (ClusterEvent(resource, A.Update), obj, changed),
    ]
    if resource is not R.DeviceClass:  # upstream handles no DeviceClass deletion
        expected.append((ClusterEvent(resource, A.Delete), changed, None))
    assert seen == expected


def test_the_listers_hold_dra_objects() -> None:
    handlers, _ = recording()
    for obj in (CLAIM, SLICE, CLASS):
        handlers.handle(logged(obj))
    handlers.handle(logged(SLICE, "DELETED"))
    listers = handlers.queue.listers
    assert all(lister.resource_claim("default", "gpu") == CLAIM for lister in listers)
    assert all(lister.resource_slices == {} for lister in listers)


def test_a_generated_claim_in_the_pod_status_is_its_own_action() -> None:
    status = [PodResourceClaimStatus(name="gpu", resource_claim_name="p-gpu-x2b4z")]
    generated = with_(CLAIMING, status__resource_claim_statuses=status)
    assert pod_scheduling_properties_change(generated, CLAIMING) == [
        ClusterEvent(R.UnschedulablePod, A.UpdatePodGeneratedResourceClaim)
    ]
    renamed = [PodResourceClaimStatus(name="gpu", resource_claim_name="p-gpu-other")]
    assert pod_scheduling_properties_change(
        with_(generated, status__resource_claim_statuses=renamed), generated
    ) == [ClusterEvent(R.UnschedulablePod, A.UpdatePodGeneratedResourceClaim)]
    bound = with_(generated, spec__node_name="n1", metadata__labels={"a": "b"})
    assert pod_scheduling_properties_change(bound, with_(CLAIMING, spec__node_name="n1")) == [
        ClusterEvent(R.AssignedPod, A.UpdatePodLabel),
        ClusterEvent(R.AssignedPod, A.UpdatePodGeneratedResourceClaim),
    ]
    assert pod_scheduling_properties_change(generated, generated) == [
        ClusterEvent(R.UnschedulablePod, A.Update)
    ]


def test_the_pending_pods_update_reaches_the_queue_with_that_action() -> None:
    queue, _ = make_queue()
    handlers = EventHandlers(queue, Nominator())
    handlers.handle(logged(CLAIMING))
    moved: list[ClusterEvent] = []
    original = queue.update

    def update(old: Any, new: Any, *, priority: int) -> None:
        moved.extend(pod_scheduling_properties_change(new, old))
        original(old, new, priority=priority)

    queue.update = update  # type: ignore[method-assign]
    status = [PodResourceClaimStatus(name="gpu", resource_claim_name="p-gpu-x2b4z")]
    handlers.handle(logged(with_(CLAIMING, status__resource_claim_statuses=status), "MODIFIED"))
    assert moved == [ClusterEvent(R.UnschedulablePod, A.UpdatePodGeneratedResourceClaim)]
    info = queue.get(CLAIMING.metadata.uid)
    assert info is not None
    assert info.pod.status.resource_claim_statuses == status


def test_resync_converges_dra_objects() -> None:
    handlers, seen = recording()
    handlers.handle(logged(CLAIM))
    handlers.handle(logged(SLICE))
    seen.clear()
    handlers.resync(ClusterState(volumes=[SLICE, CLASS]))
    assert seen == [
        (ClusterEvent(R.ResourceClaim, A.Delete), CLAIM, None),
        (ClusterEvent(R.DeviceClass, A.Add), None, CLASS),
    ]
