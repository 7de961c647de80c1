"""A failed connection's error names where it failed, never the password it used."""

from __future__ import annotations

import pytest
import redis.exceptions

from services.common.bus import BusError, open_bus
from services.common.store import open_store
from tests.integration.tls_servers import free_port

pytestmark = pytest.mark.integration

SECRET = "hunter2-not-for-logs"


@pytest.mark.parametrize(
    "url",
    [
        f"amqp://guest:{SECRET}@127.0.0.1:5672/",  # the real broker refuses the login
        f"amqp://guest:{SECRET}@127.0.0.1:{free_port()}/",  # nothing listens
    ],
    ids=["bad-password", "nothing-listens"],
)
async def test_a_bus_connection_error_is_redacted(url: str) -> None:
    bus = open_bus(url)
    with pytest.raises(BusError) as caught:
        await bus.declare([])
    await bus.close()
    message = str(caught.value)
    assert SECRET not in message and "guest:***@127.0.0.1" in message
    assert "\n" not in message


async def test_a_store_connection_error_carries_no_password() -> None:
    store = open_store(f"redis://nobody:{SECRET}@127.0.0.1:6379/0")
    with pytest.raises(redis.exceptions.RedisError) as caught:
        await store.applied_seq()
    await store.close()
    assert SECRET not in str(caught.value)
