"""SchedulerService on the in-memory bus and store (services/common/*/memory.py)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common import telemetry
from services.common.store import PodCharge, ProjectedEntry, Reservation
from services.framework.api.types import PodInfo
from tests.builders import make_node, make_pod
from tests.unit.framework.helpers import snapshot_of
from tests.unit.scheduler.service_support import Harness


@pytest.fixture
async def harness():
    h = Harness()
    yield h
    await h.service.stop()
    await h.bus.close()


async def test_schedules_a_batch_and_reports_the_unschedulable(harness):
    await harness.add_node(make_node("n1", allocatable={"cpu": "2", "pods": 110}))
    await harness.add_node(make_node("n2", allocatable={"cpu": "2", "pods": 110}))
    await harness.start()
    pods = [make_pod(f"p{i}", requests={"cpu": "1"}) for i in range(3)]
    big = make_pod("big", requests={"cpu": "3"})
    await harness.schedule(*pods, big)
    await harness.bus.wait_idle()

    placed = {b.name: b.node for b in harness.binds}
    assert set(placed) == {"p0", "p1", "p2"}
    assert sorted(placed.values()).count("n1") <= 2 and sorted(placed.values()).count("n2") <= 2
    assumed = await harness.store.assumed()
    assert {uid: a.node for uid, a in assumed.items()} == {
        p.metadata.uid: placed[p.metadata.name] for p in pods
    }
    (result,) = harness.results
    assert (result.name, result.outcome, result.plugins) == (
        "big",
        "unschedulable",
        ["NodeResourcesFit"],
    )
    assert result.message == (
        "0/2 nodes are available: 2 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
    (event,) = harness.events
    assert (event.reason, event.type, event.action) == ("FailedScheduling", "Warning", "Scheduling")
    assert event.message == result.message
    assert event.involved_object.name == "big"
    assert event.involved_object.uid == big.metadata.uid


async def test_store_conflict_corrects_the_view_and_retries(harness):
    await harness.add_node(make_node("n1", allocatable={"cpu": "2", "pods": 110}))
    await harness.add_node(make_node("n2", allocatable={"cpu": "2", "pods": 110}))
    await harness.start()
    # Another replica took n1 after this one loaded its snapshot.
    await harness.store.set_leases({"other": 1})
    foreign = Reservation(
        uid="other", node="n1", attempt=1, requests={"cpu": 2000, "pods": 1}, ttl=30
    )
    assert [r.status for r in await harness.store.assume([foreign], harness.clock.now())] == [
        "assumed"
    ]
    pods = [make_pod(f"p{i}", requests={"cpu": "1"}) for i in range(3)]
    await harness.schedule(*pods)
    await harness.bus.wait_idle()
    assert sorted(b.node for b in harness.binds) == ["n2", "n2"]
    (result,) = harness.results
    assert result.outcome == "unschedulable"
    assert result.message == (
        "0/2 nodes are available: 2 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


async def test_stale_attempt_is_forgotten_locally(harness):
    await harness.add_node(make_node("n1", allocatable={"cpu": "2", "pods": 110}))
    await harness.start()
    await harness.schedule(make_pod("p", requests={"cpu": "2"}), lease=False)
    await harness.bus.wait_idle()
    assert harness.binds == [] and harness.events == []
    assert [r.outcome for r in harness.results] == ["stale"]
    assert harness.service.cache.snapshot().node_info(0).requested["cpu"] == 0


async def test_waits_for_the_snapshot_to_reach_the_request_seq(harness):
    await harness.add_node(make_node("small", allocatable={"cpu": "1", "pods": 110}))
    await harness.start()
    pod = make_pod("p", requests={"cpu": "2"})
    # The queue already saw the pod (seq 2) and node "large" (seq 3); the scheduler not.
    await harness.schedule(pod, seq=3, add=False)
    for _ in range(50):
        await asyncio.sleep(0)  # let the request reach the scheduler, which must wait
    assert harness.binds == [] and harness.results == []
    await harness.add_pod(pod)
    await harness.add_node(make_node("large", allocatable={"cpu": "4", "pods": 110}), publish=True)
    await harness.bus.wait_idle()
    assert [(b.name, b.node) for b in harness.binds] == [("p", "large")]


async def test_gives_up_waiting_after_the_catch_up_timeout(harness):
    await harness.add_node(make_node("n1"))
    await harness.start()
    await asyncio.sleep(0)  # the service's own timers start (the cache metrics' refresh)
    timers = harness.clock.sleepers
    await harness.schedule(make_pod("p"), seq=99)
    for _ in range(100):  # until the scheduler waits on the clock
        if harness.clock.sleepers > timers:
            break
        await asyncio.sleep(0)
    await harness.clock.advance(30)
    await harness.bus.wait_idle()
    (result,) = harness.results
    assert result.outcome == "error"
    assert "snapshot is behind" in result.message


async def test_start_replays_events_buffered_during_the_load(harness):
    await harness.add_node(make_node("n1", allocatable={"cpu": "1", "pods": 110}))
    await harness.start()
    await harness.add_node(make_node("n2", allocatable={"cpu": "8", "pods": 110}), publish=True)
    await harness.bus.wait_idle()
    assert harness.service.cache.applied_seq == 2
    assert harness.service.cache.snapshot().names == ["n1", "n2"]


async def test_bound_pod_in_store_is_counted_after_restart(harness):
    node = make_node("n1", allocatable={"cpu": "2", "pods": 110})
    await harness.add_node(node)
    running = make_pod("running", node_name="n1", requests={"cpu": "2"})
    charge = PodCharge(running.metadata.uid, "n1", {"cpu": 2000, "pods": 1})
    await harness.store.apply(
        [ProjectedEntry(2, "pod", "default/running", msgspec.json.encode(running), pod=charge)]
    )
    harness.seq = 2
    await harness.start()
    await harness.schedule(make_pod("p", requests={"cpu": "1"}))
    await harness.bus.wait_idle()
    assert harness.binds == []
    assert harness.results[0].message == (
        "0/1 nodes are available: 1 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


async def test_one_trace_per_cycle_with_extension_point_spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    harness = Harness(tracer=provider.get_tracer("test"))
    await harness.add_node(make_node("n1"))
    await harness.add_node(make_node("n2"))
    await harness.start()
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
    await harness.schedule(make_pod("p", requests={"cpu": "1"}), trace=parent)
    await harness.bus.wait_idle()
    await harness.service.stop()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert {"scheduling_cycle", "PreFilter", "Filter", "PreScore", "Score"} <= set(spans)
    cycle = spans["scheduling_cycle"]
    assert f"{cycle.context.trace_id:032x}" == trace_id
    assert spans["Filter"].parent.span_id == cycle.context.span_id
    (bind,) = harness.binds
    assert bind.trace["traceparent"].split("-")[1:3] == [trace_id, f"{cycle.context.span_id:016x}"]
    await harness.bus.close()


@pytest.mark.parametrize(
    ("explicit", "installed", "spans"),
    [
        (False, False, False),  # spans go nowhere: the extension points make none
        (False, True, True),  # an SDK provider is installed (an exporter is configured)
        (True, False, True),  # a tracer handed over (tests, simulate --trace)
    ],
)
def test_extension_point_spans_only_when_they_go_somewhere(monkeypatch, explicit, installed, spans):
    state = {"installed": installed}
    monkeypatch.setattr("services.common.telemetry.tracing", lambda: state["installed"])
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    harness = Harness(tracer=provider.get_tracer("test") if explicit else None)
    (framework,) = harness.service.frameworks.values()
    if not explicit:
        framework.tracer = provider.get_tracer("test")  # where the spans would go
    snapshot = snapshot_of([make_node("n1"), make_node("n2")])
    pod = PodInfo.of(make_pod("p", requests={"cpu": "1"}))
    framework.schedule_pod(snapshot, pod)
    assert bool(exporter.get_finished_spans()) is spans
    # Asked per pod: a provider installed (or removed) later counts from the next one.
    state["installed"] = not installed
    exporter.clear()
    framework.schedule_pod(snapshot, pod)
    assert bool(exporter.get_finished_spans()) is (explicit or not installed)


@pytest.mark.parametrize(
    ("provider", "expected"),
    [(TracerProvider(), True), (trace_api.NoOpTracerProvider(), False), (None, False)],
)
def test_tracing_is_an_sdk_provider(monkeypatch, provider, expected):
    current = provider if provider is not None else trace_api.ProxyTracerProvider()
    monkeypatch.setattr(telemetry.trace, "get_tracer_provider", lambda: current)
    assert telemetry.tracing() is expected
