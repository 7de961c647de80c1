"""A TCP relay in front of the real broker whose broker-to-client direction can be held:
what the broker sends meanwhile waits in the relay, in order, until it is released. So a
test can make a reply arrive late (a loaded broker or client) at exactly the step it
chooses, on the real broker, without a timing race."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

CHUNK = 65536


class BrokerProxy:
    """Relays every connection made to :attr:`url` to the broker at ``upstream``."""

    def __init__(self, upstream: str) -> None:
        self._upstream = urlsplit(upstream)
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Task[None]] = set()
        self.url = ""

    def hold(self) -> None:
        """From now on, keep what the broker sends until :meth:`release`."""
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    async def cut(self) -> None:
        """Drop every relayed connection now (a node that died, a network cut); new
        connections are relayed as before."""
        pumps = list(self._pumps)
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        netloc = self._upstream.netloc.rsplit("@", 1)
        userinfo = netloc[0] + "@" if len(netloc) == 2 else ""
        self.url = urlunsplit(self._upstream._replace(netloc=f"{userinfo}127.0.0.1:{port}"))

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _relay(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        host = self._upstream.hostname or "127.0.0.1"
        broker_in, broker_out = await asyncio.open_connection(host, self._upstream.port or 5672)
        pumps = [
            asyncio.create_task(self._pump(client_in, broker_out, gated=False)),
            asyncio.create_task(self._pump(broker_in, client_out, gated=True)),
        ]
        self._pumps.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            self._pumps.difference_update(pumps)
            for writer in (client_out, broker_out):
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, gated: bool
    ) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(CHUNK):
                if gated:
                    await self._flowing.wait()
                sink.write(data)
                await sink.drain()


@contextlib.asynccontextmanager
async def broker_proxy(upstream: str) -> AsyncIterator[BrokerProxy]:
    proxy = BrokerProxy(upstream)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()
