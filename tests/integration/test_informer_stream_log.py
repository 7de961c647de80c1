"""The informer on a stream event log (real RabbitMQ; the bus and the store in memory):
ingest appends to the stream and writes snapshots to it, a store that comes back empty
is rebuilt from it, and an informer restarted on the same stream continues its seqs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest

from contracts import topology
from contracts.kinds import KubeObject, kind_of
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog import read_all
from services.common.store.memory import MemoryStore
from services.informer.service import InformerService
from services.informer.snapshots import SnapshotPolicy
from tests.builders import make_node, make_pod
from tests.contract.stream_support import StreamLogs

pytestmark = pytest.mark.integration

NODES = [make_node(f"n{i}") for i in range(3)]
PODS = [make_pod(f"p{i}", uid=f"u-{i}") for i in range(5)]


def event(obj: KubeObject) -> Message:
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind_of(obj), "ADDED"), body)


@pytest.fixture
async def streams() -> AsyncIterator[StreamLogs]:
    logs = StreamLogs()
    yield logs
    await logs.aclose()


async def test_the_informer_writes_rebuilds_from_and_restarts_on_a_stream(
    streams: StreamLogs,
) -> None:
    bus, store = MemoryBus(), MemoryStore()
    policy = SnapshotPolicy(every=3, interval=0, retention=0)
    informer = InformerService(bus, store.client(), streams.open(), FakeClock(), snapshots=policy)
    await informer.start()
    await bus.publish([event(o) for o in (*NODES, *PODS[:3])])
    await bus.wait_idle()
    store.flush()  # Redis came back empty: rebuilt from the stream before the next event
    await bus.publish([event(PODS[3])])
    await bus.wait_idle()
    assert set(await store.client().objects("pod")) == {f"default/p{i}" for i in range(4)}
    await informer.stop()

    log = streams.open()
    restarted = InformerService(bus, store.client(), log, FakeClock(), snapshots=policy)
    await restarted.start()
    await bus.publish([event(PODS[4])])
    await bus.wait_idle()
    await restarted.stop()
    await bus.close()

    entries = await read_all(streams.open())
    assert [e.seq for e in entries] == list(range(1, 9))  # the stream drops nothing itself
    snapshot = await streams.open().latest_snapshot()
    assert snapshot is not None and snapshot[0] >= 6  # the writers' snapshots are in it
    assert (await store.client().epoch()).seq == 8
    assert len(await store.client().objects("node")) == 3
