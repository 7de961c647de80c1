"""The keyed heap, the in-flight event log and the nominator's writes to the store."""

from __future__ import annotations

import random

from services.common.store import Nomination
from services.common.store.memory import MemoryStore
from services.framework.api.events import ActionType, ClusterEvent, EventResource
from services.queue.heap import KeyedHeap
from services.queue.in_flight import InFlight
from services.queue.nominator import Nominator
from tests.builders import make_pod


def test_keyed_heap_orders_updates_deletes_and_peeks_without_popping() -> None:
    keys = {f"u{i}": random.Random(i).random() for i in range(500)}
    heap: KeyedHeap[str] = KeyedHeap(lambda uid: (keys[uid],))
    for uid in keys:
        heap.push(uid, uid)
    for uid in list(keys)[:100]:
        heap.delete(uid)
    for uid in list(keys)[100:200]:
        keys[uid] = -keys[uid]  # moved to the front
        heap.push(uid, uid)
    expected = sorted(list(keys)[100:], key=lambda u: keys[u])
    assert heap.smallest(30) == expected[:30]
    assert len(heap) == 400
    assert [heap.pop() for _ in range(400)] == expected
    assert heap.pop() is None and heap.peek() is None


def test_keyed_heap_compacts_stale_entries() -> None:
    heap: KeyedHeap[int] = KeyedHeap(lambda n: (n,))
    for round_ in range(5):
        for i in range(1000):
            heap.push(str(i), i + round_)
    assert len(heap) == 1000
    assert len(heap._entries) < 3 * 1000 + 2048


def test_in_flight_keeps_events_only_while_someone_may_need_them() -> None:
    event = ClusterEvent(EventResource.Node, ActionType.Add)
    log = InFlight()
    assert not log.add_event_if_any(event, None, "ignored")  # nobody in flight
    log.add("a")
    log.add_event_if_any(event, None, 1)
    log.add("b")
    log.add_event_if_any(event, None, 2)
    assert [e.new for e in log.events_for("a") or []] == [1, 2]
    assert [e.new for e in log.events_for("b") or []] == [2]
    log.done("a")
    assert log.pending_events == 1
    assert log.add_events_if_pod("b", [event], None, 3)
    assert not log.add_events_if_pod("a", [event], None, 4)
    log.done("b")
    assert log.pending_events == 0 and len(log) == 0
    assert log.events_for("b") is None


async def test_the_nominator_writes_its_changes_to_the_store_once_per_flush() -> None:
    store = MemoryStore()
    nominator = Nominator()
    a = make_pod("a", nominated_node_name="n1")
    nominator.observe(a, 7)
    nominator.observe(make_pod("b", nominated_node_name="n2"), 1)
    await nominator.flush(store)
    assert await store.nominations() == {
        "default-a-uid": Nomination("n1", 7),
        "default-b-uid": Nomination("n2", 1),
    }
    nominator.observe(make_pod("a"), 7, old=a)  # the field was cleared
    nominator.forget("default-b-uid")  # bound or deleted
    nominator.forget("never-nominated")
    await nominator.flush(store)
    assert await store.nominations() == {}
