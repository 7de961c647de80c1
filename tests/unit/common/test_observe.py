"""services.common.observe: the health state and its endpoints, the watchdog's checks,
and the edge counters on the in-memory bus and store (the real ones are exercised by
tests/integration/test_observability.py)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Sequence

import pytest

from contracts import topology as t
from services.common.bus import Delivery, Message, Rejection
from services.common.bus.memory import MemoryBus
from services.common.observe import (
    LIVE_WITHIN,
    EdgeMetrics,
    Health,
    MeteredBus,
    MeteredStore,
    ServiceEndpoint,
    Watchdog,
)
from services.common.store.memory import MemoryStore


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_live_while_the_heartbeat_is_recent() -> None:
    clock = Clock()
    health = Health("queue", clock=clock, beat=clock.now)
    assert health.live()[0]
    clock.now += LIVE_WITHIN + 1
    ok, lines = health.live()
    assert not ok and lines[-1] == "[-]event-loop failed: no heartbeat for 11.0 s"


@pytest.mark.parametrize(
    ("started", "results", "ready", "line"),
    [
        (False, {"broker": None, "redis": None}, False, "[-]queue-started failed: starting"),
        (True, {"broker": None}, False, "[-]redis failed: not checked yet"),
        (True, {"broker": "not connected to the broker", "redis": None}, False,
         "[-]broker failed: not connected to the broker"),
        (True, {"broker": None, "redis": None}, True, "[+]redis ok"),
    ],
)  # fmt: skip
def test_ready_once_started_and_while_both_edges_answer(
    started: bool, results: dict[str, str | None], ready: bool, line: str
) -> None:
    clock = Clock()
    health = Health("queue", clock=clock, beat=clock.now, started=started, results=results)
    ok, lines = health.ready()
    assert ok is ready and line in lines


async def test_the_watchdog_records_each_check_and_sets_the_gauges() -> None:
    metrics = EdgeMetrics()
    health = Health("binder")

    async def fine() -> None:
        return None

    async def down() -> None:
        raise ConnectionError("connection refused\nmore")

    await Watchdog(health, {"broker": down, "redis": fine}, metrics).check_once()
    assert health.results == {"broker": "connection refused", "redis": None}
    assert metrics.registry.get_sample_value("ksched_broker_connected") == 0
    assert metrics.registry.get_sample_value("ksched_redis_connected") == 1


def test_the_endpoint_serves_health_and_metrics() -> None:
    clock = Clock()
    health = Health("informer", clock=clock, beat=clock.now)
    metrics = EdgeMetrics()
    endpoint = ServiceEndpoint(health, [metrics.registry], 0, addr="127.0.0.1")
    try:
        status, text = get(endpoint.port, "/readyz")
        assert status == 503 and text.endswith("readyz check failed\n")
        health.started, health.results = True, {"broker": None, "redis": None}
        assert get(endpoint.port, "/readyz") == (
            200,
            "[+]ping ok\n[+]event-loop ok\n[+]informer-started ok\n[+]broker ok\n"
            "[+]redis ok\nreadyz check passed\n",
        )
        assert get(endpoint.port, "/livez")[0] == 200
        clock.now += LIVE_WITHIN + 1
        assert get(endpoint.port, "/healthz")[0] == 500
        status, text = get(endpoint.port, "/metrics")
        assert status == 200 and "# TYPE ksched_publish_confirm_duration_seconds histogram" in text
        assert get(endpoint.port, "/nope")[0] == 404
    finally:
        endpoint.close()


async def test_the_bus_counts_what_it_carries_and_what_it_dead_letters() -> None:
    metrics = EdgeMetrics()
    bus = MeteredBus(MemoryBus(), metrics)
    spec = t.QueueSpec("test.observed", (t.QueueBinding(t.EVENTS.name, "#"),))
    await bus.declare([spec])

    async def handler(deliveries: Sequence[Delivery]) -> list[Rejection]:
        return [Rejection(d, "bad") for d in deliveries if d.body == b"bad"]

    consumer = await bus.consume_raw(spec, handler)
    await bus.publish([Message(t.EVENTS.name, "pod.added", b) for b in (b"a", b"bad", b"c")])
    await bus.inner.wait_idle()  # type: ignore[attr-defined]
    await consumer.cancel()
    sample = metrics.registry.get_sample_value
    assert sample("ksched_messages_published_total", {"exchange": t.EVENTS.name}) == 3
    assert sample("ksched_messages_consumed_total", {"queue": spec.name}) == 3
    assert sample("ksched_messages_dead_lettered_total", {"queue": spec.name}) == 1
    assert sample("ksched_batch_size_sum", {"queue": spec.name}) == 3
    assert sample("ksched_publish_confirm_duration_seconds_count") == 1
    assert bus.connected()


async def test_the_store_times_each_operation_by_name() -> None:
    metrics = EdgeMetrics()
    store = MeteredStore(MemoryStore("t"), metrics)
    assert await store.applied_seq() == 0
    await store.applied_seq()
    labels = {"operation": "applied_seq"}
    assert (
        metrics.registry.get_sample_value("ksched_redis_call_duration_seconds_count", labels) == 2
    )
