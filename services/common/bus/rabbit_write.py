"""The batched publish of :class:`~services.common.bus.rabbit.RabbitBus`: many messages
in one socket write on an aiormq channel with publisher confirms, their confirmations
awaited together. It uses aiormq's Channel internals (:data:`CHANNEL_INTERNALS`); a
channel without them is published to message by message instead (:func:`supported`)."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeGuard

import aiormq
from aiormq.abc import ChannelFrame
from pamqp.header import ContentHeader

from contracts.topology import EXCHANGES
from services.common.bus.base import Message

_DURABLE = {spec.name: spec.durable for spec in EXCHANGES}
_JSON = "application/json"

PUBLISH_CHUNK = 256
"""Messages written to the socket at once by one publish (a longer publish is written
in several such writes, in order)."""
CHANNEL_INTERNALS = (
    "lock",
    "delivery_tag",
    "confirmations",
    "write_queue",
    "number",
    "create_future",
    "_split_body",
    "_raise_on_channel_close",
)
"""What :func:`write_batch` uses of aiormq's Channel (aiormq 7.2); a version without one
of them is published to message by message, as aio-pika does."""


def supported(channel: object) -> TypeGuard[aiormq.Channel]:
    """Whether ``channel`` is an aiormq Channel with every internal the write uses."""
    return isinstance(channel, aiormq.Channel) and all(
        hasattr(channel, name) for name in CHANNEL_INTERNALS
    )


async def write_batch(
    channel: aiormq.Channel,
    broker_name: Callable[[str], str],
    messages: Sequence[Message],
) -> list[asyncio.Future[object]]:
    """Send ``messages`` on ``channel`` (publisher confirms on) as one write, as
    ``Channel.basic_publish`` sends each: the same frames and properties (persistent on
    durable exchanges, a random message id), under the channel's lock, each with the
    next delivery tag. Returns their confirmation futures (routing keys were checked)."""
    return await write_raw(
        channel,
        [
            Raw(
                broker_name(m.exchange),
                m.routing_key,
                m.body,
                dict(m.headers),
                persistent=_DURABLE[m.exchange],
            )
            for m in messages
        ],
    )


@dataclass(frozen=True, slots=True)
class Raw:
    """One message as the broker names things (the exchange's name on the broker)."""

    exchange: str
    routing_key: str
    body: bytes
    headers: dict[str, object]
    persistent: bool = True


async def write_raw(
    channel: aiormq.Channel, messages: Sequence[Raw]
) -> list[asyncio.Future[object]]:
    """:func:`write_batch` of messages already named as on the broker: one write, in
    order, their confirmation futures returned (a stream event log appends so)."""
    frames: list[object] = []
    count = 0
    for m in messages:
        properties = aiormq.spec.Basic.Properties(
            content_type=_JSON,
            delivery_mode=2 if m.persistent else 1,
            headers=m.headers,  # type: ignore[arg-type]
            message_id=uuid.UUID(int=random.getrandbits(128), version=4).hex,
        )
        publish = aiormq.spec.Basic.Publish(
            exchange=m.exchange, routing_key=m.routing_key, mandatory=False
        )
        header = ContentHeader(properties=properties, body_size=len(m.body))
        frames += [publish, header, *channel._split_body(m.body)]
        count += 1
    if not count:
        return []
    async with channel._raise_on_channel_close(), channel.lock:
        first = channel.delivery_tag + 1
        futures: list[asyncio.Future[object]] = []
        for tag in range(first, first + count):
            future = channel.create_future()
            channel.confirmations[tag] = future
            futures.append(future)
        channel.delivery_tag += count
        drain = channel.create_future()
        try:
            await channel.write_queue.put(
                ChannelFrame.marshall(
                    frames=frames,  # type: ignore[arg-type]
                    channel_number=channel.number,
                    drain_future=drain,
                )
            )
        except BaseException:
            # Not sent: the broker never saw these tags; reuse them (as basic_publish).
            channel.delivery_tag -= count
            for tag, future in enumerate(futures, first):
                channel.confirmations.pop(tag, None)
                future.cancel()
            drain.cancel()
            raise
        try:
            await drain
        except asyncio.CancelledError:
            if cancelling():
                raise
            # The channel closed under the write (aiormq rejects its futures so).
            raise aiormq.exceptions.ChannelInvalidStateError("the channel closed") from None
    return futures


def cancelling() -> bool:
    """Whether the current task is being cancelled (not merely met a CancelledError)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
