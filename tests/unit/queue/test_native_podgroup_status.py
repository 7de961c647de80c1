"""The queue publishes a native PodGroup's scheduling condition on ``podgroup.<namespace>``:
False/Unschedulable when a member's attempt fails, True/Scheduled once ``minCount``
members are bound (terminal), in the condition type of the group's version."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import msgspec
import pytest

from contracts import topology
from contracts.k8s import ObjectMeta, Pod, PodSchedulingGroup, SchedulingPodGroup
from contracts.k8s.workload import (
    GangSchedulingPolicy,
    PodGroupSchedulingPolicy,
    SchedulingPodGroupSpec,
)
from contracts.messages import AttemptResult, ResultBatch
from services.common import features
from services.common.bus import Delivery, Message
from services.queue.native_podgroups import scheduled_condition
from tests.builders import make_pod
from tests.unit.queue.helpers import with_
from tests.unit.queue.service_support import Harness

WATCH = topology.QueueSpec(
    "test.native-podgroups",
    (topology.QueueBinding(topology.DECISIONS.name, "podgroup.*"),),
    durable=False,
    auto_delete=True,
    dead_letter=False,
)
FAILED = "0/1 nodes are available: 1 Insufficient cpu."


def group(version: str = "v1beta1", min_count: int = 2) -> SchedulingPodGroup:
    policy = PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=min_count))
    return SchedulingPodGroup(
        api_version=f"scheduling.k8s.io/{version}",
        metadata=ObjectMeta(name="pg", namespace="default", uid="pg-uid"),
        spec=SchedulingPodGroupSpec(scheduling_policy=policy),
    )


def member(name: str, node: str | None = None) -> Pod:
    pod = make_pod(name, node_name=node)
    return with_(pod, spec__scheduling_group=PodSchedulingGroup(pod_group_name="pg"))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("version", "kind"),
    [("v1beta1", "PodGroupInitiallyScheduled"), ("v1alpha2", "PodGroupScheduled")],
)
def test_condition_type_follows_the_version(version: str, kind: str) -> None:
    condition = scheduled_condition(group(version), 2, None, "2026-01-01T00:00:00Z")
    assert condition is not None
    assert (condition.type, condition.status, condition.reason) == (kind, "True", "Scheduled")


def test_nothing_to_say_before_anything_happened() -> None:
    assert scheduled_condition(group(), 1, None, "now") is None


@pytest.fixture
async def harness() -> AsyncIterator[tuple[Harness, list[SchedulingPodGroup]]]:
    features.install(features.parse("GenericWorkload=true,GangScheduling=true"))
    h = Harness()
    seen: list[SchedulingPodGroup] = []

    async def collect(deliveries: Sequence[Delivery]) -> None:
        seen.extend(msgspec.json.decode(d.body, type=SchedulingPodGroup) for d in deliveries)

    try:
        await h.start()
        await h.bus.consume_raw(WATCH, collect)
        yield h, seen
        await h.queue.stop()
        await h.bus.close()
    finally:
        features.install(features.DEFAULTS)


async def test_the_condition_is_published_when_it_changes(
    harness: tuple[Harness, list[SchedulingPodGroup]],
) -> None:
    h, seen = harness
    await h.apply(group())
    await h.apply(member("a"), member("b"))
    assert seen == []  # nothing happened to the group yet
    await h.advance(1)
    request = next(r for r in h.requests if r.name == "a")
    result = AttemptResult(
        uid=request.uid,
        namespace="default",
        name="a",
        attempt=request.attempt,
        outcome="unschedulable",
        plugins=["NodeResourcesFit"],
        message=FAILED,
    )
    body = msgspec.json.encode(ResultBatch(results=[result]))
    await h.bus.publish([Message(topology.RESULTS.name, topology.RESULTS_KEY, body)])
    await h.settle()
    await h.apply(member("a", "n1"), type_="MODIFIED")
    await h.apply(member("b", "n1"), type_="MODIFIED")
    await h.apply(member("a"), type_="DELETED")  # terminal: stays scheduled
    said = [(c.type, c.status, c.reason, c.message) for g in seen for c in g.status.conditions]
    assert said == [
        ("PodGroupInitiallyScheduled", "False", "Unschedulable", FAILED),
        ("PodGroupInitiallyScheduled", "True", "Scheduled", ""),
    ]
    assert all(g.api_version == "scheduling.k8s.io/v1beta1" for g in seen)
