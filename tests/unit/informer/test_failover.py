"""The informer against a store that failed over to a replica which missed the last
writes (Redis replicates asynchronously) but kept the marker: a store behind the seq the
informer applied is caught up from the log; a store whose identity changed is also given
a new epoch, so every other client reloads what it held (its lost reservations)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import msgspec
import pytest

from contracts import topology
from contracts.kinds import KubeObject, kind_of
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog import MemoryEventLog, snapshot
from services.common.store import ClusterStore, Reservation, StoreLost
from services.common.store.memory import MemoryStore
from services.informer.service import STORE_CHECK_PERIOD, InformerService
from tests.builders import make_node, make_pod

NODES = [make_node(f"n{i}") for i in range(2)]
PODS = [make_pod(f"p{i}", uid=f"u-{i}") for i in range(4)]


@dataclass
class Cluster:
    bus: MemoryBus
    store: MemoryStore
    clock: FakeClock
    informer: InformerService
    log: MemoryEventLog

    async def send(self, *objects: KubeObject, type_: str = "ADDED") -> None:
        messages = []
        for obj in objects:
            body = msgspec.json.encode({"type": type_, "object": obj})
            key = topology.event_key(kind_of(obj), type_)
            messages.append(Message(topology.EVENTS.name, key, body))
        await self.bus.publish(messages)
        await self.bus.wait_idle()


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    bus, clock, store, log = MemoryBus(), FakeClock(), MemoryStore(), MemoryEventLog()
    informer = InformerService(bus, store.client(), log, clock)
    await informer.start()
    yield Cluster(bus, store, clock, informer, log)
    await informer.stop()
    await bus.close()


def warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and text in r.getMessage()
    ]


async def reserve(scheduler: ClusterStore, uid: str) -> None:
    await scheduler.set_leases({uid: 1})  # the queue's attempt
    [result] = await scheduler.assume([Reservation(uid, "n0", 1, {"cpu": 100}, 30.0)], 0.0)
    assert result.status == "assumed"


@pytest.mark.parametrize("noticed_by", ["the store check", "the next event"])
async def test_a_failover_that_lost_writes_is_caught_up_and_gets_a_new_epoch(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, noticed_by: str
) -> None:
    await cluster.send(*NODES, *PODS[:2])
    scheduler = cluster.store.client()
    before = await scheduler.attach()
    replica = cluster.store.replicate()  # replication stops here
    await cluster.send(PODS[2])  # seq 5: acknowledged, on the master only
    await reserve(scheduler, "u-2")  # lost with it

    cluster.store.promote(replica)
    if noticed_by == "the store check":
        await cluster.clock.advance(STORE_CHECK_PERIOD)
        await cluster.bus.wait_idle()
    else:
        await cluster.send(PODS[3])  # seq 6 would leave a gap after seq 4

    after = await cluster.store.epoch()
    last = 5 if noticed_by == "the store check" else 6
    assert (after.state, after.seq) == ("live", last)
    assert after.token != before.token
    pods = {f"default/p{i}" for i in range(last - 2)}
    assert set(await cluster.store.objects("pod")) == pods
    [line] = warnings(caplog, "changed identity")
    assert "at seq 4, this informer applied seq 5" in line
    with pytest.raises(StoreLost):  # the scheduler reloads: its reservation is gone
        await scheduler.assumed()
    await scheduler.attach()
    assert await scheduler.assumed() == {}
    assert cluster.informer.ready


async def test_a_store_behind_under_the_same_identity_is_caught_up_in_the_same_epoch(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    await cluster.send(*NODES, *PODS[:2])
    replica = cluster.store.replicate()
    await cluster.send(*PODS[2:])
    before = await cluster.store.epoch()

    cluster.store.promote(replica, new_identity=False)
    assert (await cluster.store.epoch()).seq == 4
    await cluster.clock.advance(STORE_CHECK_PERIOD)
    await cluster.bus.wait_idle()

    after = await cluster.store.epoch()
    assert (after.token, after.seq) == (before.token, 6)
    assert set(await cluster.store.objects("pod")) == {f"default/p{i}" for i in range(4)}
    [line] = warnings(caplog, "behind the event log")
    assert "applied seq 4, this informer applied seq 6" in line
    assert not warnings(caplog, "changed identity")


async def test_a_failover_that_lost_nothing_still_ends_the_epoch(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A new identity cannot prove nothing was lost: the safe side is a new epoch."""
    await cluster.send(*NODES, *PODS)
    before = await cluster.store.epoch()
    cluster.store.promote(cluster.store.replicate())
    await cluster.clock.advance(STORE_CHECK_PERIOD)
    await cluster.bus.wait_idle()

    after = await cluster.store.epoch()
    assert after.seq == before.seq == 6
    assert after.token != before.token
    assert len(warnings(caplog, "changed identity")) == 1


async def test_no_failover_no_warning_and_the_epoch_stays(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    await cluster.send(*NODES, *PODS)
    before = await cluster.store.epoch()
    for _ in range(3):
        await cluster.clock.advance(STORE_CHECK_PERIOD)
    await cluster.bus.wait_idle()

    assert await cluster.store.epoch() == before
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_an_invalidated_store_takes_the_logs_own_entries_never_a_snapshots(
    cluster: Cluster,
) -> None:
    """A snapshot newer than the store renumbers the live objects: its entries after
    the store's seq are not the log's (here the deletion of p0 would be missed)."""
    await cluster.send(*NODES, *PODS[:2])
    replica = cluster.store.replicate()  # seq 4: n0, n1, p0, p1
    await cluster.send(*PODS[2:])
    await cluster.send(PODS[0], type_="DELETED")  # seq 7
    live = [
        (kind, body)
        for kind in ("node", "pod")
        for _, body in sorted((await cluster.store.objects(kind)).items())
    ]
    await cluster.log.write_snapshot(7, snapshot.encode(7, live))

    cluster.store.promote(replica)
    await cluster.clock.advance(STORE_CHECK_PERIOD)
    await cluster.bus.wait_idle()

    assert (await cluster.store.epoch()).seq == 7
    assert set(await cluster.store.objects("pod")) == {"default/p1", "default/p2", "default/p3"}
