"""How the store's redis-py client is built from KSCHED_REDIS_URL (nothing connects):
the Sentinels and the master get their own credentials, TLS reaches both."""

from __future__ import annotations

import pytest
from redis.asyncio.sentinel import (
    MasterNotFoundError,
    SentinelConnectionPool,
    SentinelManagedSSLConnection,
)
from redis.exceptions import ConnectionError, ReadOnlyError, ResponseError, TimeoutError

from services.common.store._client import connect, retrying
from services.common.store.errors import store_failure
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


class Flaky:
    """A store call that fails ``failures`` times with ``error``, then answers."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "ok"


@pytest.mark.parametrize(
    "error",
    [ConnectionError("refused"), ReadOnlyError("READONLY replica"), TimeoutError("slow")],
    ids=["connection", "readonly", "timeout"],
)
async def test_a_call_is_retried_through_a_failover(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    call = Flaky(2, error)
    assert await retrying(30.0, call, "leases") == "ok"
    assert call.calls == 3
    lines = [r.getMessage() for r in caplog.records]
    assert len([line for line in lines if "retrying against the master" in line]) == 1
    assert len([line for line in lines if "Redis answers again (leases)" in line]) == 1


@pytest.mark.parametrize(
    ("within", "error", "calls"),
    [
        (0.0, ConnectionError("refused"), 1),  # a plain Redis URL: at once, as before
        (30.0, ResponseError("KSCHED_STORE_LOST gone"), 1),  # not a failover: never again
    ],
)
async def test_what_is_not_retried(within: float, error: Exception, calls: int) -> None:
    call = Flaky(5, error)
    with pytest.raises(type(error)):
        await retrying(within, call, "apply")
    assert call.calls == calls


async def test_no_master_is_said_in_one_short_line() -> None:
    noisy = MasterNotFoundError("No master found for 'svc' : <Redis<ConnectionPool<...>>> - x")
    with pytest.raises(MasterNotFoundError) as raised:
        await retrying(0.0, Flaky(1, noisy), "epoch")
    assert str(raised.value) == "No master found for 'svc' (no Sentinel named a live master)"


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        (MasterNotFoundError("No master found for 'svc'"), "unreachable"),
        (ReadOnlyError("You can't write against a read only replica."), "unreachable"),
        (ResponseError("MASTERDOWN Link with MASTER is down"), "unreachable"),
        (ResponseError("KSCHED_STORE_LOST gone"), "refused"),
        (ValueError("not redis"), None),
    ],
)
def test_a_failover_is_unreachable_never_a_refusal(error: Exception, failure: str | None) -> None:
    """A batch that met a failover is retried, never dead-lettered (bus.unavailable)."""
    assert store_failure(error) == failure
