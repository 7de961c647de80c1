"""QueueService on the in-memory bus and store with a FakeClock: dispatch with bounded
credit, results, the timers, the view, metrics, nominations and restarts."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from contracts import topology
from contracts.events import ClusterBatch
from contracts.messages import AttemptResult, ResultBatch
from contracts.queueview import QueueView
from services.common.bus import Message
from services.common.settings import QueueSettings
from services.common.store import Nomination, ProjectedEntry
from services.common.store.memory import MemoryStore
from services.queue.service import QueueService
from tests.builders import make_node, make_pod
from tests.unit.queue.helpers import logged, with_
from tests.unit.queue.service_support import Harness, projected


async def test_dispatches_in_queue_order_with_bounded_credit(harness: Harness) -> None:
    await harness.apply(*[make_pod(f"p{i}", priority=i % 2) for i in range(6)])
    assert harness.names() == ["p1", "p3", "p5", "p0"]  # 4 slots, higher priority first
    assert await harness.store.leases() == {f"default-{n}-uid": 1 for n in harness.names()}
    assert harness.queue.in_flight == 4
    await harness.answer((harness.requests[0], "bound", []))
    assert harness.names()[4:] == ["p2"]
    assert "default-p1-uid" not in await harness.store.leases()


async def test_a_high_priority_pod_behind_a_10k_backlog_is_attempted_next() -> None:
    h = Harness(max_in_flight=8, dispatch_batch=8)
    await h.start()
    try:
        await h.apply(*[make_pod(f"low-{i}") for i in range(10_000)])
        assert len(h.requests) == 8
        await h.apply(make_pod("urgent", priority=1_000_000))
        await h.answer((h.requests[0], "unschedulable", ["NodeResourcesFit"]))
        assert h.names()[8] == "urgent"
    finally:
        await h.queue.stop()
        await h.bus.close()


async def test_a_result_for_another_attempt_is_ignored(harness: Harness) -> None:
    await harness.apply(make_pod("a"))
    (request,) = harness.requests
    stale = msgspec.structs.replace(request, attempt=request.attempt + 5)
    await harness.answer((stale, "bound", []))
    assert harness.queue.in_flight == 1 and "default-a-uid" in harness.queue.queue


async def test_a_parked_pod_comes_back_on_an_event_its_plugin_registered(harness: Harness) -> None:
    await harness.apply(make_pod("big", requests={"cpu": "2"}))
    await harness.answer((harness.requests[0], "unschedulable", ["NodeResourcesFit"]))
    assert harness.queue.queue.counts()["unschedulable"] == 1
    await harness.apply(make_node("small", allocatable={"cpu": "1", "pods": 10}))
    assert len(harness.requests) == 1  # the hint: too small even empty
    await harness.apply(make_node("large", allocatable={"cpu": "4", "pods": 10}))
    # Still inside its 1 s backoff, but activeQ is empty: PopFromBackoffQ takes it.
    assert harness.names() == ["big", "big"]
    assert harness.requests[1].attempt == 2


async def test_error_backoff_is_flushed_on_the_one_second_ticks(harness: Harness) -> None:
    await harness.apply(make_pod("a"))
    await harness.answer((harness.requests[0], "error", []))
    counts = harness.queue.queue.counts()
    assert counts["backoff"] == 1 and len(harness.requests) == 1
    await harness.advance(1.0)  # the backoff ends at t+1, in the window [t+1, t+2)
    assert len(harness.requests) == 1
    await harness.advance(1.0)
    assert len(harness.requests) == 2 and harness.requests[1].attempt == 2
    await harness.answer((harness.requests[1], "error", []))
    await harness.advance(2.0)
    assert len(harness.requests) == 2  # second error: 2 s, flushed at t+3
    await harness.advance(1.0)
    assert len(harness.requests) == 3


async def test_a_parked_pod_is_retried_by_the_leftover_flush_after_five_minutes(
    harness: Harness,
) -> None:
    await harness.apply(make_pod("a"))
    await harness.answer((harness.requests[0], "unschedulable", ["NodeResourcesFit"]))
    await harness.advance(329)  # checked every 30 s; parked exactly 300 s is not over
    assert len(harness.requests) == 1
    await harness.advance(1)
    assert len(harness.requests) == 2
    assert harness.queue.queue.incoming[("active", "UnschedulableTimeout")] == 1


async def test_an_event_seen_while_in_flight_requeues_the_failed_pod(harness: Harness) -> None:
    await harness.apply(make_pod("a", requests={"cpu": "1"}))
    await harness.apply(make_node("n", allocatable={"cpu": "4", "pods": 10}))
    await harness.answer((harness.requests[0], "unschedulable", ["NodeResourcesFit"]))
    assert harness.names() == ["a", "a"]


async def test_a_gated_pod_waits_for_its_gates_to_be_removed(harness: Harness) -> None:
    pod = make_pod("a", scheduling_gates=("wait",))
    await harness.apply(pod)
    await harness.advance(400)
    assert harness.requests == [] and harness.queue.queue.counts()["gated"] == 1
    await harness.apply(make_pod("a"), type_="MODIFIED")
    assert harness.names() == ["a"]


async def test_nominations_follow_the_pods_into_the_store(harness: Harness) -> None:
    pod = make_pod("a", priority=7, nominated_node_name="n1")
    await harness.apply(pod)
    assert await harness.store.nominations() == {"default-a-uid": Nomination("n1", 7)}
    await harness.answer((harness.requests[0], "bound", []))
    assert await harness.store.nominations() == {}


async def test_the_view_is_published_once_a_second_when_it_changed(harness: Harness) -> None:
    await harness.apply(make_pod("a", scheduling_gates=("g",)), make_pod("b"), make_pod("c"))
    await harness.answer((harness.requests[0], "unschedulable", ["TaintToleration"]))
    await harness.advance(1)
    view = msgspec.json.decode(await harness.store.queue_view() or b"", type=QueueView)
    assert view.counts == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 1, "inflight": 1}
    assert [p.pod for p in view.heads["unschedulable"]] == ["default/b"]
    assert view.heads["unschedulable"][0].plugins == ["TaintToleration"]
    [gated] = view.heads["gated"]
    assert (gated.gates, gated.plugins) == (["g"], ["SchedulingGates"])
    assert gated.message == "Scheduling is blocked due to non-empty scheduling gates"
    assert view.applied_seq == 3
    await harness.advance(1)
    again = msgspec.json.decode(await harness.store.queue_view() or b"", type=QueueView)
    assert again.at == view.at  # nothing changed: not republished


async def test_metrics_have_upstreams_names_and_labels(harness: Harness) -> None:
    await harness.apply(make_pod("a"), make_pod("g", scheduling_gates=("x",)))
    await harness.answer((harness.requests[0], "unschedulable", ["NodeResourcesFit"]))
    registry = harness.queue.registry
    value = registry.get_sample_value
    assert value("scheduler_pending_pods", {"queue": "unschedulable"}) == 1
    assert value("scheduler_pending_pods", {"queue": "gated"}) == 1
    assert value("scheduler_pending_pods", {"queue": "active"}) == 0
    assert value("scheduler_pending_pods", {"queue": "backoff"}) == 0
    incoming = "scheduler_queue_incoming_pods_total"
    assert value(incoming, {"queue": "active", "event": "UnschedulablePodAdd"}) == 1
    assert value(incoming, {"queue": "unschedulable", "event": "UnschedulablePodAdd"}) == 1
    assert value(incoming, {"queue": "unschedulable", "event": "ScheduleAttemptFailure"}) == 1


async def test_the_metrics_endpoint_serves_the_registry() -> None:
    h = Harness(metrics_port=0)
    await h.start()
    try:
        assert h.queue.metrics is not None
        url = f"http://127.0.0.1:{h.queue.metrics.port}/metrics"
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
        assert b'scheduler_pending_pods{queue="active"} 0.0' in text
    finally:
        await h.queue.stop()
        await h.bus.close()
    assert h.queue.metrics is None


async def test_a_restarted_queue_attempts_pods_in_flight_again_exactly_once() -> None:
    first = Harness(max_in_flight=2, dispatch_batch=2)
    await first.start()
    await first.apply(make_pod("a"), make_pod("b"), make_pod("c"))
    lost = list(first.requests)
    assert [(r.name, r.attempt) for r in lost] == [("a", 1), ("b", 1)]
    await first.queue.stop()  # killed: no result ever comes for the attempts in flight
    restarted = QueueService(
        first.bus, first.store, first.clock, settings=QueueSettings(max_in_flight=10)
    )
    await restarted.start()
    await first.settle()
    again = [(r.name, r.attempt) for r in first.requests[len(lost) :]]
    assert sorted(again) == [("a", 2), ("b", 2), ("c", 1)]
    assert await first.store.leases() == {
        "default-a-uid": 2,
        "default-b-uid": 2,
        "default-c-uid": 1,
    }
    # The old attempts' results are ignored.
    await first.answer(*[(r, "bound", []) for r in lost])
    assert len(restarted.queue) == 3 and restarted.in_flight == 3
    await restarted.stop()
    await first.bus.close()


async def test_a_gap_in_the_cluster_stream_resyncs_from_the_store(harness: Harness) -> None:
    await harness.apply(make_pod("a"))
    await harness.apply(make_pod("b"), publish=False)  # lost on the way
    await harness.apply(make_pod("c"))  # seq 3 after 1: a gap
    assert sorted(harness.names()) == ["a", "b", "c"]
    assert harness.queue.applied_seq == 3


async def test_a_pod_bound_and_deleted_leaves_the_queue(harness: Harness) -> None:
    pod = make_pod("a")
    await harness.apply(pod, make_pod("b"))
    await harness.apply(with_(pod, spec__node_name="n1"), type_="MODIFIED")
    await harness.apply(make_pod("b"), type_="DELETED")
    assert len(harness.queue.queue) == 0 and harness.queue.in_flight == 0


class _LosingStore(MemoryStore):
    """The queue's client of a store that is lost under it (chaos, seed 11): one
    set_leases dies with the connection as Redis restarts empty, and pods are published
    while the queue reads the rebuilt store for its resync."""

    def __init__(self, informer: MemoryStore) -> None:
        super().__init__(_data=informer._d)
        self.lose_on_set_leases = False
        self.while_resyncing: list[Any] = []

    async def set_leases(self, leases: Any) -> None:
        if self.lose_on_set_leases:
            self.lose_on_set_leases = False
            self.flush()
            raise ConnectionError("Error while reading from redis: Connection reset by peer")
        await super().set_leases(leases)

    async def objects(self, kind: str) -> dict[str, bytes]:
        found = await super().objects(kind)
        if kind == "node" and self.while_resyncing:  # read after the pods
            hook, self.while_resyncing = self.while_resyncing[0], []
            await hook()
        return found


_Losing = TypeVar("_Losing", bound=_LosingStore)


def _on_a_losing_store(
    kind: type[_Losing],
) -> tuple[Harness, _Losing, list[ProjectedEntry]]:
    """A harness whose queue reads the store through ``kind``, and the informer's log
    (every entry applied to the store), to rebuild the store from."""
    h = Harness(max_in_flight=8, dispatch_batch=4)
    store = kind(h.store)
    h.queue = QueueService(h.bus, store, h.clock, settings=h.settings)
    log: list[ProjectedEntry] = []
    real_apply = h.store.apply

    async def apply_and_log(entries: Sequence[ProjectedEntry]) -> None:
        await real_apply(entries)
        log.extend(entries)

    h.store.apply = apply_and_log  # type: ignore[method-assign]
    return h, store, log


async def test_pods_published_while_the_queue_reads_a_rebuilt_store_are_not_lost() -> None:
    """Events applied while a resync reads the store must not be undone by the older
    snapshot (and then skipped as already seen): chaos seed 11 left 49 pods, published
    right after the store was rebuilt, in no sub-queue."""
    h, store, log = _on_a_losing_store(_LosingStore)
    await h.apply(make_node("n1"), publish=False)
    await h.start()  # attached to the live store: a loss is StoreLost for it
    await h.apply(make_pod("a"))
    assert h.names() == ["a"]

    # Redis restarts empty under the dispatch of b: a ConnectionError, not StoreLost.
    store.lose_on_set_leases = True
    await h.apply(make_pod("b"))
    assert h.names() == ["a"] and store.lose_on_set_leases is False
    # The informer rebuilds the store from its log.
    await h.store.restore(list(log), final=True)

    late = [f"late{i}" for i in range(3)]

    async def publish_late_pods() -> None:
        events = []
        for pod in map(make_pod, late):
            h.seq += 1
            events.append(msgspec.structs.replace(logged(pod), seq=h.seq))
        await h.store.apply([projected(e) for e in events])
        body = msgspec.json.encode(ClusterBatch(events=events))
        await h.bus.publish([Message(topology.CLUSTER.name, "", body)])
        for _ in range(50):  # the cluster consumer's chance to run meanwhile
            await asyncio.sleep(0)

    store.while_resyncing.append(publish_late_pods)
    # After its pause the dispatch loop finds the store rebuilt: StoreLost, resync.
    for _ in range(5):
        await h.advance(1.0)
    assert h.queue.applied_seq == h.seq
    assert len(h.queue.queue) == 5, "pods published during the resync were dropped"
    assert sorted(h.names()) == ["a", "b", "late0", "late1", "late2"]
    assert h.queue.in_flight == 5  # a's attempt is still out: its lease was written back
    # b's attempts 1 (ConnectionError) and 2 (StoreLost) never got out.
    leases = {f"default-{n}-uid": 1 for n in ("a", *late)}
    assert await store.leases() == {**leases, "default-b-uid": 3}
    await h.queue.stop()
    await h.bus.close()


class _StaleConnectionStore(_LosingStore):
    """As :class:`_LosingStore`, and one epoch read can also die on a connection the
    restart left stale (redis-py's pool hands each stale connection out once)."""

    def __init__(self, informer: MemoryStore) -> None:
        super().__init__(informer)
        self.stale_epoch_reads = 0

    async def epoch(self) -> Any:
        if self.stale_epoch_reads:
            self.stale_epoch_reads -= 1
            raise ConnectionError("Connection closed by server.")
        return await super().epoch()


async def test_a_failed_recovery_does_not_stop_the_dispatching() -> None:
    """Chaos: Redis restarted empty under a dispatch; the retry found the store lost,
    and the recovery's own read of the store died on a stale connection. That error
    ended the dispatch loop, and the queue held 499 pods in activeQ with nothing in
    flight until the run's deadline."""
    h, store, log = _on_a_losing_store(_StaleConnectionStore)
    await h.apply(make_node("n1"), publish=False)
    await h.start()
    await h.apply(make_pod("a"))
    store.lose_on_set_leases = True
    await h.apply(make_pod("b"))  # a ConnectionError: b goes back to activeQ
    assert h.names() == ["a"]
    await h.store.restore(list(log), final=True)
    store.stale_epoch_reads = 1  # the recovery after the retry's StoreLost dies once
    for _ in range(5):
        await h.advance(1.0)
    assert h.names()[-1] == "b", "nothing dispatched b after the failed recovery"
    assert h.queue.in_flight == 2
    await h.queue.stop()
    await h.bus.close()


async def test_a_pod_bound_while_the_queue_resyncs_is_not_attempted_again() -> None:
    """A ``bound`` result handled between a resync's read of the store and its
    convergence: the older snapshot still has the pod pending (its Binding is not in the
    log yet) and must not bring it back for a second attempt."""
    h = Harness(max_in_flight=8, dispatch_batch=4)
    store = _LosingStore(h.store)
    h.queue = QueueService(h.bus, store, h.clock, settings=h.settings)
    await h.apply(make_node("n1"), publish=False)
    await h.start()
    await h.apply(make_pod("a"))
    (request,) = h.requests

    async def bind_a() -> None:
        result = AttemptResult(
            uid=request.uid,
            namespace="default",
            name="a",
            attempt=request.attempt,
            outcome="bound",
            plugins=[],
        )
        body = msgspec.json.encode(ResultBatch(results=[result]))
        await h.bus.publish([Message(topology.RESULTS.name, topology.RESULTS_KEY, body)])
        for _ in range(50):  # the results consumer's chance to run meanwhile
            await asyncio.sleep(0)

    store.while_resyncing.append(bind_a)
    await h.apply(make_pod("b"), publish=False)  # lost on the way
    await h.apply(make_pod("c"))  # a gap: resync
    await h.advance(5.0)
    assert sorted(h.names()) == ["a", "b", "c"], "a was attempted again"
    assert "default-a-uid" not in h.queue.queue
    await h.queue.stop()
    await h.bus.close()
