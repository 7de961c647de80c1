"""The queue service publishes KEP-5501's PodScheduled conditions from its timer tick:
``status.<namespace>`` and the ``NotReadyForScheduling`` Event, 5 s after PreEnqueue
held the pod back (FakeClock, in-memory bus)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import msgspec
import pytest

from contracts import topology
from contracts.k8s import Event, Pod, PodCondition
from contracts.podstatus import PodStatusPatch
from contracts.queueview import QueueView
from services.common.bus import Delivery, Message
from tests.builders import make_pod
from tests.unit.queue.helpers import with_
from tests.unit.queue.service_support import Harness

WATCH = topology.QueueSpec(
    "test.podstatus",
    (
        topology.QueueBinding(topology.DECISIONS.name, "status.*"),
        topology.QueueBinding(topology.DECISIONS.name, "event.*"),
    ),
    durable=False,
    auto_delete=True,
    dead_letter=False,
)
GATES = "Scheduling is blocked due to non-empty scheduling gates"


async def watched(h: Harness) -> list[Delivery]:
    seen: list[Delivery] = []

    async def collect(deliveries: Sequence[Delivery]) -> None:
        seen.extend(deliveries)

    await h.start()
    await h.bus.consume_raw(WATCH, collect)
    return seen


def stale_gated_pod() -> Pod:
    """A gated pod whose condition still says an older PreEnqueue message."""
    old = PodCondition(
        type="PodScheduled", status="False", reason="NotReadyForScheduling", message="old"
    )
    pod = make_pod("p", namespace="team", scheduling_gates=("example.com/wait",))
    stale: Pod = with_(pod, status__conditions=[old])
    return stale


@pytest.mark.parametrize("enabled", [True, False])
async def test_the_condition_and_its_event_are_published_5_s_later(enabled: bool) -> None:
    h = Harness(pre_enqueue_pod_status=enabled)
    seen = await watched(h)
    try:
        await h.apply(stale_gated_pod())
        await h.advance(4.0)
        assert seen == []
        await h.advance(2.0)
        if not enabled:
            assert seen == []
            return
        assert [d.routing_key for d in seen] == ["status.team", "event.team"]
        patch = msgspec.json.decode(seen[0].body, type=PodStatusPatch)
        assert patch.condition is not None and patch.condition.message == GATES
        assert (patch.name, patch.plugin) == ("p", "SchedulingGates")
        event = msgspec.json.decode(seen[1].body, type=Event)
        assert (event.reason, event.message) == ("NotReadyForScheduling", GATES)
        await h.advance(30.0)
        assert len(seen) == 2  # never re-sent
    finally:
        await h.queue.stop()
        await h.bus.close()


async def test_a_pod_whose_gates_go_has_its_condition_cleared() -> None:
    h = Harness()
    seen = await watched(h)
    try:
        gated = make_pod("p", namespace="team", scheduling_gates=("example.com/wait",))
        await h.apply(gated)
        await h.advance(10.0)
        assert seen == []  # the API server's SchedulingGated condition says it already
        await h.apply(make_pod("p", namespace="team"), type_="MODIFIED")
        assert [r.name for r in h.requests] == ["p"]  # in flight: the fake scheduler waits
        await h.advance(6.0)
        [clear] = [msgspec.json.decode(d.body, type=PodStatusPatch) for d in seen]
        assert clear.condition is None and clear.cleared is not None
        assert (clear.cleared.reason, clear.cleared.message) == ("SchedulingGated", GATES)
    finally:
        await h.queue.stop()
        await h.bus.close()


async def test_a_publish_that_fails_is_logged_and_the_tick_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness()
    seen = await watched(h)
    publish = h.bus.publish

    async def refusing(messages: Sequence[Message]) -> None:
        if any(m.routing_key.startswith("status.") for m in messages):
            raise ConnectionError("broker gone")
        await publish(messages)

    h.bus.publish = refusing  # type: ignore[method-assign]
    try:
        await h.apply(stale_gated_pod())
        with caplog.at_level(logging.ERROR, logger="ksched.queue"):
            await h.advance(6.0)
        assert seen == []
        assert "could not publish the PodScheduled condition of 1 pods" in caplog.text
        view = msgspec.json.decode(await h.store.queue_view() or b"", type=QueueView)
        assert [p.pod for p in view.heads["gated"]] == ["team/p"]
    finally:
        await h.queue.stop()
        await h.bus.close()
