"""What a PreBind, Bind or PostBind plugin receives in the binder: the pod by reference
(namespace, name, uid, resourceVersion, the explanation annotation and the
schedulerName), never the scheduled pod's labels, containers, volumes or priority, as
the PreBindPlugin Protocol says (services/framework/api/interface.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from contracts import topology
from contracts.k8s import ObjectMeta, Pod, PodSpec
from contracts.messages import BindBatch, BindRequest
from services.binder.service import BinderService
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.decisions import EXPLAIN_ANNOTATION
from services.common.eventlog.memory import MemoryEventLog
from services.common.store import Reservation
from services.common.store.memory import MemoryStore
from services.framework.api.effects import BindEffect
from services.framework.api.interface import BindPlugin, CycleState, PostBindPlugin, PreBindPlugin
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Status
from services.framework.api.types import PodInfo
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.profile import PluginRef, Plugins, PluginSet, Profile
from services.informer.service import InformerService
from tests.builders import make_node, make_pod
from tests.builders.volumes import claim_volume

NAME = "Recording"
EXPLANATION = '{"filter": {}}'


@dataclass
class Recording(PreBindPlugin, BindPlugin, PostBindPlugin):
    """Records the pod each binding-cycle point receives; binds it."""

    seen: list[tuple[str, PodInfo]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return NAME

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.seen.append(("PreBind", pod))
        return SUCCESS

    async def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.seen.append(("Bind", pod))
        state.effects.append(BindEffect(node))
        return SUCCESS

    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self.seen.append(("PostBind", pod))


def _binder(
    bus: MemoryBus, store: MemoryStore, clock: FakeClock, plugin: Recording
) -> BinderService:
    ref = (PluginRef(NAME),)
    profile = Profile(
        scheduler_name="second",
        plugins=Plugins(
            queue_sort=PluginSet((PluginRef("PrioritySort"),)),
            pre_bind=PluginSet(ref),
            bind=PluginSet(ref),
            post_bind=PluginSet(ref),
        ),
    )
    registry = {**in_tree_registry(), NAME: PluginEntry(NAME, Recording, lambda _a, _h: plugin)}
    return BinderService(bus, store, clock, [profile], registry=registry)


def _scheduled_pod() -> Pod:
    """A pod with everything a plugin might want to read."""
    pod = make_pod(
        "web",
        "prod",
        resource_version="42",
        requests={"cpu": "500m", "memory": "1Gi"},
        priority=1000,
        scheduler_name="second",
        labels={"app": "web"},
        node_selector={"disk": "ssd"},
        volumes=[claim_volume("data")],
    )
    meta = msgspec.structs.replace(pod.metadata, annotations={"team": "a"})
    return msgspec.structs.replace(pod, metadata=meta)


async def test_binding_cycle_plugins_receive_the_pod_by_reference() -> None:
    bus, store, clock, plugin = MemoryBus(), MemoryStore(), FakeClock(), Recording()
    informer = InformerService(bus, store, MemoryEventLog(), clock)
    binder = _binder(bus, store, clock, plugin)
    await informer.start()
    await binder.start()
    node = msgspec.json.encode({"type": "ADDED", "object": make_node("n1")})
    await bus.publish([Message(topology.EVENTS.name, topology.event_key("node", "ADDED"), node)])
    await bus.wait_idle()
    pod = _scheduled_pod()
    uid = pod.metadata.uid or ""
    request = BindRequest(  # what the scheduler sends for it
        uid=uid,
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        resource_version=pod.metadata.resource_version,
        node="n1",
        attempt=1,
        profile=pod.spec.scheduler_name,
        explanation=EXPLANATION,
    )
    await store.set_leases({uid: 1})
    reservation = Reservation(uid=uid, node="n1", attempt=1, requests={}, ttl=30)
    assert [a.status for a in await store.assume([reservation], clock.now())] == ["assumed"]
    body = msgspec.json.encode(BindBatch(requests=[request]))
    await bus.publish([Message(topology.BIND.name, topology.BIND_KEY, body)])
    await bus.wait_idle()
    await binder.stop()
    await informer.stop()
    await bus.close()

    assert [point for point, _ in plugin.seen] == ["PreBind", "Bind", "PostBind"]
    reference = Pod(
        metadata=ObjectMeta(
            name="web",
            namespace="prod",
            uid=uid,
            resource_version="42",
            annotations={EXPLAIN_ANNOTATION: EXPLANATION},
        ),
        spec=PodSpec(scheduler_name="second"),
    )
    for point, info in plugin.seen:
        assert info.pod == reference, point
        assert (info.key, info.uid, info.priority) == ("prod/web", uid, 0), point
        assert not info.requests, point
        assert info.pod.spec.containers == [] and info.pod.spec.volumes == [], point
        assert info.pod.metadata.labels == {}, point
