"""Stream event logs on the real broker for the contract tests: each test gets its own
namespace, and its streams are deleted afterwards."""

from __future__ import annotations

from uuid import uuid4

import aio_pika

from services.common.eventlog.options import StreamOptions
from services.common.eventlog.stream import StreamEventLog
from tests.contract.bus_support import AMQP_URL


class StreamLogs:
    """Opens StreamEventLogs on one stream (``name``) of a namespace of its own."""

    def __init__(self, name: str = "events", url: str = AMQP_URL) -> None:
        self.name = name
        self.options = StreamOptions(amqp_url=url, namespace=f"t{uuid4().hex[:8]}")
        self._opened: list[StreamEventLog] = []

    def open(self, url: str | None = None) -> StreamEventLog:
        options = self.options
        if url is not None:
            options = StreamOptions(amqp_url=url, namespace=options.namespace)
        log = StreamEventLog(self.name, options)
        self._opened.append(log)
        return log

    async def aclose(self) -> None:
        for log in self._opened:
            await log.close()
        async with await aio_pika.connect(AMQP_URL) as connection:
            channel = await connection.channel()
            stream = f"{self.options.namespace}.{self.name}"
            for name in (stream, f"{stream}.fences", f"{stream}.snapshots"):
                await channel.queue_delete(name)
