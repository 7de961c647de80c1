"""The informer on the MemoryBus: duplicate uids are refused with a report naming
``metadata.uid``; Services and controllers are validated, logged and projected."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from contracts import topology
from contracts.errors import ErrorReport
from contracts.k8s import Pod
from contracts.kinds import KubeObject, kind_of
from contracts.messages import BoundBatch, BoundPod
from services.common.bus import Delivery, Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.decisions import binding_for
from services.common.eventlog.memory import MemoryEventLog
from services.common.store.memory import MemoryStore
from services.informer.service import InformerService
from tests.builders import make_node, make_pod
from tests.builders.workloads import (
    make_replica_set,
    make_replication_controller,
    make_service,
    make_stateful_set,
)
from tests.unit.framework.plugins.podtopologyspread.helpers import labels

ERRORS = topology.QueueSpec(
    "test.informer.errors", (topology.QueueBinding(topology.ERRORS.name, "#"),), dead_letter=False
)


def event(obj: KubeObject, type_: str = "ADDED") -> Message:
    body = msgspec.json.encode({"type": type_, "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind_of(obj), type_), body)


@pytest.fixture
async def informer():
    bus, store = MemoryBus(), MemoryStore()
    reports: list[ErrorReport] = []

    async def collect(deliveries: Sequence[Delivery]) -> None:
        reports.extend(msgspec.json.decode(d.body, type=ErrorReport) for d in deliveries)

    service = InformerService(bus, store, MemoryEventLog(), FakeClock())
    await service.start()
    await bus.consume_raw(ERRORS, collect)
    yield bus, store, reports
    await service.stop()
    await bus.close()


WEB = make_pod("web", "shop", uid="u-1")


@pytest.mark.parametrize(
    ("events", "stored", "refused"),
    [
        pytest.param(
            [event(WEB), event(make_pod("web-2", "shop", uid="u-1"))],
            ["shop/web"],
            [("pod", "shop", "web-2", "uid 'u-1' is already used by pod shop/web")],
            id="a second pod with the same uid",
        ),
        pytest.param(
            [event(WEB), event(make_service("web", {"app": "web"}, "shop", uid="u-1"))],
            ["shop/web"],
            [("service", "shop", "web", "uid 'u-1' is already used by pod shop/web")],
            id="an object of another kind with the pod's uid",
        ),
        pytest.param(
            [event(WEB), event(WEB, "MODIFIED")],
            ["shop/web"],
            [],
            id="the same object again",
        ),
        pytest.param(
            [event(WEB), event(WEB, "DELETED"), event(make_pod("web-2", "shop", uid="u-1"))],
            ["shop/web-2"],
            [],
            id="the uid of a deleted object",
        ),
        pytest.param(
            [event(WEB), event(make_pod("web", "shop", uid="u-2"), "MODIFIED")],
            ["shop/web"],
            [],
            id="a pod recreated under its name with a new uid",
        ),
    ],
)
async def test_duplicate_uid(informer, events, stored, refused):
    bus, store, reports = informer
    await bus.publish(events)
    await bus.wait_idle()
    assert sorted(await store.objects("pod")) == stored
    got = [(r.object_kind, r.namespace, r.name, r.reason) for r in reports]
    assert got == refused
    assert all(r.field == "metadata.uid" for r in reports)


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(make_service("web", {"app": "web"}, "shop"), id="service"),
        pytest.param(make_replication_controller("web", {"app": "web"}, "shop"), id="rc"),
        pytest.param(make_replica_set("web", labels(app="web"), "shop"), id="replicaset"),
        pytest.param(make_stateful_set("web", labels(app="web"), "shop"), id="statefulset"),
    ],
)
async def test_workload_kinds_are_ingested_and_projected(informer, obj):
    bus, store, reports = informer
    await bus.publish([event(make_node("n1")), event(obj)])
    await bus.wait_idle()
    assert reports == []
    stored = await store.objects(kind_of(obj))
    assert list(stored) == ["shop/web"]
    assert msgspec.json.decode(stored["shop/web"], type=type(obj)) == obj


def bound(*pairs: tuple[Pod, str], trace: str = "") -> Message:
    """One binder batch's BoundBatch: each pod bound to its node."""
    carrier = {"traceparent": trace} if trace else {}
    items = [BoundPod(binding=binding_for(p, n), trace=carrier) for p, n in pairs]
    body = msgspec.json.encode(BoundBatch(bindings=items))
    return Message(topology.BOUND.name, topology.BOUND_KEY, body)


def single(pod: Pod, node: str) -> Message:
    """A Binding alone, as an earlier ksched queued the users' copy for the informer."""
    binding = binding_for(pod, node)
    return Message(topology.BOUND.name, topology.BOUND_KEY, msgspec.json.encode(binding))


A, B = make_pod("a", "shop", uid="u-a"), make_pod("b", "shop", uid="u-b")


@pytest.mark.parametrize(
    ("recorded", "placed", "refused"),
    [
        pytest.param(
            [bound((A, "n1"), (B, "n2"))], {"shop/a": "n1", "shop/b": "n2"}, [],
            id="a batch records every binding",
        ),
        pytest.param(
            [single(A, "n1")], {"shop/a": "n1", "shop/b": ""}, [],
            id="a single Binding left in the queue by an earlier ksched",
        ),
        pytest.param(
            [bound((A, "n1")), bound((A, "n1"))], {"shop/a": "n1", "shop/b": ""}, [],
            id="a redelivered batch changes nothing",
        ),
        pytest.param(
            [bound((A, "n1"), (B, "n9"))], {"shop/a": "n1", "shop/b": ""},
            [("binding", "b", "target.name", "node 'n9' not found")],
            id="one bad binding of a batch is reported, the rest recorded",
        ),
        pytest.param(
            [Message(topology.BOUND.name, topology.BOUND_KEY, b'{"kind": "BoundBatch"'),
             bound((B, "n2"))],
            {"shop/a": "", "shop/b": "n2"},
            [("binding", None, "", "malformed Binding")],
            id="a malformed message is reported and the informer goes on",
        ),
        pytest.param(
            [Message(topology.BOUND.name, topology.BOUND_KEY,
                     b'{"kind": "BoundBatch", "bindings": [{"binding": {"kind": "Binding"}}]}')],
            {"shop/a": "", "shop/b": ""},
            [("binding", None, "", "malformed Binding: Object missing required field "
              "`metadata` - at `$.bindings[0].binding`")],
            id="a batch whose binding lacks its metadata",
        ),
    ],
)  # fmt: skip
async def test_the_binders_batches_are_recorded(informer, recorded, placed, refused):
    bus, store, reports = informer
    await bus.publish([event(make_node("n1")), event(make_node("n2")), event(A), event(B)])
    await bus.wait_idle()
    await bus.publish(recorded)
    await bus.wait_idle()
    pods = await store.objects("pod")
    got = {
        key: msgspec.json.decode(body, type=Pod).spec.node_name or "" for key, body in pods.items()
    }
    assert got == placed
    assert len(reports) == len(refused), reports
    for report, (kind, name, field, reason) in zip(reports, refused, strict=True):
        assert (report.object_kind, report.name, report.field) == (kind, name, field)
        assert report.reason.startswith(reason), report.reason
