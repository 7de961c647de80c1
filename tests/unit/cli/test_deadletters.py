"""``ksched dead-letters``: list, replay and purge on the in-memory bus (the same calls
run against RabbitMQ in tests/integration/test_dead_letters.py)."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence

import msgspec
import pytest

from contracts import topology
from services.cli.deadletters import (
    BODY_PREVIEW,
    Selection,
    list_dead_letters,
    purge_dead_letters,
    replay_dead_letters,
)
from services.cli.errors import InputError
from services.common.bus import Delivery, MemoryBus, Message, Rejection
from tests.builders import make_node, make_pod

PROBE = topology.QueueSpec("test.ingest", (topology.QueueBinding(topology.EVENTS.name, "#"),))


def watch_event(kind: str, obj: object) -> Message:
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind, "ADDED"), body, {"x-t": "1"})


POD = watch_event("Pod", make_pod("web-1", requests={"cpu": "100m"}))
NODE = watch_event("Node", make_node("node-a"))
OTHER_POD = watch_event("Pod", make_pod("web-2"))


async def dead_lettered(bus: MemoryBus, messages: Sequence[Message]) -> None:
    """Publish ``messages`` through a consumer that rejects each, then stop it."""

    async def reject(batch: Sequence[Delivery]) -> list[Rejection]:
        return [Rejection(d, f"cannot take {d.routing_key}\nyet") for d in batch]

    consumer = await bus.consume_raw(PROBE, reject)
    await bus.declare([topology.DEAD_LETTERS])
    await bus.publish(messages)
    await bus.wait_idle()
    await consumer.cancel()


ALL = Selection()


async def listed(bus: MemoryBus, selection: Selection = ALL) -> list[dict[str, object]]:
    out = io.StringIO()
    assert await list_dead_letters(bus, selection, "json", out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_list_shows_origin_routing_key_reason_and_body() -> None:
    bus = MemoryBus()
    await dead_lettered(bus, [POD, NODE])
    first, second = await listed(bus)
    assert first["queue"] == PROBE.name
    assert first["exchange"] == topology.EVENTS.name
    assert first["routingKey"] == "pod.added"
    assert first["reason"] == "cannot take pod.added\nyet"
    assert first["size"] == len(POD.body)
    assert first["body"] == POD.body.decode()
    assert second["routingKey"] == "node.added"
    assert bus.queue_depth(topology.DEAD_LETTERS.name) == 2, "list removes nothing"

    table = io.StringIO()
    await list_dead_letters(bus, Selection(), "table", table)
    header, row, _ = table.getvalue().splitlines()
    assert header.split() == ["QUEUE", "ROUTING", "KEY", "REASON", "BODY"]
    queue, key, reason, body = re.split(r"\s{2,}", row)
    assert (queue, key, reason) == (PROBE.name, "pod.added", "cannot take pod.added yet")
    assert body == POD.body.decode()[:BODY_PREVIEW] + "…"


@pytest.mark.parametrize(
    ("selection", "replayed", "kept"),
    [
        (Selection(), ["pod.added", "node.added", "pod.added"], []),
        (Selection(routing_key="pod.*"), ["pod.added", "pod.added"], ["node.added"]),
        (Selection(routing_key="#", limit=1), ["pod.added"], ["node.added", "pod.added"]),
        (Selection(limit=2), ["pod.added", "node.added"], ["pod.added"]),
        (Selection(routing_key="node.deleted"), [], ["pod.added", "node.added", "pod.added"]),
    ],
    ids=["all", "pattern", "pattern-and-limit", "limit", "none-match"],
)
async def test_replay_republishes_the_selection_where_it_was_going_and_removes_it(
    selection: Selection, replayed: list[str], kept: list[str]
) -> None:
    bus = MemoryBus()
    await dead_lettered(bus, [POD, NODE, OTHER_POD])
    seen: list[Delivery] = []

    async def fixed(batch: Sequence[Delivery]) -> None:
        seen.extend(batch)

    await bus.consume_raw(PROBE, fixed)
    out = io.StringIO()
    assert await replay_dead_letters(bus, selection, out) == 0
    await bus.wait_idle()
    assert out.getvalue() == f"replayed {len(replayed)} dead letter(s)\n"
    assert [d.routing_key for d in seen] == replayed
    for delivery in seen:
        assert delivery.exchange == topology.EVENTS.name
        assert delivery.headers == {"x-t": "1"}, "the dead-letter headers are dropped"
    assert [d["routingKey"] for d in await listed(bus)] == kept


async def test_replay_keeps_a_dead_letter_without_a_known_origin() -> None:
    bus = MemoryBus()
    await bus.declare([topology.DEAD_LETTERS])
    legacy = {topology.REASON_HEADER: "from before ksched recorded the origin"}
    await bus.publish([Message(topology.DEAD.name, "pod.added", b"{}", legacy)])
    out = io.StringIO()
    assert await replay_dead_letters(bus, Selection(), out) == 0
    assert out.getvalue() == "replayed 0 dead letter(s)\n"
    assert bus.queue_depth(topology.DEAD_LETTERS.name) == 1


async def test_purge_removes_every_dead_letter_and_counts_them() -> None:
    bus = MemoryBus()
    await dead_lettered(bus, [POD, NODE, OTHER_POD])
    out = io.StringIO()
    assert await purge_dead_letters(bus, out) == 0
    assert out.getvalue() == "purged 3 dead letter(s)\n"
    assert await listed(bus) == []
    out = io.StringIO()
    await purge_dead_letters(bus, out)
    assert out.getvalue() == "purged 0 dead letter(s)\n"


def test_a_limit_below_one_is_refused_naming_the_flag() -> None:
    with pytest.raises(InputError, match=r"^--limit must be at least 1, not 0$"):
        Selection(limit=0)
