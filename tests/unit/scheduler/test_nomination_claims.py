"""Two scheduler replicas preempting at once: each claims its nomination in the store
with what it saw nominated to the node; the one whose node was nominated to another
pod meanwhile does not preempt there, and its pod is scheduled again with the store's
nominations as they are now (so it takes other room, never the same room twice)."""

from __future__ import annotations

from collections.abc import Mapping

from contracts.messages import ScheduleRequest
from services.common.store import MemoryStore, Nomination
from services.framework.cache.cache import Cache
from services.scheduler.cycle import BatchOutcome, BatchScheduler
from services.scheduler.nominated import PendingPods, nominated_pods
from tests.builders import make_node, make_pod
from tests.builders.scheduling import batch_scheduler, loaded_cache

NODE = {"cpu": "4", "memory": "8Gi", "pods": 10}
FULL = {"cpu": "4", "memory": "1Gi"}


class Replica:
    def __init__(self, scheduler: BatchScheduler, pending: PendingPods, snapshot: Cache) -> None:
        self.scheduler, self.pending, self.snapshot = scheduler, pending, snapshot

    async def run(self, name: str, nominations: Mapping[str, Nomination]) -> BatchOutcome:
        """One batch, with ``nominations`` as read from the store (the service's way)."""
        nominated = nominated_pods(nominations, self.pending, self.snapshot)
        return await self.scheduler.run([request(name)], nominated, nominations)


def replica(store: MemoryStore, *, retries: int = 2) -> Replica:
    """A replica with its own snapshot of the same cluster: n1's pod (priority 0) is a
    cheaper victim than n2's (5), so both replicas would choose n1 first."""
    nodes = [make_node(name, allocatable=NODE) for name in ("n1", "n2")]
    bound = [
        make_pod("low-1", node_name="n1", priority=0, requests=FULL),
        make_pod("low-2", node_name="n2", priority=5, requests=FULL),
    ]
    snapshot = loaded_cache(nodes, bound)
    urgent = [make_pod(name, priority=1000, requests=FULL) for name in ("urgent-1", "urgent-2")]
    scheduler, pending = batch_scheduler(snapshot, store, urgent, retries=retries)
    return Replica(scheduler, pending, snapshot)


def request(name: str) -> ScheduleRequest:
    return ScheduleRequest(
        uid=f"default-{name}-uid",
        namespace="default",
        name=name,
        attempt=1,
        profile="default-scheduler",
        seq=0,
    )


def chosen(outcome: BatchOutcome) -> list[tuple[str, str, list[str]]]:
    return [
        (
            p.preemptor.pod.metadata.name,
            p.result.nominated_node_name or "",
            [v.pod.metadata.name for v in p.result.victims],
        )
        for p in outcome.preemptions
    ]


async def test_the_second_replica_preempts_elsewhere_not_on_the_room_already_claimed() -> None:
    store = MemoryStore()
    await store.set_leases({"default-urgent-1-uid": 1, "default-urgent-2-uid": 1})
    first, second = replica(store), replica(store)
    # Both read the store's nominations (none) before either decided.
    seen_by_both: dict[str, Nomination] = await store.nominations()
    won = await first.run("urgent-1", seen_by_both)
    assert chosen(won) == [("urgent-1", "n1", ["low-1"])]
    lost_race = await second.run("urgent-2", seen_by_both)
    # n1 was claimed meanwhile: urgent-2 is scheduled again and takes n2's room.
    assert lost_race.nomination_conflicts == 1
    assert chosen(lost_race) == [("urgent-2", "n2", ["low-2"])]
    [result] = [f.result for f in lost_race.failures]
    assert (result.outcome, result.nominated_node) == ("unschedulable", "n2")
    assert await store.nominations() == {
        "default-urgent-1-uid": Nomination("n1", 1000),
        "default-urgent-2-uid": Nomination("n2", 1000),
    }


async def test_without_retries_left_the_attempt_ends_in_error_and_preempts_nothing() -> None:
    store = MemoryStore()
    await store.set_leases({"default-urgent-1-uid": 1, "default-urgent-2-uid": 1})
    first, second = replica(store), replica(store, retries=0)
    seen_by_both = await store.nominations()
    await first.run("urgent-1", seen_by_both)
    outcome = await second.run("urgent-2", seen_by_both)
    assert outcome.preemptions == []
    [result] = [f.result for f in outcome.failures]
    assert result.outcome == "error"
    assert result.message == 'node "n1" was nominated to another pod meanwhile'
    assert set(await store.nominations()) == {"default-urgent-1-uid"}


async def test_a_replica_that_saw_the_nomination_is_not_refused() -> None:
    store = MemoryStore()
    await store.set_leases({"default-urgent-1-uid": 1, "default-urgent-2-uid": 1})
    first, second = replica(store), replica(store)
    await first.run("urgent-1", await store.nominations())
    outcome = await second.run("urgent-2", await store.nominations())
    assert outcome.nomination_conflicts == 0
    assert chosen(outcome) == [("urgent-2", "n2", ["low-2"])]
