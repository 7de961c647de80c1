"""TLS on both edges, against a second RabbitMQ node and a second Redis that speak only
TLS and require a client certificate (see tests.integration.private_servers)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis.exceptions

from contracts.topology import ERRORS, QueueBinding, QueueSpec
from services.common.bus import BusError, Delivery, Message, Rejection, open_bus
from services.common.settings import from_env
from services.common.store import open_store
from services.common.tls import TLSFiles
from tests.integration.private_servers import (
    Certificates,
    make_certificates,
    tls_rabbitmq,
    tls_redis,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@dataclass(frozen=True)
class Servers:
    certs: Certificates
    amqps_url: str
    rediss_url: str

    def tls(self, *, client: bool = True, ca: Path | None = None) -> TLSFiles:
        return TLSFiles(
            ca=str(ca or self.certs.ca),
            cert=str(self.certs.client_cert) if client else None,
            key=str(self.certs.client_key) if client else None,
        )


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    base = tmp_path_factory.mktemp("tls")
    base.chmod(0o755)
    certs = make_certificates(base / "certs")
    with (
        tls_redis(certs, base / "redis") as redis_port,
        tls_rabbitmq(certs, base / "rabbitmq") as amqps_port,
    ):
        yield Servers(
            certs,
            f"amqps://guest:guest@localhost:{amqps_port}/",
            f"rediss://localhost:{redis_port}/0",
        )


PROBE = QueueSpec("test.tls", (QueueBinding(ERRORS.name, "error.#"),))


async def test_the_bus_publishes_and_consumes_over_mutual_tls(servers: Servers) -> None:
    settings = from_env(
        {
            "KSCHED_AMQP_URL": servers.amqps_url,
            "KSCHED_TLS_CA": str(servers.certs.ca),
            "KSCHED_TLS_CERT": str(servers.certs.client_cert),
            "KSCHED_TLS_KEY": str(servers.certs.client_key),
        }
    )
    bus = open_bus(settings.amqp_url, namespace=f"tls{uuid.uuid4().hex[:8]}", tls=settings.tls)
    received: asyncio.Queue[bytes] = asyncio.Queue()

    async def handler(batch: Sequence[Delivery]) -> Sequence[Rejection]:
        for delivery in batch:
            received.put_nowait(delivery.body)
        return ()

    try:
        await bus.consume_raw(PROBE, handler)
        await bus.publish([Message(ERRORS.name, "error.pod", b'{"over":"tls"}')])
        async with asyncio.timeout(30):
            assert await received.get() == b'{"over":"tls"}'
    finally:
        await bus.delete_namespace([PROBE.name])  # type: ignore[attr-defined]
        await bus.close()


@pytest.mark.parametrize(
    ("client", "wrong_ca"),
    [(False, False), (True, True)],
    ids=["no-client-certificate", "untrusted-server"],
)
async def test_the_bus_refuses_a_tls_handshake_that_does_not_verify(
    servers: Servers, client: bool, wrong_ca: bool
) -> None:
    ca = servers.certs.other_ca if wrong_ca else None
    url = servers.amqps_url.replace("guest:guest", "guest:hunter2secret")
    bus = open_bus(url, tls=servers.tls(client=client, ca=ca))
    with pytest.raises(BusError, match="cannot connect to the broker") as caught:
        await bus.declare([])
    assert "hunter2secret" not in str(caught.value)
    assert "guest:***@" in str(caught.value)
    await bus.close()


async def test_the_store_works_over_mutual_tls(servers: Servers) -> None:
    store = open_store(
        servers.rediss_url, namespace=f"tls{uuid.uuid4().hex[:8]}", tls=servers.tls()
    )
    try:
        await store.put_queue_view(b"over tls")
        assert await store.queue_view() == b"over tls"
    finally:
        await store.flush_namespace()  # type: ignore[attr-defined]
        await store.close()


@pytest.mark.parametrize(
    ("client", "wrong_ca", "url_scheme"),
    [(False, False, "rediss"), (True, True, "rediss"), (True, False, "redis")],
    ids=["no-client-certificate", "untrusted-server", "plaintext-to-a-tls-port"],
)
async def test_the_store_refuses_what_does_not_verify(
    servers: Servers, client: bool, wrong_ca: bool, url_scheme: str
) -> None:
    ca = servers.certs.other_ca if wrong_ca else None
    url = servers.rediss_url.replace("rediss", url_scheme)
    store = open_store(url, tls=servers.tls(client=client, ca=ca))
    try:
        with pytest.raises((redis.exceptions.ConnectionError, OSError)):
            await store.applied_seq()
    finally:
        await store.close()
