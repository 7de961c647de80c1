"""The Bus contract (services/common/bus/base.py), run against MemoryBus and RabbitMQ.

Every test waits on events with a deadline, never on the clock. To show that something
did *not* arrive, a test publishes a sentinel after it and waits for the sentinel: a
queue delivers in publish order, so everything before it has been handled by then.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import msgspec
import pytest

from contracts import topology as t
from services.common.bus import (
    Bus,
    BusError,
    BusRefused,
    Delivery,
    Message,
    Received,
    Rejection,
)
from services.common.bus.base import unavailable
from tests.contract.bus_support import DEADLINE, Backend, Recorder, events, queue

pytestmark = pytest.mark.timeout(60)


async def test_round_trip_keeps_body_headers_and_names(bus: Bus) -> None:
    q = queue("q")
    got = Recorder()
    await bus.consume_raw(q, got)
    await bus.publish([Message(t.EVENTS.name, "pod.added", b'{"n": 1}', {"x-trace": "abc"})])
    await got.wait_for(lambda r: len(r.deliveries) == 1)
    [d] = got.deliveries
    assert (d.body, d.exchange, d.routing_key) == (b'{"n": 1}', "ksched.events", "pod.added")
    assert d.headers["x-trace"] == "abc"
    assert d.redelivered is False
    assert got.batches == [1]


async def test_topic_routing_star_is_one_word_hash_is_zero_or_more(bus: Bus) -> None:
    star, hash_all, hash_tail = Recorder(), Recorder(), Recorder()
    await bus.consume_raw(queue("a", t.DECISIONS.name, "binding.*"), star)
    await bus.consume_raw(queue("b", t.DECISIONS.name, "#"), hash_all)
    await bus.consume_raw(queue("c", t.DECISIONS.name, "binding.#"), hash_tail)
    keys = ["binding.default", "event.default", "binding.a.b", "binding", "binding.end"]
    await bus.publish([Message(t.DECISIONS.name, key, key.encode()) for key in keys])
    for recorder in (star, hash_all, hash_tail):
        await recorder.wait_body("binding.end")
    assert star.bodies == ["binding.default", "binding.end"]
    assert hash_all.bodies == keys
    assert hash_tail.bodies == ["binding.default", "binding.a.b", "binding", "binding.end"]


async def test_fanout_reaches_every_queue_and_direct_only_its_key(bus: Bus) -> None:
    first, second, direct = Recorder(), Recorder(), Recorder()
    await bus.consume_raw(queue("a", t.CLUSTER.name, ""), first)
    await bus.consume_raw(queue("b", t.CLUSTER.name, ""), second)
    await bus.consume_raw(queue("direct", t.SCHEDULE.name, t.SCHEDULE_KEY), direct)
    await bus.publish(events("1", "2", "3", exchange=t.CLUSTER.name, key="any"))
    await bus.publish(events("x", exchange=t.SCHEDULE.name, key="other"))
    await bus.publish(events("end", exchange=t.SCHEDULE.name, key=t.SCHEDULE_KEY))
    for recorder in (first, second):
        await recorder.wait_for(lambda r: len(r.deliveries) == 3)
        assert recorder.bodies == ["1", "2", "3"]
    await direct.wait_body("end")
    assert direct.bodies == ["end"]


async def test_declaring_a_queue_removes_the_bindings_it_retired(
    backend: Backend, bus: Bus
) -> None:
    """An earlier version bound the queue to DECISIONS; this one binds it to BOUND only
    and lists the old binding as retired: after the declare, only BOUND reaches it (on a
    new connection too: the broker dropped the binding, not just this bus)."""
    old = queue("binding", t.DECISIONS.name, "binding.*")
    await bus.declare([old])
    await bus.publish(events("before", exchange=t.DECISIONS.name, key="binding.default"))
    new = t.QueueSpec(
        old.name,
        (t.QueueBinding(t.BOUND.name, t.BOUND_KEY),),
        retired=(t.QueueBinding(t.DECISIONS.name, "binding.*"),),
    )
    await bus.declare([new])
    await bus.declare([new])  # again: a binding already gone is no error
    bus = await backend.reconnect(bus)
    got = Recorder()
    await bus.consume_raw(new, got)
    await bus.publish(events("after", exchange=t.DECISIONS.name, key="binding.default"))
    await bus.publish(events("end", exchange=t.BOUND.name, key=t.BOUND_KEY))
    await got.wait_body("end")
    assert got.bodies == ["before", "end"]  # queued before the change, then BOUND only


async def test_batches_hold_what_is_ready_in_order_and_lose_nothing(bus: Bus) -> None:
    q = queue("q")
    await bus.declare([q])
    bodies = [str(i) for i in range(50)]
    await bus.publish(events(*bodies))
    got = Recorder()
    await bus.consume_raw(q, got, max_batch=10)
    await got.wait_for(lambda r: len(r.deliveries) >= 50)
    assert got.bodies == bodies
    assert max(got.batches) <= 10
    assert len(got.batches) < 50, "ready messages must be handed over together"


async def test_publish_returns_after_the_broker_has_them(backend: Backend, bus: Bus) -> None:
    q = queue("q")
    await bus.declare([q])
    await bus.publish(events(*(str(i) for i in range(20))))
    await bus.publish(events("nowhere", exchange=t.ERRORS.name, key="error.pod"))  # dropped
    got = Recorder()
    await (await backend.open()).consume_raw(q, got)
    await got.wait_for(lambda r: len(r.deliveries) == 20)
    assert got.bodies == [str(i) for i in range(20)]


async def test_publish_to_an_unknown_exchange_raises(bus: Bus) -> None:
    with pytest.raises(BusError):
        await bus.publish(events("x", exchange="ksched.nope"))


async def test_rejection_dead_letters_with_the_reason(bus: Bus) -> None:
    def reject_bad(batch: Sequence[Delivery]) -> list[Rejection]:
        return [Rejection(d, "malformed") for d in batch if d.body == b"bad"]

    got, dead = Recorder(reject_bad), Recorder()
    await bus.consume_raw(queue("q"), got)
    await bus.consume_raw(t.DEAD_LETTERS, dead)
    await bus.publish(events("good", "bad", "good2"))
    await bus.publish([Message(t.EVENTS.name, "pod.deleted", b"bad", {"x-trace": "t1"})])
    await dead.wait_for(lambda r: len(r.deliveries) == 2)
    await bus.publish(events("end"))
    await got.wait_body("end")
    assert got.bodies == ["good", "bad", "good2", "bad", "end"]
    assert [d.redelivered for d in got.deliveries] == [False] * 5
    first, second = dead.deliveries
    assert (first.body, first.exchange, first.routing_key) == (b"bad", "ksched.dead", "pod.added")
    assert first.headers[t.REASON_HEADER] == "malformed"
    assert first.headers[t.ORIGIN_EXCHANGE_HEADER] == t.EVENTS.name
    assert first.headers[t.ORIGIN_QUEUE_HEADER] == "test.q"
    assert second.routing_key == "pod.deleted"
    assert second.headers["x-trace"] == "t1"


class Greeting(msgspec.Struct, frozen=True, kw_only=True):
    """A declared message type for the typed-consumer tests."""

    text: str
    count: int = 0


class TypedRecorder:
    """A typed handler that records the values and deliveries it receives and rejects
    the greetings whose text is ``no``."""

    def __init__(self) -> None:
        self.received: list[Received[Greeting]] = []
        self.calls = 0
        self._changed = asyncio.Event()

    async def __call__(self, batch: Sequence[Received[Greeting]]) -> list[Rejection]:
        self.calls += 1
        self.received.extend(batch)
        self._changed.set()
        return [Rejection(r.delivery, "said no") for r in batch if r.value.text == "no"]

    async def wait_for(self, done: Callable[[TypedRecorder], bool]) -> None:
        async with asyncio.timeout(DEADLINE):
            while not done(self):
                self._changed.clear()
                await self._changed.wait()


async def test_typed_consumer_decodes_into_the_declared_type(bus: Bus) -> None:
    got = TypedRecorder()
    await bus.consume(queue("q"), got, decode=Greeting)
    await bus.publish(
        [
            Message(t.EVENTS.name, "pod.added", b'{"text": "hi", "count": 2}', {"x-trace": "t1"}),
            Message(t.EVENTS.name, "pod.added", b'{"text": "again", "extra": true}'),
        ]
    )
    await got.wait_for(lambda r: len(r.received) == 2)
    assert [r.value for r in got.received] == [Greeting(text="hi", count=2), Greeting(text="again")]
    first = got.received[0].delivery
    assert (first.body, first.routing_key, first.headers["x-trace"]) == (
        b'{"text": "hi", "count": 2}',
        "pod.added",
        "t1",
    )
    assert not first.redelivered


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"not json", "malformed"),
        (b'{"count": 1}', "missing required field `text`"),
        (b'{"text": 3}', "Expected `str`, got `int` - at `$.text`"),
    ],
)
async def test_typed_consumer_dead_letters_what_does_not_decode_with_the_reason(
    bus: Bus, body: bytes, error: str
) -> None:
    got, dead = TypedRecorder(), Recorder()
    await bus.consume(queue("q"), got, decode=Greeting)
    await bus.consume_raw(t.DEAD_LETTERS, dead)
    await bus.publish(
        [
            Message(t.EVENTS.name, "pod.added", b'{"text": "before"}'),
            Message(t.EVENTS.name, "pod.added", body, {"x-trace": "t2"}),
            Message(t.EVENTS.name, "pod.added", b'{"text": "no"}'),
            Message(t.EVENTS.name, "pod.added", b'{"text": "after"}'),
        ]
    )
    await dead.wait_for(lambda r: len(r.deliveries) == 2)
    await got.wait_for(lambda r: len(r.received) == 3)
    assert [r.value.text for r in got.received] == ["before", "no", "after"]
    undecodable, refused = dead.deliveries
    assert undecodable.body == body
    reason = undecodable.headers[t.REASON_HEADER]
    assert reason.startswith("undecodable on test.q: not a Greeting: "), reason
    assert error.lower() in reason.lower()
    assert undecodable.headers[t.ORIGIN_QUEUE_HEADER] == "test.q"
    assert undecodable.headers[t.ORIGIN_EXCHANGE_HEADER] == t.EVENTS.name
    assert undecodable.headers["x-trace"] == "t2"
    assert refused.body == b'{"text": "no"}'
    assert refused.headers[t.REASON_HEADER] == "said no"


async def test_typed_handler_is_not_called_when_nothing_decodes(bus: Bus) -> None:
    got, dead = TypedRecorder(), Recorder()
    await bus.consume(queue("q"), got, decode=Greeting, max_batch=1)
    await bus.consume_raw(t.DEAD_LETTERS, dead)
    await bus.publish(events("x", "y"))
    await dead.wait_for(lambda r: len(r.deliveries) == 2)
    await bus.publish([Message(t.EVENTS.name, "pod.added", b'{"text": "end"}')])
    await got.wait_for(lambda r: len(r.received) == 1)
    assert got.calls == 1
    assert [d.body for d in dead.deliveries] == [b"x", b"y"]


async def test_handler_error_redelivers_once_then_succeeds(bus: Bus) -> None:
    calls = 0

    def fail_first(batch: Sequence[Delivery]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("transient")

    got, dead = Recorder(fail_first), Recorder()
    await bus.consume_raw(queue("q"), got)
    await bus.consume_raw(t.DEAD_LETTERS, dead)
    await bus.publish(events("m"))
    await got.wait_for(lambda r: len(r.deliveries) == 2)
    assert [(d.body, d.redelivered) for d in got.deliveries] == [(b"m", False), (b"m", True)]
    await bus.publish(events("end"))
    await bus.publish(events("dead-end", exchange=t.DEAD.name))
    await got.wait_body("end")
    await dead.wait_body("dead-end")
    assert got.bodies == ["m", "m", "end"]
    assert dead.bodies == ["dead-end"]


async def test_handler_error_twice_dead_letters_with_the_exception(bus: Bus) -> None:
    def poison(batch: Sequence[Delivery]) -> None:
        if any(d.body == b"poison" for d in batch):
            raise ValueError("cannot decode 42")

    got, dead = Recorder(poison), Recorder()
    await bus.consume_raw(queue("q"), got, max_batch=1)
    await bus.consume_raw(t.DEAD_LETTERS, dead)
    await bus.publish(events("poison"))
    await dead.wait_for(lambda r: len(r.deliveries) == 1)
    [d] = dead.deliveries
    assert d.body == b"poison"
    assert "cannot decode 42" in d.headers[t.REASON_HEADER]
    await bus.publish(events("next"))
    await got.wait_body("next")
    assert got.bodies == ["poison", "poison", "next"]


@pytest.mark.parametrize(
    "error",
    [
        BusError("3 of 3 messages not confirmed"),
        ConnectionResetError("connection reset by peer"),
        TimeoutError(),
    ],
    ids=["unconfirmed-publish", "connection-reset", "timeout"],
)
async def test_an_unavailable_dependency_retries_the_batch_and_dead_letters_nothing(
    bus: Bus, error: Exception
) -> None:
    failures = 0

    def broker_down_three_times(batch: Sequence[Delivery]) -> None:
        nonlocal failures
        if failures < 3:
            failures += 1
            raise error

    got, dead = Recorder(broker_down_three_times), Recorder()
    await bus.consume_raw(queue("q"), got, max_batch=1)
    await bus.consume_raw(t.DEAD_LETTERS, dead)
    await bus.publish(events("m"))
    await got.wait_for(lambda r: len(r.deliveries) == 4)
    await bus.publish(events("end"))
    await bus.publish(events("dead-end", exchange=t.DEAD.name))
    await got.wait_body("end")
    await dead.wait_body("dead-end")
    assert got.bodies == ["m"] * 4 + ["end"]
    assert dead.bodies == ["dead-end"], "an unavailable broker is not the message's fault"


async def test_a_message_the_broker_cannot_carry_is_refused_not_unavailable(bus: Bus) -> None:
    with pytest.raises(BusRefused, match=r"(?i)too long") as caught:
        await bus.publish(events("x", exchange=t.ERRORS.name, key="error." + "k" * 300))
    assert not unavailable(caught.value)
    await bus.publish(events("fine", exchange=t.ERRORS.name, key="error.pod"))  # still usable


async def test_a_publish_with_one_message_the_broker_cannot_carry_sends_none(bus: Bus) -> None:
    got = Recorder()
    await bus.consume_raw(queue("q", t.ERRORS.name, "error.#"), got)
    batch = events("a", exchange=t.ERRORS.name, key="error.pod")
    batch += events("x", exchange=t.ERRORS.name, key="error." + "é" * 130)  # 260 bytes
    batch += events("b", exchange=t.ERRORS.name, key="error.pod")
    with pytest.raises(BusRefused, match=r"(?i)too long"):
        await bus.publish(batch)
    await bus.publish(events("end", exchange=t.ERRORS.name, key="error.pod"))
    await got.wait_body("end")
    assert got.bodies == ["end"], "a retry of the refused publish would duplicate nothing"


async def test_a_long_publish_arrives_whole_and_in_order(bus: Bus) -> None:
    got = Recorder()
    await bus.consume_raw(queue("q"), got, max_batch=1024)
    bodies = [f"m{i}" for i in range(700)]  # several socket writes on RabbitMQ
    await bus.publish(events(*bodies))
    await got.wait_for(lambda r: len(r.deliveries) == len(bodies))
    assert got.bodies == bodies


async def test_a_handler_whose_publish_is_refused_dead_letters_after_two_attempts(
    bus: Bus,
) -> None:
    async def publish_unpublishable(batch: Sequence[Delivery]) -> None:
        await bus.publish(events("x", exchange=t.ERRORS.name, key="error." + "k" * 300))

    got, dead = Recorder(), Recorder()
    await bus.consume_raw(queue("q"), lambda batch: _both(got, publish_unpublishable, batch))
    await bus.consume_raw(t.DEAD_LETTERS, dead)
    await bus.publish(events("m"))
    await dead.wait_for(lambda r: len(r.deliveries) == 1)
    assert [(d.body, d.redelivered) for d in got.deliveries] == [(b"m", False), (b"m", True)]
    assert "too long" in dead.deliveries[0].headers[t.REASON_HEADER].lower()


async def _both(
    recorder: Recorder,
    then: Callable[[Sequence[Delivery]], Awaitable[None]],
    batch: Sequence[Delivery],
) -> None:
    await recorder(batch)
    await then(batch)


async def test_fetch_takes_ready_messages_and_returns_those_not_removed(bus: Bus) -> None:
    q = queue("q")
    await bus.declare([q])
    await bus.publish(events("1", "2", "3", "4", "5"))
    async with bus.fetch(q, limit=4) as taken:
        assert [d.body for d in taken.deliveries] == [b"1", b"2", b"3", b"4"]
        assert taken.deliveries[0].exchange == t.EVENTS.name
        assert taken.deliveries[0].routing_key == "pod.added"
        await taken.remove([d for d in taken.deliveries if d.body in (b"2", b"4")])
    async with bus.fetch(q) as again:
        assert [d.body for d in again.deliveries] == [b"1", b"3", b"5"]
    assert await bus.purge(q) == 3
    async with bus.fetch(q) as empty:
        assert list(empty.deliveries) == []
    assert await bus.purge(q) == 0


async def test_cancel_gives_unacked_deliveries_to_the_next_consumer(bus: Bus) -> None:
    q = queue("q")
    await bus.declare([q])
    await bus.publish(events("1", "2", "3"))
    stuck = Recorder()
    stuck.gate.clear()
    consumer = await bus.consume_raw(q, stuck)
    await stuck.wait_for(lambda r: len(r.deliveries) >= 1)
    await consumer.cancel()
    got = Recorder()
    await bus.consume_raw(q, got)
    await got.wait_for(lambda r: len(r.deliveries) == 3)
    assert got.bodies == ["1", "2", "3"]
    assert all(d.redelivered for d in got.deliveries[: len(stuck.deliveries)])


async def test_exclusive_queue_disappears_with_its_consumer(backend: Backend, bus: Bus) -> None:
    q = t.scheduler_cluster_queue("r1")
    consumer = await bus.consume_raw(q, Recorder())
    assert await backend.queue_exists(q.name)
    await consumer.cancel()
    assert not await backend.queue_exists(q.name)


async def test_queue_contents_survive_a_new_connection(backend: Backend, bus: Bus) -> None:
    q = queue("q")
    await bus.declare([q])
    await bus.publish(events("1", "2", "3", "4", "5"))
    again = await backend.reconnect(bus)
    got = Recorder()
    await again.consume_raw(q, got)
    await got.wait_for(lambda r: len(r.deliveries) == 5)
    assert got.bodies == ["1", "2", "3", "4", "5"]
    assert not any(d.redelivered for d in got.deliveries)


async def test_prefetch_bounds_unacked_deliveries(bus: Bus) -> None:
    q = queue("q")
    slow, fast = Recorder(), Recorder()
    slow.gate.clear()
    await bus.consume_raw(q, slow, max_batch=100, prefetch=5)
    await bus.publish(events(*(str(i) for i in range(20))))
    await slow.wait_for(lambda r: len(r.deliveries) >= 1)
    await bus.consume_raw(q, fast)
    await fast.wait_for(lambda r: len(r.deliveries) == 15)
    assert len(slow.deliveries) <= 5
    slow.gate.set()
    await slow.wait_for(lambda r: len(r.deliveries) == 5)
    assert sorted(slow.bodies + fast.bodies, key=int) == [str(i) for i in range(20)]
    assert slow.bodies == [str(i) for i in range(5)]
