"""The chaos run's user: plain aio-pika and the documented contract, built to survive a
broker restart as a real client must.

It differs from the integration tests' :class:`~tests.integration.harness.Client` only
in its inbox: a durable queue of its own on ``ksched.decisions`` (Bindings are persistent
messages), so what the binder publishes while the client reconnects waits for it, and a
robust connection re-declares and re-consumes it after the restart. Publishing retries a
publish the broker did not confirm until a deadline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

import aio_pika

from tests.integration.harness import Client

log = logging.getLogger("chaos.client")
INBOX = "chaos.client.decisions"
RETRIED = (
    aio_pika.exceptions.AMQPError,
    aio_pika.exceptions.ChannelInvalidStateError,
    ConnectionError,
    TimeoutError,
)
"""What a publish raises while the broker is away: the chunk is published again."""
PUBLISH_DEADLINE = 120.0
"""Seconds a chunk of watch events may take to be confirmed, retries included."""


class ChaosClient(Client):
    INBOX_ARGUMENTS: dict[str, Any] = {}
    """Arguments of the inbox queue (the HA client's is a quorum queue)."""

    def __init__(self, connection: aio_pika.abc.AbstractRobustConnection, namespace: str) -> None:
        super().__init__(connection, namespace)
        self.bound: set[str] = set()
        """Pods (``namespace/name``) the client received a Binding for."""

    async def open(self) -> None:
        self.channel = await self.connection.channel(publisher_confirms=True)
        await self.channel.set_qos(prefetch_count=1000)
        self.events = await self.channel.declare_exchange(
            self.prefix + "ksched.events", aio_pika.ExchangeType.TOPIC, durable=True
        )
        decisions = await self.channel.declare_exchange(
            self.prefix + "ksched.decisions", aio_pika.ExchangeType.TOPIC, durable=True
        )
        inbox = await self.channel.declare_queue(
            self.prefix + INBOX, durable=True, arguments=self.INBOX_ARGUMENTS
        )
        await inbox.bind(decisions, "#")
        await inbox.consume(self._on_decision)

    async def _on_decision(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            body = json.loads(message.body)
            self.decisions.append((message.routing_key or "", body, dict(message.headers)))
            if body.get("kind") == "Binding":
                meta = body["metadata"]
                self.bound.add(f"{meta['namespace']}/{meta['name']}")
            self.arrived.set()

    async def publish_all(self, kind: str, objects: Sequence[dict[str, Any]]) -> None:
        """Publish ADDED events for ``objects``, 500 confirmed at a time; a chunk the
        broker did not confirm (it restarted) is published again."""
        for start in range(0, len(objects), 500):
            chunk = objects[start : start + 500]
            deadline = time.monotonic() + PUBLISH_DEADLINE
            while True:
                try:
                    async with asyncio.timeout(30):
                        await asyncio.gather(*(self.publish(kind, obj) for obj in chunk))
                    break
                except RETRIED as error:
                    if time.monotonic() > deadline:
                        raise
                    log.warning("publishing %ss again: %s", kind, error)
                    await asyncio.sleep(1)


class HAClient(ChaosClient):
    """The chaos client of the HA mode: it knows every node of the RabbitMQ cluster and,
    when its connection drops (its node was killed), connects to the next one and opens
    its inbox again there. The inbox is a quorum queue, so the Bindings in it survive the
    loss of any one node."""

    INBOX_ARGUMENTS: dict[str, Any] = {"x-queue-type": "quorum"}

    def __init__(self, urls: Sequence[str], namespace: str) -> None:
        super().__init__(None, namespace)  # type: ignore[arg-type]  # connect() sets it
        self.urls = list(urls)
        self._next = 0
        self._closing = False
        self._reconnecting: asyncio.Task[None] | None = None

    async def connect(self, within: float = PUBLISH_DEADLINE) -> None:
        """Connect to the first node that answers, trying each in turn (bounded)."""
        deadline = time.monotonic() + within
        while True:
            url = self.urls[self._next % len(self.urls)]
            self._next += 1
            try:
                connection = await aio_pika.connect(url, timeout=5)
                break
            except (*RETRIED, OSError) as error:
                if time.monotonic() > deadline:
                    raise
                log.warning("the client cannot connect to %s: %s", url, error)
                await asyncio.sleep(0.5)
        self.connection = connection  # type: ignore[assignment]
        connection.close_callbacks.add(self._lost)
        await self.open()

    def _lost(self, *_: object) -> None:
        if not self._closing and (self._reconnecting is None or self._reconnecting.done()):
            self._reconnecting = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        log.warning("the client lost its broker; connecting to the next node")
        await self.connect()

    async def close(self) -> None:
        self._closing = True
        if self._reconnecting is not None:
            self._reconnecting.cancel()
        await self.connection.close()
