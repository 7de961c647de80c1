"""Leader leases with fencing, with real processes on the real RabbitMQ and Redis: a
second informer over the same event log (``ksched run informer`` twice, or ``ksched up``
twice) stands by and never corrupts it (issue 32's scenario: seqs written twice, half
the pods lost), takes over when the leader stops, and a leader SIGSTOPped past its
lease cannot write when it wakes up."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from collections import Counter
from pathlib import Path

import aio_pika
import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import (
    AMQP_URL,
    REDIS_URL,
    Client,
    Processes,
    assert_bound_exactly_once,
    delete_namespace,
    node,
    pod,
)

pytestmark = pytest.mark.integration

SHORT = (
    "--leader-elect-lease-duration", "3s",
    "--leader-elect-renew-deadline", "2s",
    "--leader-elect-retry-period", "500ms",
)  # fmt: skip
"""Leases short enough for a takeover within the test's bounded waits."""


def log_seqs(path: Path) -> list[int]:
    return [json.loads(line)["seq"] for line in path.read_text().splitlines() if line.strip()]


def assert_log_whole(path: Path) -> None:
    """Every seq once, 1 to the last, in order: no seq written twice, none missing."""
    seqs = log_seqs(path)
    twice = [seq for seq, n in Counter(seqs).items() if n > 1]
    assert not twice, f"seqs written twice: {twice[:10]}"
    assert seqs == list(range(1, len(seqs) + 1)), "the log's seqs are not 1..n in order"


async def leases(processes: Processes) -> list[dict[str, object]]:
    """``ksched leases -o json`` for the test's namespace."""
    child = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "services.cli.main", "leases", "-o", "json"),
        *("--redis-url", processes.redis_url, "--namespace", processes.namespace),
        stdout=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(30):
        out, _ = await child.communicate()
    assert child.returncode == 0
    listed: list[dict[str, object]] = json.loads(out)
    return listed


async def dead_letters(processes: Processes) -> str:
    """``ksched dead-letters list`` for the test's namespace (a Binding a deposed
    informer dead-lettered instead of handing it back was once how a pod got lost)."""
    child = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "services.cli.main", "dead-letters", "list"),
        *("--amqp-url", processes.amqp_url, "--namespace", processes.namespace),
        stdout=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(30):
        out, _ = await child.communicate()
    return out.decode()


async def publish_pods(client: Client, names: range) -> None:
    for i in names:
        await client.publish("pod", pod(f"p-{i}"))


async def test_a_second_informer_over_the_same_log_stands_by_and_takes_over_cleanly(
    cluster: tuple[Processes, Client, RedisStore], tmp_path: Path
) -> None:
    processes, client, store = cluster
    for i in range(3):
        await client.publish("node", node(f"n{i}"))
    await publish_pods(client, range(0, 20))
    # On purpose: a second informer over the same log, while pods are published.
    await processes.spawn("informer", key="informer-2")
    await publish_pods(client, range(20, 40))
    await processes.logged("informer-2", "waiting for the informer lease (held by")
    await publish_pods(client, range(40, 60))
    await client.wait_for(lambda: len(client.bindings()) >= 60, within=120)
    await assert_bound_exactly_once(client, store, 60)
    assert_log_whole(tmp_path / "events.jsonl")
    assert "became the informer leader" not in processes.log("informer-2")
    [informer] = [lease for lease in await leases(processes) if lease["role"] == "informer"]
    assert informer["holder"] == f"{processes.namespace}/informer"
    assert informer["pid"] == processes.children["informer"].pid

    # The leader stops (releasing its lease): the standby takes over at once.
    assert await processes.terminate("informer") == 0
    await processes.logged("informer-2", "became the informer leader", within=30)
    await processes.logged("informer-2", "informer started", within=60)
    await publish_pods(client, range(60, 80))
    await client.wait_for(lambda: len(client.bindings()) >= 80, within=120)
    await assert_bound_exactly_once(client, store, 80)
    assert_log_whole(tmp_path / "events.jsonl")
    roles = {lease["role"]: lease for lease in await leases(processes)}
    assert roles["informer"]["holder"] == f"{processes.namespace}/informer-2"
    assert roles["queue"]["holder"] == f"{processes.namespace}/queue"


async def test_a_leader_stopped_past_its_lease_cannot_write_when_it_wakes_up(
    cluster: tuple[Processes, Client, RedisStore], tmp_path: Path
) -> None:
    """SIGSTOP the informer with a short lease; a standby takes over and ingests; on
    SIGCONT the old leader's pending batch is refused (its append by the log's claim,
    its store write by the fence), it logs ``leaderelection lost`` and exits 1, and the
    log stays whole."""
    processes, client, store = cluster
    assert await processes.terminate("informer") == 0
    await processes.start("informer", *SHORT, key="paused")
    await processes.spawn("informer", *SHORT, key="standby")
    await processes.logged("standby", "waiting for the informer lease (held by")
    await client.publish("node", node("n0"))
    await publish_pods(client, range(0, 10))
    await client.wait_for(lambda: len(client.bindings()) >= 10, within=60)
    # Stopped between appends: the file log's lock is free (a writer stopped mid-append
    # would hold its successor's start until it woke up, and then finish that append,
    # which its successor's claim then covers).
    await client.wait_for(lambda: len(client.recorded) >= 10, within=60)

    paused = processes.children["paused"]
    paused.send_signal(signal.SIGSTOP)
    try:
        await processes.logged("standby", "became the informer leader", within=30)
        await processes.logged("standby", "informer started", within=60)
        # Some of these reach the stopped informer's consumer (the broker still counts
        # it): it holds them, unacknowledged, until it wakes up and tries to write them.
        await publish_pods(client, range(10, 30))
        await client.wait_for(lambda: len(client.bindings()) >= 15, within=60)
    finally:
        paused.send_signal(signal.SIGCONT)
    async with asyncio.timeout(30):
        code = await paused.wait()
    assert code == 1, processes.log("paused")
    assert "leaderelection lost" in processes.log("paused")
    await publish_pods(client, range(30, 40))
    try:
        await client.wait_for(lambda: len(client.bindings()) >= 40, within=60)
        await assert_bound_exactly_once(client, store, 40)
    except TimeoutError:
        missing = sorted(set(client.bindings()) - set(client.recorded))
        raise AssertionError(
            f"{len(client.bindings())} bound, {len(client.recorded)} recorded, missing "
            f"{missing} (dead letters: {await dead_letters(processes)})\n"
            + processes.log("standby")[-4000:]
            + "\n===== the stopped one\n"
            + processes.log("paused")[-4000:]
        ) from None
    assert_log_whole(tmp_path / "events.jsonl")


class Up:
    """``ksched up`` as a user runs it, its lines collected (its children's too)."""

    def __init__(self, child: asyncio.subprocess.Process) -> None:
        self.child = child
        self.lines: list[str] = []
        self._line = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, env: dict[str, str]) -> Up:
        child = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "services.cli.main", "up", "--metrics-port", "0"),
            env=env,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(child)

    async def _read(self) -> None:
        assert self.child.stderr is not None
        async for raw in self.child.stderr:
            self.lines.append(raw.decode(errors="replace").rstrip())
            self._line.set()

    async def logged(self, text: str, within: float = 60) -> None:
        async with asyncio.timeout(within):
            while not any(text in line for line in self.lines):
                self._line.clear()
                await self._line.wait()

    async def stop(self) -> int:
        if self.child.returncode is None:
            self.child.terminate()
        async with asyncio.timeout(30):
            code = await self.child.wait()
        self._reader.cancel()
        return code


async def test_ksched_up_twice_on_one_log_leaves_the_second_standing_by(tmp_path: Path) -> None:
    namespace = f"uptwice{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "KSCHED_NAMESPACE": namespace,
        "KSCHED_AMQP_URL": AMQP_URL,
        "KSCHED_REDIS_URL": REDIS_URL,
        "KSCHED_EVENT_LOG": str(tmp_path / "events.jsonl"),
    }
    env.pop("KSCHED_LEADER_ELECT_IDENTITY", None)
    connection = await aio_pika.connect_robust(AMQP_URL)
    store = RedisStore(REDIS_URL, namespace=namespace)
    client = Client(connection, namespace)
    first = await Up.start(env)
    second: Up | None = None
    try:
        for name in ("informer", "queue", "scheduler", "binder"):
            await first.logged(f"{name} started")
        await client.open()
        second = await Up.start(env)
        await second.logged("waiting for the informer lease (held by")
        await second.logged("waiting for the queue lease (held by")
        await client.publish("node", node("n0"))
        await publish_pods(client, range(0, 30))
        await client.wait_for(lambda: len(client.bindings()) >= 30, within=120)
        await assert_bound_exactly_once(client, store, 30)
        assert_log_whole(tmp_path / "events.jsonl")
        assert not any("became the informer leader" in line for line in second.lines)
    finally:
        codes = [await up.stop() for up in (first, second) if up is not None]
        await store.flush_namespace()
        await store.close()
        await delete_namespace(connection, namespace)
        await connection.close()
    assert codes == [0] * len(codes)
