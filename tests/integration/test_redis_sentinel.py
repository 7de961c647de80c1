"""The store on a real Redis master, replica and three Sentinels of this test's own
(ops/ha/redis_sentinel.py): it works through the Sentinel URL, keeps working after
``SENTINEL FAILOVER`` (every script path loads its script again on the new master), and
after a failover that lost the last acknowledged writes the informer catches the store
up from its event log under a new epoch."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import pytest
from redis.exceptions import ConnectionError

from contracts import topology
from contracts.kinds import KubeObject, kind_of
from services.common.bus import Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog import MemoryEventLog
from services.common.store import StoreLost
from services.common.store.redis import RedisStore
from services.common.store.sentinel import FailoverOptions
from services.common.tls import TLSFiles
from services.informer.service import STORE_CHECK_PERIOD, InformerService
from tests.builders import make_node, make_pod
from tests.contract.store_support import claim, node_entry, pod_entry, res
from tests.integration.harness import REDIS_URL
from tests.integration.private_servers import make_certificates
from tests.integration.sentinel_support import in_sync, redis_sentinel, starter

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(240)]

OPTIONS = FailoverOptions(failover_timeout=30.0)
NO_WAIT = FailoverOptions(failover_timeout=0.0)
DEADLINE = 60.0


async def until(what: str, check: Callable[[], Awaitable[bool]]) -> None:
    """Poll ``check`` until it holds (bounded by DEADLINE)."""
    deadline = time.monotonic() + DEADLINE
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {DEADLINE:.0f} s")
        await asyncio.sleep(0.05)


async def test_the_store_works_through_sentinel_and_after_a_failover(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with redis_sentinel(tmp_path, password="s3cret") as handle:
        ns = f"sent{uuid.uuid4().hex[:8]}"
        store = RedisStore(handle.url, namespace=ns, failover=OPTIONS)
        assert handle.url.startswith("redis+sentinel://:s3cret@")
        try:
            await store.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", None)])
            await store.attach()
            identity = await store.identity()
            await store.set_leases({"uid-a": 1})
            [assumed] = await store.assume([res("a", "n1", cpu=100)], 0.0)
            assert assumed.status == "assumed"
            assert await store.begin_bind([claim("a", "n1")], 0.0) == [True]
            # WAIT: the claim is on the replica before begin_bind returns
            held = handle.data(handle.replica_port, "HGET", f"{ns}:assumed", "uid-a")
            assert held is not None and held.startswith(b"n1|1|")

            old = handle.master_port
            new = await asyncio.to_thread(handle.failover)
            handle.data(new, "SCRIPT", "FLUSH")  # every script must be loaded again

            await store.apply([pod_entry(3, "b", None)])  # a guarded script
            await store.set_leases({"uid-b": 1})  # a script with WAIT, pipelined
            [assumed] = await store.assume([res("b", "n1", cpu=100)], 0.0)
            assert assumed.status == "assumed"
            assert await store.acquire_lease("descheduler", "me", 10.0, 0.0)  # unguarded
            assert set(await store.objects("pod")) == {"default/a", "default/b"}
            assert (await store.epoch()).seq == 3
            assert await store.identity() != identity
            assert handle.info(old, "replication")["role"] == "slave"

            # The master killed outright (its replica in sync): the next call waits for
            # the Sentinels' failover, then finds everything.
            starter().wait_for("the replica in sync", lambda: in_sync(handle))
            handle.signal(new, signal.SIGKILL)
            assert await store.leases() == {"uid-a": 1, "uid-b": 1}
            assert handle.master_port == old
            assert any("Redis answers again" in r.getMessage() for r in caplog.records)
        finally:
            await store.flush_namespace()
            await store.close()


async def test_rediss_sentinel_speaks_tls_to_the_sentinels_and_the_master(
    tmp_path: Path,
) -> None:
    certs = make_certificates(tmp_path / "certs")
    with redis_sentinel(tmp_path / "redis", certs=certs) as handle:
        assert handle.url.startswith("rediss+sentinel://")
        ns = f"sent{uuid.uuid4().hex[:8]}"
        tls = TLSFiles(ca=str(certs.ca), cert=str(certs.client_cert), key=str(certs.client_key))
        store = RedisStore(handle.url, namespace=ns, tls=tls, failover=OPTIONS)
        try:
            await store.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", None)])
            await asyncio.to_thread(handle.failover)
            await store.set_leases({"uid-a": 1})
            [assumed] = await store.assume([res("a", "n1", cpu=100)], 0.0)
            assert assumed.status == "assumed"
            assert (await store.epoch()).seq == 2
        finally:
            await store.flush_namespace()
            await store.close()
        untrusted = TLSFiles(ca=str(certs.other_ca))
        stranger = RedisStore(handle.url, namespace=ns, tls=untrusted, failover=NO_WAIT)
        try:
            with pytest.raises(ConnectionError):  # the Sentinels' certificate is checked
                await stranger.epoch()
        finally:
            await stranger.close()


NODES = [make_node(f"n{i}") for i in range(2)]
PODS = [make_pod(f"p{i}", uid=f"u-{i}") for i in range(5)]


def events(*objects: KubeObject) -> list[Message]:
    return [
        Message(
            topology.EVENTS.name,
            topology.event_key(kind_of(o), "ADDED"),
            msgspec.json.encode({"type": "ADDED", "object": o}),
        )
        for o in objects
    ]


async def test_the_informer_catches_up_after_a_failover_that_lost_the_last_writes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with redis_sentinel(tmp_path) as handle:
        ns = f"sent{uuid.uuid4().hex[:8]}"
        bus, clock = MemoryBus(), FakeClock()
        store = RedisStore(handle.url, namespace=ns, failover=OPTIONS)
        scheduler = RedisStore(handle.url, namespace=ns, failover=OPTIONS)
        informer = InformerService(bus, store, MemoryEventLog(), clock)
        try:
            await informer.start()
            await bus.publish(events(*NODES, *PODS[:3]))
            await bus.wait_idle()
            before = await scheduler.attach()
            assert before.seq == 5
            starter().wait_for("the replica in sync", lambda: in_sync(handle))

            # The replica misses what follows: stopped, its link dropped by the master.
            old, replica = handle.master_port, handle.replica_port
            handle.signal(replica, signal.SIGSTOP)
            handle.data(old, "CLIENT", "KILL", "TYPE", "replica")
            await bus.publish(events(*PODS[3:]))  # seqs 6 and 7, acknowledged
            await bus.wait_idle()
            await scheduler.set_leases({"u-3": 1})  # no replica acknowledges: a WARNING
            [assumed] = await scheduler.assume([res("3", "n0", cpu=100)], 0.0)
            assert assumed.status == "stale"  # lease of uid-3 is not u-3's: either way
            assert (await scheduler.epoch()).seq == 7
            handle.signal(old, signal.SIGKILL)
            handle.signal(replica, signal.SIGCONT)
            await asyncio.to_thread(handle.wait_master, replica)
            assert handle.data(replica, "GET", f"{ns}:seq") == b"5"  # the writes are lost

            await clock.advance(STORE_CHECK_PERIOD)  # the informer's store check

            async def caught_up() -> bool:
                now = await scheduler.epoch()
                return now.state == "live" and now.token != before.token and now.seq == 7

            await until("the store caught up under a new epoch", caught_up)
            assert set(await store.objects("pod")) == {f"default/p{i}" for i in range(5)}
            lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert any("changed identity" in line and "at seq 5" in line for line in lines)
            assert any("no Redis replica acknowledged" in line for line in lines)
            with pytest.raises(StoreLost):  # the scheduler reloads what it held
                await scheduler.leases()
            await scheduler.attach()
            assert informer.ready
        finally:
            await informer.stop()
            await bus.close()
            for client in (store, scheduler):
                await client.flush_namespace()
                await client.close()


async def test_a_master_without_replica_warns_once_and_keeps_its_writes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The machine's Redis has no replica: every guarded write misses its ack."""
    ns = f"sent{uuid.uuid4().hex[:8]}"
    store = RedisStore(REDIS_URL, namespace=ns, failover=FailoverOptions(replica_wait=0.05))
    try:
        await store.apply([node_entry(1, "n1", cpu=1000, pods=10)])
        for i in range(3):
            await store.set_leases({f"uid-{i}": 1})
        assert await store.leases() == {f"uid-{i}": 1 for i in range(3)}
        missed = [r for r in caplog.records if "no Redis replica acknowledged" in r.getMessage()]
        assert len(missed) == 1
        assert "within 50 ms" in missed[0].getMessage()
    finally:
        await store.flush_namespace()
        await store.close()
