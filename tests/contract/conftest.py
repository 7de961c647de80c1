"""The contract suites' fixtures: for the ClusterStore, ``clients`` of one store per
backend (memory, and Redis for the integration runs) and ``store``, one client of it;
for the Bus, ``backend`` (memory, RabbitMQ, RabbitMQ with quorum queues) and ``bus``,
one bus of it with the dead-letter queue declared."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from contracts import topology as t
from services.common.bus import Bus
from services.common.store import ClusterStore
from tests.contract.bus_support import Backend
from tests.contract.store_support import Clients


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
async def clients(request: pytest.FixtureRequest) -> AsyncIterator[Clients]:
    c = Clients(request.param)
    try:
        yield c
    finally:
        await c.teardown()


@pytest.fixture
def store(clients: Clients) -> ClusterStore:
    return clients.open()


@pytest.fixture(
    params=[
        "memory",
        pytest.param("rabbit", marks=pytest.mark.integration),
        pytest.param("rabbit-quorum", marks=pytest.mark.integration),
    ]
)
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    backend = Backend(request.param)
    try:
        yield backend
    finally:
        await backend.aclose()


@pytest.fixture
async def bus(backend: Backend) -> Bus:
    bus = await backend.open()
    await bus.declare([t.DEAD_LETTERS])
    return bus
