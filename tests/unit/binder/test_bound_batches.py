"""The binder hands the informer each batch's Bindings in one BoundBatch on
``ksched.bound`` (users still get one Binding per pod on ``ksched.decisions``), and the
informer records them (in-memory bus, store and event log)."""

from __future__ import annotations

import time

import msgspec
import pytest

from contracts import topology
from contracts.k8s import Binding, Pod
from contracts.messages import BindBatch, BindRequest, BoundBatch
from services.binder.service import BinderService
from services.cli.runtime import build
from services.common.bus import Message
from services.common.clock import FakeClock
from services.common.eventlog.memory import MemoryEventLog
from services.common.settings import from_env
from services.common.store import Reservation
from services.common.store.memory import MemoryStore
from services.informer.service import InformerService
from tests.builders import make_pod
from tests.unit.binder.test_scheduled_events import RecordingBus, _event
from tests.unit.framework.plugins.volumes.helpers import host


@pytest.mark.parametrize("pods", [1, 3])
async def test_one_bound_batch_per_binder_batch_and_the_informer_records_it(pods: int) -> None:
    bus, store, clock = RecordingBus(), MemoryStore(), FakeClock()
    informer = InformerService(bus, store, MemoryEventLog(), clock)
    binder = build("binder", from_env({}), bus, store)
    assert isinstance(binder, BinderService)
    await informer.start()
    await binder.start()
    try:
        web = [make_pod(f"web-{i}") for i in range(pods)]
        await bus.publish([_event("node", host("n1")), *(_event("pod", p) for p in web)])
        await bus.wait_idle()
        uids = [p.metadata.uid or "" for p in web]
        await store.set_leases(dict.fromkeys(uids, 1))
        reservations = [
            Reservation(uid=u, node="n1", attempt=1, requests={"pods": 1}, ttl=30) for u in uids
        ]
        assert {a.status for a in await store.assume(reservations, time.time())} == {"assumed"}
        bus.published.clear()
        requests = [
            BindRequest(uid=u, namespace="default", name=p.metadata.name, node="n1", attempt=1,
                        profile=p.spec.scheduler_name)
            for u, p in zip(uids, web, strict=True)
        ]  # fmt: skip
        body = msgspec.json.encode(BindBatch(requests=requests))
        await bus.publish([Message(topology.BIND.name, topology.BIND_KEY, body)])
        await bus.wait_idle()
        stored = await store.objects("pod")
    finally:
        await binder.stop()
        await informer.stop()
        await bus.close()
    decisions = [
        (msgspec.json.decode(m.body, type=Binding), m.headers)
        for m in bus.published
        if m.exchange == topology.DECISIONS.name and m.routing_key.startswith("binding.")
    ]
    [batch] = [
        msgspec.json.decode(m.body, type=BoundBatch)
        for m in bus.published
        if m.exchange == topology.BOUND.name
    ]
    assert [(b.binding, b.trace) for b in batch.bindings] == decisions  # same, same order
    assert [b.metadata.name for b, _ in decisions] == [p.metadata.name for p in web]
    nodes = {k: msgspec.json.decode(v, type=Pod).spec.node_name for k, v in stored.items()}
    assert nodes == {f"default/{p.metadata.name}": "n1" for p in web}
