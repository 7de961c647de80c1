"""``--no-scheduled-events`` (BinderSettings.scheduled_events): the binder publishes the
Binding without the ``Scheduled`` Event; by default both go out, as kube-scheduler
records the Event (in-memory bus, store and event log)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec
import pytest

from contracts import topology
from contracts.messages import BindBatch, BindRequest
from services.binder.service import BinderService
from services.cli.main import _settings, _settings_argv, parser
from services.cli.runtime import build
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog.memory import MemoryEventLog
from services.common.settings import from_env
from services.common.store import Reservation
from services.common.store.memory import MemoryStore
from services.informer.service import InformerService
from tests.builders import make_pod
from tests.unit.framework.plugins.volumes.helpers import host


class RecordingBus(MemoryBus):
    def __init__(self) -> None:
        super().__init__()
        self.published: list[Message] = []

    async def publish(self, messages: Sequence[Message]) -> None:
        self.published += messages
        await super().publish(messages)


def _event(kind: str, obj: object) -> Message:
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind, "ADDED"), body)


async def _decisions_of_one_binding(scheduled_events: bool | None) -> list[str]:
    """The routing keys the binder publishes on ksched.decisions binding one pod."""
    settings = from_env({}, scheduled_events=scheduled_events)
    bus, store, clock = RecordingBus(), MemoryStore(), FakeClock()
    informer = InformerService(bus, store, MemoryEventLog(), clock)
    binder = build("binder", settings, bus, store)
    assert isinstance(binder, BinderService)
    await informer.start()
    await binder.start()
    try:
        pod = make_pod("web")
        await bus.publish([_event("node", host("n1")), _event("pod", pod)])
        await bus.wait_idle()
        uid = pod.metadata.uid or ""
        await store.set_leases({uid: 1})
        reservation = Reservation(uid=uid, node="n1", attempt=1, requests={"pods": 1}, ttl=30)
        assert [a.status for a in await store.assume([reservation], time.time())] == ["assumed"]
        bus.published.clear()
        request = BindRequest(
            uid=uid, namespace=pod.metadata.namespace, name="web", node="n1", attempt=1,
            profile=pod.spec.scheduler_name,
        )  # fmt: skip
        body = msgspec.json.encode(BindBatch(requests=[request]))
        await bus.publish([Message(topology.BIND.name, topology.BIND_KEY, body)])
        await bus.wait_idle()
    finally:
        await binder.stop()
        await informer.stop()
        await bus.close()
    return [m.routing_key for m in bus.published if m.exchange == topology.DECISIONS.name]


@pytest.mark.parametrize(
    ("flag", "keys"),
    [
        (None, ["binding.default", "event.default"]),
        (True, ["binding.default", "event.default"]),
        (False, ["binding.default"]),
    ],
    ids=["default", "on", "off"],
)
async def test_the_scheduled_event_goes_out_unless_turned_off(
    flag: bool | None, keys: list[str]
) -> None:
    assert await _decisions_of_one_binding(flag) == keys


def test_the_flag_reaches_the_binder_settings_and_up_forwards_it() -> None:
    assert _settings(parser().parse_args(["run", "binder"])).binder.scheduled_events is True
    off = parser().parse_args(["run", "binder", "--no-scheduled-events"])
    assert _settings(off).binder.scheduled_events is False
    up = parser().parse_args(["up", "--no-scheduled-events"])
    assert "--no-scheduled-events" in _settings_argv(up)  # every child takes it
    assert "--no-scheduled-events" not in _settings_argv(parser().parse_args(["up"]))
    bench = parser().parse_args(["bench", "SchedulingBasic", "--no-scheduled-events"])
    assert bench.scheduled_events is False
