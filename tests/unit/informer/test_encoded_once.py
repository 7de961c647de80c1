"""The informer encodes each object once and reuses the bytes for the log's line, the
store's body and the ``ClusterBatch``: what each of them holds is byte for byte the
encoding of the entry (or object) it stands for, also when one batch changes the same
object several times (each entry keeps its own version's bytes, not the last one's)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from contracts import topology
from contracts.events import ClusterBatch, LogEntry
from contracts.kinds import KubeObject, kind_of
from services.common.bus import Delivery, Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog import FileEventLog
from services.common.store.memory import MemoryStore
from services.informer.service import InformerService
from tests.builders import make_node, make_pod

WATCH = topology.QueueSpec("test.cluster", (topology.QueueBinding(topology.CLUSTER.name, ""),))


def event(obj: KubeObject, type_: str = "ADDED") -> Message:
    body = msgspec.json.encode({"type": type_, "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind_of(obj), type_), body)


WEB = make_pod("web", "shop", uid="u-1")
WEB_LABELLED = make_pod("web", "shop", uid="u-1", labels={"tier": "front"})
BATCHES = {
    "added": [event(make_node("n1")), event(WEB)],
    "added, modified and deleted in one batch": [
        event(WEB),
        event(WEB_LABELLED, "MODIFIED"),
        event(WEB_LABELLED, "DELETED"),
        event(make_pod("api", "shop", uid="u-2")),
    ],
    "modified twice in one batch": [
        event(WEB),
        event(WEB_LABELLED, "MODIFIED"),
        event(make_pod("web", "shop", uid="u-1", labels={"tier": "back"}), "MODIFIED"),
    ],
}


@pytest.mark.parametrize("messages", list(BATCHES.values()), ids=list(BATCHES))
async def test_the_log_the_store_and_the_batch_hold_each_entry_s_own_encoding(
    messages: list[Message], tmp_path: Path
) -> None:
    bus, store, log = MemoryBus(), MemoryStore(), FileEventLog(tmp_path / "events.log")
    bodies: list[bytes] = []

    async def collect(deliveries: Sequence[Delivery]) -> None:
        bodies.extend(d.body for d in deliveries)

    service = InformerService(bus, store, log, FakeClock())
    await bus.consume_raw(WATCH, collect)
    await bus.declare(topology.QUEUES)
    await bus.publish(messages)  # ready before the informer consumes: one batch
    await service.start()
    try:
        await bus.wait_idle()
    finally:
        await service.stop()
        await bus.close()
    lines = (tmp_path / "events.log").read_bytes().splitlines()
    entries = [msgspec.json.decode(line, type=LogEntry) for line in lines]
    sent = [msgspec.json.decode(m.body) for m in messages]  # each message changes something
    assert [(e.type, e.object.metadata.name, e.object.metadata.labels) for e in entries] == [
        (m["type"], m["object"]["metadata"]["name"], m["object"]["metadata"].get("labels", {}))
        for m in sent
    ]
    assert lines == [msgspec.json.encode(e) for e in entries]
    published = [msgspec.json.decode(b, type=ClusterBatch) for b in bodies]
    assert len(published) == 1, "the messages were not ingested as one batch"
    assert [e for batch in published for e in batch.events] == entries
    assert bodies == [msgspec.json.encode(batch) for batch in published]
    last: dict[tuple[str, str], LogEntry] = {}
    for entry in entries:
        meta = entry.object.metadata
        key = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        last[str(entry.__struct_config__.tag), key] = entry
    for (kind, key), entry in last.items():
        stored = (await store.objects(kind)).get(key)
        expected = None if entry.type == "DELETED" else msgspec.json.encode(entry.object)
        assert stored == expected, (kind, key)
