"""``ksched dead-letters list|replay|purge``: the poison messages in ``ksched.dead.letters``.

A consumer dead-letters a message it rejected, or whose handler failed on it twice,
with the reason and where it came from in its headers (contracts.topology:
``x-ksched-reason``, ``x-ksched-exchange``, ``x-ksched-queue``). These commands read that
queue without consuming it (``Bus.fetch``: what is not removed goes back, in order):

- ``list``: one line per dead letter (the queue it came from, its routing key, the
  reason, the first bytes of its body); ``-o json``: one object per line.
- ``replay``: publish each again to the exchange it was first published to, with its
  routing key and its own headers (the dead-letter ones dropped), then remove it. Once
  the cause is fixed (the informer upgraded, the object corrected), this is the retry.
  A dead letter without a known origin exchange is kept and counted.
- ``purge``: remove every dead letter; prints how many.

``--routing-key`` (an AMQP topic pattern: ``pod.*``, ``#.deleted``) and ``--limit``
select which dead letters ``list`` and ``replay`` take.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from contracts import topology
from services.cli.errors import InputError
from services.common.bus import Bus, Delivery, Message, open_bus
from services.common.bus.memory import topic_matches
from services.common.settings import Settings

BODY_PREVIEW = 80
"""Characters of the body ``list`` shows in its table."""
BODY_PREVIEW_JSON = 1024
"""Characters of the body ``list -o json`` includes (``size`` gives the whole length)."""
DEAD_LETTER_HEADERS = frozenset(
    {topology.REASON_HEADER, topology.ORIGIN_EXCHANGE_HEADER, topology.ORIGIN_QUEUE_HEADER}
)
_EXCHANGES = frozenset(spec.name for spec in topology.EXCHANGES)


@dataclass(frozen=True, slots=True)
class Selection:
    routing_key: str | None = None
    """A topic pattern the routing key must match; None: any."""
    limit: int | None = None
    """At most this many (the first in the queue); None: all."""

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise InputError(f"--limit must be at least 1, not {self.limit}")

    def pick(self, deliveries: Sequence[Delivery]) -> list[Delivery]:
        chosen = [
            d
            for d in deliveries
            if self.routing_key is None or topic_matches(self.routing_key, d.routing_key)
        ]
        return chosen if self.limit is None else chosen[: self.limit]


def describe(delivery: Delivery) -> dict[str, Any]:
    """A dead letter as ``list -o json`` prints it."""
    headers = delivery.headers
    return {
        "queue": headers.get(topology.ORIGIN_QUEUE_HEADER),
        "exchange": headers.get(topology.ORIGIN_EXCHANGE_HEADER),
        "routingKey": delivery.routing_key,
        "reason": headers.get(topology.REASON_HEADER),
        "size": len(delivery.body),
        "body": delivery.body[:BODY_PREVIEW_JSON].decode(errors="replace"),
    }


def _row(delivery: Delivery) -> list[str]:
    described = describe(delivery)
    body = delivery.body[:BODY_PREVIEW].decode(errors="replace")
    body = body.encode("unicode_escape").decode()[:BODY_PREVIEW]
    if len(delivery.body) > BODY_PREVIEW:
        body += "…"
    return [
        described["queue"] or "-",
        delivery.routing_key or "-",
        " ".join((described["reason"] or "-").split()),
        body,
    ]


def print_list(deliveries: Sequence[Delivery], output: str, out: TextIO) -> None:
    """The dead letters on ``out``, their count on stderr (stdout stays data only)."""
    if output == "json":
        for delivery in deliveries:
            print(json.dumps(describe(delivery)), file=out)
    else:
        rows = [["QUEUE", "ROUTING KEY", "REASON", "BODY"], *(_row(d) for d in deliveries)]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            print("  ".join([*cells, row[3]]).rstrip(), file=out)
    print(f"{len(deliveries)} dead letter(s)", file=sys.stderr)


def replay_message(delivery: Delivery) -> Message | None:
    """The message that replays ``delivery``, or None if its origin is unknown."""
    exchange = delivery.headers.get(topology.ORIGIN_EXCHANGE_HEADER)
    if exchange not in _EXCHANGES or exchange == topology.DEAD.name:
        return None
    headers = {k: v for k, v in delivery.headers.items() if k not in DEAD_LETTER_HEADERS}
    return Message(exchange, delivery.routing_key, delivery.body, headers)


async def list_dead_letters(
    bus: Bus, selection: Selection, output: str, out: TextIO = sys.stdout
) -> int:
    # Only the selection's limit when no pattern filters: the pattern needs them all.
    limit = selection.limit if selection.routing_key is None else None
    async with bus.fetch(topology.DEAD_LETTERS, limit=limit) as taken:
        print_list(selection.pick(taken.deliveries), output, out)
    return 0


async def replay_dead_letters(bus: Bus, selection: Selection, out: TextIO = sys.stdout) -> int:
    limit = selection.limit if selection.routing_key is None else None
    async with bus.fetch(topology.DEAD_LETTERS, limit=limit) as taken:
        chosen = selection.pick(taken.deliveries)
        replays = [(d, replay_message(d)) for d in chosen]
        ready = [(d, m) for d, m in replays if m is not None]
        if ready:
            await bus.publish([m for _, m in ready])  # confirmed before anything is removed
            await taken.remove([d for d, _ in ready])
    print(f"replayed {len(ready)} dead letter(s)", file=out)
    unknown = len(replays) - len(ready)
    if unknown:
        print(
            f"kept {unknown} dead letter(s) with no known origin exchange "
            f"(header {topology.ORIGIN_EXCHANGE_HEADER}); purge them or publish them yourself",
            file=sys.stderr,
        )
    return 0


async def purge_dead_letters(bus: Bus, out: TextIO = sys.stdout) -> int:
    print(f"purged {await bus.purge(topology.DEAD_LETTERS)} dead letter(s)", file=out)
    return 0


async def dead_letters_command(
    settings: Settings, action: str, selection: Selection, output: str
) -> int:
    bus = open_bus(
        settings.amqp_url,
        namespace=settings.namespace,
        tls=settings.tls,
        quorum=settings.quorum_queues,
    )
    try:
        await bus.declare([topology.DEAD_LETTERS])
        match action:
            case "list":
                return await list_dead_letters(bus, selection, output)
            case "replay":
                return await replay_dead_letters(bus, selection)
            case "purge":
                return await purge_dead_letters(bus)
        raise InputError(f"unknown action {action!r} (list, replay or purge)")
    finally:
        await bus.close()
