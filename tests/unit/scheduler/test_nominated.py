"""Nominated pods in the scheduler service: the store's nominations, read once per
ScheduleBatch, take the nominated node's room from pods of lower (or equal) priority,
as upstream's two-pass filter (``RunFilterPluginsWithNominatedPods``) does."""

from __future__ import annotations

import logging

import msgspec
import pytest

from contracts import topology
from contracts.events import ClusterBatch, PodEntry
from contracts.k8s import Pod
from services.common.bus import Message
from services.common.clock import FakeClock
from services.common.projection import LogProjection
from services.common.settings import SchedulerSettings
from services.common.store import Epoch, Nomination, PodCharge, ProjectedEntry, StoreLost
from services.common.store.memory import MemoryStore
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.scheduler.nominated import PendingPods, nominated_pods
from services.scheduler.service import SchedulerService
from tests.builders import make_node, make_pod
from tests.unit.scheduler.service_support import Harness


class CountingStore(MemoryStore):
    """A MemoryStore that counts the scheduler's reads of the nominations."""

    reads = 0

    async def nominations(self) -> dict[str, Nomination]:
        self.reads += 1
        return await super().nominations()


class NominationHarness(Harness):
    """Two nodes, ``big`` (4 cpu) and ``small`` (2 cpu): without nominations the
    LeastAllocated score sends a 2-cpu pod to ``big``."""

    def __init__(self) -> None:
        super().__init__()
        self.store = CountingStore()
        self.service = SchedulerService(
            self.bus, self.store, self.clock, settings=SchedulerSettings(replica="r1", seed=1)
        )

    async def setup(self) -> None:
        await self.add_node(make_node("big", allocatable={"cpu": "4", "pods": 110}))
        await self.add_node(make_node("small", allocatable={"cpu": "2", "pods": 110}))
        await self.start()

    async def pod_event(self, pod: Pod, type_: str = "ADDED") -> None:
        """The informer's work for one pod event: the store, then the cluster feed."""
        self.seq += 1
        body = None if type_ == "DELETED" else msgspec.json.encode(pod)
        requests = {**PodInfo.of(pod).requests, "pods": 1}
        charge = PodCharge(pod.metadata.uid, pod.spec.node_name, requests)
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        await self.store.apply([ProjectedEntry(self.seq, "pod", key, body, pod=charge)])
        event = PodEntry(seq=self.seq, type=type_, object=pod)  # type: ignore[arg-type]
        batch = msgspec.json.encode(ClusterBatch(events=[event]))
        await self.bus.publish([Message(topology.CLUSTER.name, "", batch)])
        await self.bus.wait_idle()

    async def nominate(self, pod: Pod, node: str) -> None:
        await self.pod_event(pod)
        await self.store.set_nominations({pod.metadata.uid: Nomination(node, 0)})

    async def placements(self, *pods: Pod) -> dict[str, str | None]:
        await self.schedule(*pods)
        await self.bus.wait_idle()
        placed: dict[str, str | None] = {b.name: b.node for b in self.binds}
        placed.update({r.name: None for r in self.results if r.outcome == "unschedulable"})
        return placed


@pytest.fixture
async def harness():
    h = NominationHarness()
    await h.setup()
    yield h
    await h.service.stop()
    await h.bus.close()


def preemptor(priority: int, name: str = "preemptor") -> Pod:
    return make_pod(name, priority=priority, requests={"cpu": "3"}, nominated_node_name="big")


async def test_without_nominations_the_pod_takes_the_emptier_node(harness):
    assert await harness.placements(make_pod("late", priority=5, requests={"cpu": "2"})) == {
        "late": "big"
    }


@pytest.mark.parametrize("priority", [10, 5], ids=["higher", "equal"])
async def test_a_nominated_pod_of_higher_or_equal_priority_keeps_its_room(harness, priority):
    await harness.nominate(preemptor(priority), "big")
    late = make_pod("late", priority=5, requests={"cpu": "2"})
    assert await harness.placements(late) == {"late": "small"}


async def test_a_nominated_pod_of_lower_priority_is_ignored(harness):
    await harness.nominate(preemptor(1), "big")
    late = make_pod("late", priority=5, requests={"cpu": "2"})
    assert await harness.placements(late) == {"late": "big"}


async def test_no_room_elsewhere_reports_the_nominated_pass(harness):
    await harness.nominate(preemptor(10), "big")
    wide = make_pod("wide", priority=5, requests={"cpu": "3"})
    assert await harness.placements(wide) == {"wide": None}
    (result,) = harness.results
    assert result.message == (
        "0/2 nodes are available: 2 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


async def test_the_nominated_pod_itself_and_the_pods_after_it(harness):
    """The preemptor goes to its node; once assumed there it counts as assumed, not
    as nominated (twice), for the next pod of the same batch."""
    await harness.pod_event(make_pod("filler", node_name="small", requests={"cpu": "2"}))
    waiting = preemptor(10)
    await harness.nominate(waiting, "big")
    late = make_pod("late", priority=5, requests={"cpu": "1"})
    assert await harness.placements(waiting, late) == {"preemptor": "big", "late": "big"}
    assert harness.store.reads == 1  # one read of the nominations per ScheduleBatch


async def test_a_deleted_or_bound_nominated_pod_no_longer_counts(harness):
    waiting = preemptor(10)
    await harness.nominate(waiting, "big")
    await harness.pod_event(waiting, "DELETED")
    late = make_pod("late", priority=5, requests={"cpu": "2"})
    assert await harness.placements(late) == {"late": "big"}
    assert "default/preemptor" not in harness.service.pending


class TestPendingPods:
    def test_keeps_only_pending_pods(self):
        pending = PendingPods()
        pending.load(
            [
                make_pod("a"),
                make_pod("bound", node_name="n1"),
                make_pod("done", phase="Succeeded"),
                make_pod("going", deletion_timestamp="2026-01-01T00:00:00Z"),
            ]
        )
        assert len(pending) == 1 and "default-a-uid" in pending

    async def test_follows_the_feed_in_seq_order(self):
        """Fed by a LogProjection, as the scheduler feeds it (loaded at seq 1)."""
        store = MemoryStore()
        await store.apply([ProjectedEntry(1, "namespace", "default", b"{}")])
        pending = PendingPods()

        async def load(epoch: Epoch, lost: StoreLost | None) -> None:
            pending.load([])

        projection = LogProjection(
            store, FakeClock(), logging.getLogger("test"), load=load, apply=pending.apply
        )
        await projection.reload()
        a = make_pod("a", priority=7, requests={"cpu": "1"})
        events = [
            PodEntry(seq=1, type="ADDED", object=make_pod("old")),  # already applied
            PodEntry(seq=2, type="ADDED", object=a),
            PodEntry(seq=3, type="ADDED", object=make_pod("b")),
            PodEntry(seq=4, type="MODIFIED", object=make_pod("b", node_name="n1")),
        ]
        await projection.feed(events)
        assert len(pending) == 1
        info = pending.info("default-a-uid")
        assert info is not None and (info.priority, info.requests["cpu"]) == (7, 1000)
        assert pending.info("default-b-uid") is None
        await projection.feed([PodEntry(seq=5, type="DELETED", object=a)])
        assert len(pending) == 0 and pending.info("default-a-uid") is None

    def test_nominations_of_unknown_pods_mean_no_second_pass(self):
        pending = PendingPods()
        assert nominated_pods({"nobody": Nomination("n1", 5)}, pending, Cache()) is None
        pending.load([make_pod("a")])
        nominated = nominated_pods({"default-a-uid": Nomination("n1", 5)}, pending, Cache())
        assert nominated is not None
        assert [p.key for p in nominated.pods_for("n1")] == ["default/a"]
        assert list(nominated.pods_for("n2")) == []
        assert list(nominated.nodes) == ["n1"]
