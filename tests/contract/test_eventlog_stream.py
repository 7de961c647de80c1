"""What the stream event log adds to the EventLog contract (test_eventlog.py), on the real
broker: duplicates after a retry, fencing a deposed writer off, reads by offset, a lost
connection mid-append, snapshots, and failing over to the next broker of a list."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import msgspec
import pytest

from contracts.events import LogEntry
from services.common.eventlog import LogFencedError, LogWriteError, read_all
from services.common.eventlog.options import StreamOptions
from services.common.eventlog.stream import StreamEventLog
from services.common.eventlog.stream_wire import CLAIM, KIND, Claim, batches
from tests.builders import make_node
from tests.contract.broker_proxy import broker_proxy
from tests.contract.bus_support import AMQP_URL
from tests.contract.eventlog_support import event, events
from tests.contract.stream_support import StreamLogs

pytestmark = pytest.mark.integration

DEADLINE = 10.0
DEAD_BROKER = "amqp://guest:guest@127.0.0.1:1/"
"""Nothing listens on port 1: a node that is down."""


@pytest.fixture
async def streams() -> AsyncIterator[StreamLogs]:
    logs = StreamLogs()
    yield logs
    await logs.aclose()


async def seqs(log: StreamEventLog, after: int = 0) -> list[int]:
    return [e.seq for e in await read_all(log, after)]


def other(seq: int) -> LogEntry:
    """Entry ``seq`` as another writer would have written it (another node)."""
    return msgspec.structs.replace(event(1), seq=seq, object=make_node(f"other{seq}"))


async def test_an_entry_appended_twice_is_read_once(streams: StreamLogs) -> None:
    log = streams.open()
    await log.append(events(1, 3))
    # An append whose confirm was lost reached the stream anyway and was retried:
    # seqs 2 and 3 are in the stream twice.
    await log.client.publish(log.name, batches(events(2, 3), 0, log.writer))
    await log.append(events(4, 4))
    reader = streams.open()
    assert await read_all(reader) == events(1, 4)
    assert await seqs(reader, 2) == [3, 4]
    assert await seqs(log) == [1, 2, 3, 4]


async def test_a_deposed_writer_is_fenced_off(streams: StreamLogs) -> None:
    leader, successor = streams.open(), streams.open()
    await leader.claim(1)
    await leader.append(events(1, 2))
    await successor.claim(2)  # the leader's lease expired: the standby took over
    assert successor.last_seq() == 2
    with pytest.raises(LogFencedError, match="superseded by 2"):
        await leader.append([other(3)])  # the deposed leader woke up
    with pytest.raises(LogFencedError):
        await leader.append([other(3)])  # and stays deposed
    # What a deposed writer appends after the claim, by whatever path, does not count.
    await leader.client.publish(leader.name, batches([other(3)], 1, leader.writer))
    await successor.append(events(3, 4))
    with pytest.raises(LogFencedError, match="claimed by fencing token 2"):
        await streams.open().claim(1)
    assert await read_all(streams.open()) == events(1, 4)
    assert await read_all(successor, 2) == events(3, 4)


async def test_a_writer_that_never_claimed_is_taken_over(streams: StreamLogs) -> None:
    first, second = streams.open(), streams.open()
    await first.append(events(1, 2))
    await second.connect()
    await second.append(events(3, 3))  # claims token 0 in turn: the newer writer wins
    with pytest.raises(LogFencedError):
        await first.append(events(3, 3))
    assert await read_all(streams.open()) == events(1, 3)


async def test_a_lease_holder_refuses_a_writer_without_one(streams: StreamLogs) -> None:
    holder, other_writer = streams.open(), streams.open()
    await holder.claim(3)
    await holder.append(events(1, 1))
    with pytest.raises(LogFencedError, match="claimed by fencing token 3, not 0"):
        await other_writer.append(events(2, 2))


@pytest.mark.parametrize("after", [1, 1500, 2999])
async def test_reading_from_the_middle_does_not_read_from_the_start(
    streams: StreamLogs, after: int
) -> None:
    log = streams.open()
    for first in range(1, 3001, 10):  # 300 messages of 10 entries
        await log.append(events(first, first + 9))
    for reader in (log, streams.open()):  # the writer, and a reader that is not
        await reader.connect()
        before = reader.client.consumed
        assert await seqs(reader, after) == list(range(after + 1, 3001))
        needed = (3000 - after) // 10 + 1
        extra = reader.client.consumed - before - needed
        assert extra < 40, f"{extra} messages read besides the {needed} holding the entries"


async def test_a_connection_lost_mid_append_fails_it_and_a_retry_works(
    streams: StreamLogs,
) -> None:
    async with broker_proxy(AMQP_URL) as proxy:
        log = streams.open(proxy.url)
        await log.append(events(1, 2))
        watcher = streams.open()
        proxy.hold()  # the broker's confirms stay in the relay
        appending = asyncio.create_task(log.append(events(3, 4)))
        async with asyncio.timeout(DEADLINE):
            while await seqs(watcher, 2) != [3, 4]:  # the stream has them, unconfirmed
                pass
        await proxy.cut()
        proxy.release()
        with pytest.raises(LogWriteError, match=r"appending seq 3\.\.4 failed"):
            await appending
        assert log.last_seq() == 2
        await log.append(events(3, 4))  # the retry, on a new connection
        await log.append(events(5, 5))
        assert await read_all(log) == events(1, 5)
        assert await read_all(streams.open()) == events(1, 5)


async def test_snapshots(streams: StreamLogs) -> None:
    log = streams.open()
    assert await log.latest_snapshot() is None
    await log.append(events(1, 5))
    await log.write_snapshot(2, b"at two")
    await log.write_snapshot(5, b"at five")
    await log.retain(5)  # retention is the stream's: nothing dropped
    assert await read_all(log) == events(1, 5)
    with pytest.raises(ValueError, match="the newest snapshot covers seq 5"):
        await log.retain(6)
    reader = streams.open()
    assert await reader.latest_snapshot() == (5, b"at five")
    with pytest.raises(ValueError, match="no snapshot at seq 6: it ends at 5"):
        await log.write_snapshot(6, b"too far")

    successor = streams.open()
    await successor.claim(1)
    with pytest.raises(LogFencedError):
        await log.write_snapshot(5, b"from the deposed writer")
    assert await reader.latest_snapshot() == (5, b"at five")
    await successor.append(events(6, 6))
    await successor.write_snapshot(6, b"at six")
    assert await reader.latest_snapshot() == (6, b"at six")
    assert await read_all(reader, 5) == events(6, 6)


async def test_a_dead_broker_in_the_list_is_skipped(streams: StreamLogs) -> None:
    log = streams.open(f"{DEAD_BROKER},{AMQP_URL}")
    await log.append(events(1, 2))
    assert await read_all(streams.open()) == events(1, 2)


async def test_other_retention_on_an_existing_stream_says_to_use_a_policy(
    streams: StreamLogs,
) -> None:
    await streams.open().connect()
    options = StreamOptions(amqp_url=AMQP_URL, namespace=streams.options.namespace, max_age="7D")
    changed = StreamEventLog(streams.name, options)
    with pytest.raises(
        ConnectionError, match="change an existing stream's retention with a policy"
    ):
        await changed.connect()
    await changed.close()


async def test_when_its_node_dies_the_log_goes_on_on_the_next(streams: StreamLogs) -> None:
    async with broker_proxy(AMQP_URL) as proxy:  # the first node, through a relay
        log = streams.open(f"{proxy.url},{AMQP_URL}")
        await log.append(events(1, 2))
    # The relay is gone: the first node died. An append under way fails; the next one
    # (the informer's retry) goes to the second node.
    try:
        await log.append(events(3, 4))
    except LogWriteError:
        await log.append(events(3, 4))
    assert await read_all(log) == events(1, 4)
    assert await read_all(streams.open()) == events(1, 4)


async def test_a_writer_whose_view_is_stale_is_refused(streams: StreamLogs) -> None:
    first, second = streams.open(), streams.open()
    await first.connect()
    await second.connect()
    await first.append(events(1, 2))
    with pytest.raises(LogFencedError, match="another writer appended to it"):
        await second.append(events(1, 1))  # it saw an empty log
    assert second.last_seq() == 2  # it has caught up: a retry with the next seqs works
    await second.append(events(3, 3))
    assert await read_all(streams.open()) == events(1, 3)


async def test_a_newer_claim_recorded_behind_the_writers_back_fences_it_off(
    streams: StreamLogs,
) -> None:
    """A claim whose marker the writer never read (it preceded the writer's own) is
    recorded in NAME.fences: the writer follows those too."""
    leader = streams.open()
    await leader.claim(1)
    await leader.append(events(1, 2))
    newer = msgspec.json.encode(Claim(2, "another-writer", 0))
    await leader.client.publish(leader.fences, [(newer, {KIND: CLAIM})])
    async with asyncio.timeout(DEADLINE):  # its tail of NAME.fences reads the record
        assert await leader.wait_superseded() == 2
    assert leader.superseded == 2
    with pytest.raises(LogFencedError, match="superseded by 2"):
        await leader.append(events(3, 3))
    with pytest.raises(LogFencedError, match="claimed by fencing token 2, not 1"):
        await streams.open().claim(1)


async def test_without_aiormq_internals_appends_go_one_by_one(
    streams: StreamLogs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.common.bus import rabbit_write

    monkeypatch.setattr(rabbit_write, "CHANNEL_INTERNALS", ("no_such_attribute",))
    log = streams.open()
    await log.append(events(1, 3))
    assert await read_all(streams.open()) == events(1, 3)


async def test_an_empty_stream_begins_at_a_snapshot(streams: StreamLogs) -> None:
    log = streams.open()
    await log.begin_at(5, b"at five")
    assert log.last_seq() == 5
    reopened = streams.open()
    await reopened.connect()
    assert reopened.last_seq() == 5
    assert await reopened.latest_snapshot() == (5, b"at five")
    await log.append(events(6, 7))
    assert await read_all(reopened) == events(6, 7)
    with pytest.raises(ValueError, match="only an empty log begins at a snapshot"):
        await log.begin_at(9, b"again")
