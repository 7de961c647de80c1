"""The queue publishes each PodGroup's status on ``podgroup.<namespace>`` when its
members change it, as the scheduler-plugins controller would write it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import msgspec
import pytest

from contracts import topology
from contracts.k8s import POD_GROUP_LABEL, ObjectMeta, PodGroup, PodGroupSpec
from services.common.bus import Delivery
from services.common.podgroups import pod_group_status
from tests.builders import make_pod
from tests.unit.queue.helpers import with_
from tests.unit.queue.service_support import Harness

WATCH = topology.QueueSpec(
    "test.podgroups",
    (topology.QueueBinding(topology.DECISIONS.name, "podgroup.*"),),
    durable=False,
    auto_delete=True,
    dead_letter=False,
)


def group(min_member: int) -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(name="g", namespace="default"),
        spec=PodGroupSpec(min_member=min_member),
    )


def member(name: str, node: str | None = None, phase: str | None = None):  # type: ignore[no-untyped-def]
    pod = make_pod(name, node_name=node)
    pod = with_(pod, metadata__labels={POD_GROUP_LABEL: "g"})
    return with_(pod, status__phase=phase) if phase else pod


@pytest.mark.parametrize(
    ("pods", "phase", "scheduled"),
    [
        ([member("a")], "Pending", 0),
        ([member("a"), member("b")], "Scheduling", 0),
        ([member("a", "n1"), member("b")], "Scheduling", 1),
        ([member("a", "n1"), member("b", "n1")], "Scheduled", 2),
        ([member("a", "n1", "Running"), member("b", "n1", "Running")], "Running", 2),
        ([member("a", "n1", "Running"), member("b", "n1", "Failed")], "Failed", 2),
        ([member("a", "n1", "Succeeded"), member("b", "n1", "Succeeded")], "Finished", 2),
    ],
)
def test_status_follows_the_members(pods: list, phase: str, scheduled: int) -> None:  # type: ignore[type-arg]
    status = pod_group_status(group(2), pods)
    assert (status.phase, status.scheduled) == (phase, scheduled)


@pytest.fixture
async def harness() -> AsyncIterator[tuple[Harness, list[PodGroup]]]:
    h = Harness()
    seen: list[PodGroup] = []

    async def collect(deliveries: Sequence[Delivery]) -> None:
        seen.extend(msgspec.json.decode(d.body, type=PodGroup) for d in deliveries)

    await h.start()
    await h.bus.consume_raw(WATCH, collect)
    yield h, seen
    await h.queue.stop()
    await h.bus.close()


async def test_the_status_is_published_when_it_changes(
    harness: tuple[Harness, list[PodGroup]],
) -> None:
    h, seen = harness
    await h.apply(group(2))
    await h.apply(member("a"), member("b"))
    await h.apply(member("a", "n1"))
    await h.apply(member("a", "n1"))  # the same again: nothing new to say
    await h.apply(member("b", "n1"))
    phases = [(g.status.phase, g.status.scheduled) for g in seen]
    assert phases == [("Pending", 0), ("Scheduling", 0), ("Scheduling", 1), ("Scheduled", 2)]
    assert all(g.metadata.name == "g" and g.spec.min_member == 2 for g in seen)
