"""How the store's redis-py client is built from KSCHED_REDIS_URL (nothing connects):
the Sentinels and the master get their own credentials, TLS reaches both."""

from __future__ import annotations

import pytest
from redis.asyncio.sentinel import SentinelConnectionPool, SentinelManagedSSLConnection

from services.common.store._client import connect
from services.common.store.sentinel import FailoverOptions
from services.common.tls import TLSFiles

NO_TLS = TLSFiles()


def sentinel_kwargs(client: object) -> list[dict[str, object]]:
    pool = client.redis.connection_pool  # type: ignore[attr-defined]
    assert isinstance(pool, SentinelConnectionPool)
    return [s.connection_pool.connection_kwargs for s in pool.sentinel_manager.sentinels]


@pytest.mark.parametrize(
    ("sentinel_password", "expected"), [(None, None), ("for-sentinels", "for-sentinels")]
)
async def test_the_url_password_is_the_masters_and_the_sentinels_have_their_own(
    sentinel_password: str | None, expected: str | None
) -> None:
    options = FailoverOptions(sentinel_password=sentinel_password)
    client = connect("redis+sentinel://user:for-master@a:1,b:2/svc/3", NO_TLS, options)
    try:
        master = client.redis.connection_pool.connection_kwargs
        assert (master["username"], master["password"], master["db"]) == ("user", "for-master", 3)
        sentinels = sentinel_kwargs(client)
        assert [(s["host"], s["port"]) for s in sentinels] == [("a", 1), ("b", 2)]
        assert {s.get("password") for s in sentinels} == {expected}
        assert client.attributes["server.address"] == "a"
        assert client.attributes["db.namespace"] == "3"
    finally:
        await client.aclose()


async def test_rediss_sentinel_uses_tls_to_the_master_and_the_sentinels() -> None:
    tls = TLSFiles(ca="/etc/ssl/certs/ca-certificates.crt")
    client = connect("rediss+sentinel://h:1/svc", tls, FailoverOptions())
    try:
        pool = client.redis.connection_pool
        assert pool.connection_class is SentinelManagedSSLConnection
        assert pool.connection_kwargs["ssl_ca_certs"] == tls.ca
        [sentinel] = sentinel_kwargs(client)
        assert sentinel["ssl_ca_certs"] == tls.ca
        assert sentinel["ssl_cert_reqs"] == "required"
    finally:
        await client.aclose()


async def test_a_plain_url_is_one_server_as_before() -> None:
    client = connect("redis://127.0.0.1:6379/2", NO_TLS, FailoverOptions())
    try:
        assert not isinstance(client.redis.connection_pool, SentinelConnectionPool)
        assert client.attributes["db.namespace"] == "2"
        assert client.attributes["server.port"] == 6379
    finally:
        await client.aclose()
