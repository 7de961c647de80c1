"""VolumeBinding's PreBind runs in the binder on the binding state the scheduler handed
on: the volume and the claim go out as watch events on ksched.events in the same publish
as the Binding, and the informer records them (in-memory bus, store and event log)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import msgspec
import pytest

from contracts import topology
from contracts.events import WatchEvent
from contracts.k8s import PersistentVolume, PersistentVolumeClaim, Pod
from contracts.messages import BindBatch, BindRequest
from services.binder.service import BinderService
from services.common.bus import Message
from services.common.clock import FakeClock
from services.common.eventlog.memory import MemoryEventLog
from services.common.store import Reservation
from services.common.store.memory import MemoryStore
from services.framework.api.effects import WatchEffect
from services.framework.api.interface import CycleState
from services.framework.api.types import PodInfo
from services.framework.plugins.volumebinding import VolumeBinding, VolumeBindingArgs
from services.framework.plugins.volumebinding.prebind import ClaimBinding
from services.informer.service import InformerService
from tests.builders import make_pod
from tests.builders.volumes import claim_volume, make_pv, make_pvc, make_storage_class
from tests.unit.binder.support import RecordingBus, added
from tests.unit.framework.plugins.volumes.helpers import host, listers_of, table_of


def decide(objects: Sequence[object], pod: Pod, node: str) -> BindRequest:
    """Run VolumeBinding up to Reserve; the BindRequest the scheduler would send."""
    plugin = VolumeBinding(VolumeBindingArgs().defaulted(), listers_of(*objects))
    table = table_of([host(node)])
    state, info = CycleState(), PodInfo.of(pod)
    plugin.pre_filter(state, info, table)
    plugin.filter_all(state, info, table)
    assert plugin.reserve(state, info, node).is_success()
    return BindRequest(
        uid=pod.metadata.uid,
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        node=node,
        attempt=1,
        profile=pod.spec.scheduler_name,
        plugin_state={
            name: msgspec.Raw(data)
            for name, data in {plugin.name: plugin.binding_state(state)}.items()
            if data is not None
        },
    )


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[RecordingBus, MemoryStore]]:
    bus, store, clock = RecordingBus(), MemoryStore(), FakeClock()
    informer = InformerService(bus, store, MemoryEventLog(), clock)
    binder = BinderService(bus, store, clock)
    await informer.start()
    await binder.start()
    yield bus, store
    await binder.stop()
    await informer.stop()
    await bus.close()


async def test_volume_updates_go_out_with_the_binding(
    cluster: tuple[RecordingBus, MemoryStore],
) -> None:
    bus, store = cluster
    wait_sc = make_storage_class("wait-sc")
    claim = make_pvc("data", storage_class="wait-sc", request="1Gi")
    volume = make_pv("pv-1", storage_class="wait-sc", capacity="5Gi", hostname="n1")
    pod = make_pod("web", volumes=[claim_volume("data")])
    node = host("n1")
    await bus.publish(
        [
            added("node", node),
            added("storageclass", wait_sc),
            added("persistentvolumeclaim", claim),
            added("persistentvolume", volume),
            added("pod", pod),
        ]
    )
    await bus.wait_idle()
    request = decide([wait_sc, claim, volume], pod, "n1")
    reservation = Reservation(
        uid=pod.metadata.uid, node="n1", attempt=1, requests={"pods": 1}, ttl=30
    )
    await store.set_leases({pod.metadata.uid: 1})
    assert [a.status for a in await store.assume([reservation], FakeClock().now())] == ["assumed"]
    bus.batches.clear()

    body = msgspec.json.encode(BindBatch(requests=[request]))
    await bus.publish([Message(topology.BIND.name, topology.BIND_KEY, body)])
    await bus.wait_idle()

    (binder_publish,) = [b for b in bus.batches if any(m.exchange == "ksched.decisions" for m in b)]
    keys = [(m.exchange, m.routing_key) for m in binder_publish]
    assert keys[:3] == [
        ("ksched.events", "persistentvolume.modified"),
        ("ksched.events", "persistentvolumeclaim.modified"),
        ("ksched.decisions", "binding.default"),
    ]
    event = msgspec.json.decode(binder_publish[0].body, type=WatchEvent)
    assert event.type == "MODIFIED"
    published = msgspec.json.decode(event.object, type=PersistentVolume)
    assert published.spec.claim_ref is not None and published.spec.claim_ref.name == "data"

    recorded_pv = msgspec.json.decode(
        (await store.objects("persistentvolume"))["pv-1"], type=PersistentVolume
    )
    recorded_claim = msgspec.json.decode(
        (await store.objects("persistentvolumeclaim"))["default/data"], type=PersistentVolumeClaim
    )
    assert recorded_pv.status.phase == "Bound"
    assert recorded_pv.spec.claim_ref is not None
    assert recorded_pv.spec.claim_ref.uid == recorded_claim.metadata.uid
    assert recorded_claim.spec.volume_name == "pv-1"
    assert recorded_claim.status.phase == "Bound"
    recorded_pod = (await store.objects("pod"))["default/web"]
    assert b'"nodeName":"n1"' in recorded_pod


async def test_provisioning_publishes_the_claim_only() -> None:
    claim = make_pvc("data", storage_class="fast")
    plugin = VolumeBinding(VolumeBindingArgs().defaulted(), listers_of())
    state = CycleState()
    plugin.restore_binding_state(state, msgspec.json.encode([ClaimBinding(claim=claim)]))
    status = await plugin.pre_bind(state, PodInfo.of(make_pod("web")), "n1")
    assert status.is_success()
    assert state.effects == [WatchEffect("persistentvolumeclaim", "MODIFIED", claim)]


async def test_no_volume_events_without_bindings(cluster: tuple[RecordingBus, MemoryStore]) -> None:
    bus, store = cluster
    pod = make_pod("web")
    request = BindRequest(
        uid=pod.metadata.uid,
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        node="n1",
        attempt=1,
        profile="default-scheduler",
    )
    await store.set_leases({pod.metadata.uid: 1})
    await store.assume(
        [Reservation(uid=pod.metadata.uid, node="n1", attempt=1, requests={}, ttl=30)],
        FakeClock().now(),
    )
    bus.batches.clear()
    body = msgspec.json.encode(BindBatch(requests=[request]))
    await bus.publish([Message(topology.BIND.name, topology.BIND_KEY, body)])
    await bus.wait_idle()
    assert not any(m.exchange == "ksched.events" for b in bus.batches for m in b)
