"""The queue with GangScheduling in the profile (GenericWorkload and GangScheduling on):
upstream's step scenarios that happen in the queue (pods held at PreEnqueue until their
PodGroup or their quorum arrives, a lowered ``minCount``) and a native gang's members
popped together."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import pytest

from contracts.k8s import ObjectMeta, Pod, PodSchedulingGroup, SchedulingPodGroup
from contracts.k8s.workload import (
    GangSchedulingPolicy,
    PodGroupSchedulingPolicy,
    SchedulingPodGroupSpec,
)
from services.common import features
from services.queue.eventhandlers import EventHandlers
from services.queue.nominator import Nominator
from services.queue.profiles import QueueProfile
from services.queue.types import SubQueue
from tests.builders import make_pod
from tests.unit.queue.helpers import logged, make_queue, names, with_

MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"


@pytest.fixture
def handlers() -> Iterator[EventHandlers]:
    features.install(features.parse("GenericWorkload=true,GangScheduling=true"))
    try:
        queue, _ = make_queue(profiles=(QueueProfile.default(),))
        yield EventHandlers(queue, Nominator())
    finally:
        features.install(features.DEFAULTS)


def group(name: str = "pg", min_count: int = 3) -> SchedulingPodGroup:
    policy = PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=min_count))
    return SchedulingPodGroup(
        metadata=ObjectMeta(name=name, namespace="default", uid=f"{name}-uid"),
        spec=SchedulingPodGroupSpec(scheduling_policy=policy),
    )


def member(name: str, pg: str = "pg", **kw: object) -> Pod:
    pod = make_pod(name, **kw)  # type: ignore[arg-type]
    spec = msgspec.structs.replace(pod.spec, scheduling_group=PodSchedulingGroup(pod_group_name=pg))
    return msgspec.structs.replace(pod, spec=spec)


def gated(handlers: EventHandlers) -> dict[str, str]:
    return {i.pod.metadata.name: i.message for i in handlers.queue.pods() if i.gated}


def test_gang_waits_for_quorum_to_start_then_is_active(handlers: EventHandlers) -> None:
    handlers.handle(logged(group()))
    for name in ("p1", "p2"):
        handlers.handle(logged(member(name)))
    assert gated(handlers) == {"p1": MIN_COUNT, "p2": MIN_COUNT}
    handlers.handle(logged(member("p3")))  # the last pod unblocks PreEnqueue
    assert gated(handlers) == {}
    assert {i.where for i in handlers.queue.pods()} == {SubQueue.ACTIVE}


def test_gang_waits_for_its_pod_group(handlers: EventHandlers) -> None:
    for name in ("p1", "p2", "p3"):
        handlers.handle(logged(member(name)))
    waiting = 'waiting for pod\'s pod group "pg" to appear in scheduling queue'
    assert gated(handlers) == dict.fromkeys(("p1", "p2", "p3"), waiting)
    handlers.handle(logged(group()))
    assert gated(handlers) == {}


def test_lowered_min_count_lets_the_gang_in(handlers: EventHandlers) -> None:
    handlers.handle(logged(group(min_count=3)))
    for name in ("p1", "p2"):
        handlers.handle(logged(member(name)))
    handlers.handle(logged(group(min_count=3), "MODIFIED"))  # no change: still held
    assert set(gated(handlers)) == {"p1", "p2"}
    handlers.handle(logged(group(min_count=2), "MODIFIED"))
    assert gated(handlers) == {}


def test_a_bound_member_counts_towards_the_quorum(handlers: EventHandlers) -> None:
    handlers.handle(logged(group()))
    handlers.handle(logged(member("p0", node_name="n1")))
    handlers.handle(logged(member("p1")))
    assert set(gated(handlers)) == {"p1"}
    handlers.handle(logged(member("p2")))
    assert gated(handlers) == {}


def test_a_native_gang_is_popped_together(handlers: EventHandlers) -> None:
    """PrioritySort interleaves two gangs by arrival; a pop takes a gang whole."""
    handlers.handle(logged(group("a")))
    handlers.handle(logged(group("b")))
    for i in (1, 2, 3):
        handlers.handle(logged(member(f"a{i}", "a")))
        handlers.handle(logged(member(f"b{i}", "b")))
    assert names(handlers.queue.pop(1)) == ["a1", "a2", "a3"]
    assert names(handlers.queue.pop(1, gangs_out=[("default", "scheduling.k8s.io/a")])) == []
    assert names(handlers.queue.pop(1)) == ["b1", "b2", "b3"]


def test_a_deleted_member_no_longer_counts(handlers: EventHandlers) -> None:
    handlers.handle(logged(group(min_count=2)))
    p1 = member("p1", node_name="n1")
    handlers.handle(logged(p1))
    handlers.handle(logged(with_(p1), "DELETED"))
    handlers.handle(logged(member("p2")))
    assert set(gated(handlers)) == {"p2"}
