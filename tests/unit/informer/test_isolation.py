"""A malformed message is refused alone, and the informer's view changes only after the
commit that makes a batch durable (issue 8: both failed on the code before)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec
import pytest

from contracts import topology
from contracts.errors import ErrorReport
from services.common.bus import Delivery, Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog.memory import MemoryEventLog
from services.common.store import ProjectedEntry
from services.common.store.memory import MemoryStore
from services.informer.service import InformerService
from tests.builders import make_pod

ERRORS = topology.QueueSpec(
    "test.isolation.errors", (topology.QueueBinding(topology.ERRORS.name, "#"),), dead_letter=False
)


def pod_event(name: str) -> Message:
    body = msgspec.json.encode({"type": "ADDED", "object": make_pod(name, "shop")})
    return Message(topology.EVENTS.name, "pod.added", body)


POISON = {
    "invalid UTF-8 in a string": b'{"type":"ADDED","object":{"metadata":{"name":"a\xff"}}}',
    "nested 1,000 levels": b'{"type":"ADDED","object":{"x":' + b"[" * 1000 + b"]" * 1000 + b"}}",
    "full-width digits": msgspec.json.encode(
        {"type": "ADDED", "object": make_pod("wide", "shop", requests={"cpu": "\uff11m"})}
    ),
}


class FlakyStore(MemoryStore):
    """A store whose first ``apply`` fails, as a lost Redis connection would."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 1

    async def apply(self, entries: Sequence[ProjectedEntry]) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("store unavailable")
        await super().apply(entries)


@pytest.mark.parametrize("poison", list(POISON.values()), ids=list(POISON))
async def test_a_poisoned_message_fails_nothing_else_of_its_batch(poison: bytes) -> None:
    bus, store, event_log = MemoryBus(), MemoryStore(), MemoryEventLog()
    reports: list[ErrorReport] = []

    async def collect(deliveries: Sequence[Delivery]) -> None:
        reports.extend(msgspec.json.decode(d.body, type=ErrorReport) for d in deliveries)

    informer = InformerService(bus, store, event_log, FakeClock())
    await informer.start()
    await bus.consume_raw(ERRORS, collect)
    events = [pod_event(f"p{i}") for i in range(5)]
    events.insert(2, Message(topology.EVENTS.name, "pod.added", poison))
    await bus.publish(events)
    await bus.wait_idle()
    await informer.stop()
    await bus.close()
    assert sorted(await store.objects("pod")) == [f"shop/p{i}" for i in range(5)]
    assert len([e async for e in event_log.read(after=0)]) == 5
    assert len(reports) == 1
    assert bus.queue_depth(topology.DEAD_LETTERS.name) == 0


class FlakyClusterBus(MemoryBus):
    """A bus whose first ``failures`` publishes to ksched.cluster fail, as a broker
    restart in the middle of a commit (and of the catch-up after it) would."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def publish(self, messages: Sequence[Message]) -> None:
        if self.failures and any(m.exchange == topology.CLUSTER.name for m in messages):
            self.failures -= 1
            raise ConnectionError("broker unavailable")
        await super().publish(messages)


@pytest.mark.parametrize(
    ("bus", "store"),
    [
        # a failed store apply is repaired from the log
        (MemoryBus, FlakyStore),
        # the log is the commit point: after the append, a failed publish (twice: the
        # commit's and the catch-up's) makes the redelivered events duplicates, not new
        # entries (the chaos run found them recorded twice)
        (lambda: FlakyClusterBus(failures=2), MemoryStore),
    ],
    ids=["store-apply-fails", "cluster-publish-fails-twice"],
)
async def test_a_batch_is_recorded_once_when_its_commit_fails(
    bus: Callable[[], MemoryBus], store: Callable[[], MemoryStore]
) -> None:
    memory_bus, memory_store, event_log = bus(), store(), MemoryEventLog()
    informer = InformerService(memory_bus, memory_store, event_log, FakeClock())
    await informer.start()
    await memory_bus.publish([pod_event("a"), pod_event("b")])
    await memory_bus.wait_idle()
    await informer.stop()
    await memory_bus.close()
    assert [e.object.metadata.name async for e in event_log.read(after=0)] == ["a", "b"]
    assert sorted(await memory_store.objects("pod")) == ["shop/a", "shop/b"]
