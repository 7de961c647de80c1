"""The ClusterStore contract's fixtures: ``clients`` of one store per backend (memory,
and Redis for the integration runs), and ``store``, one client of it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.common.store import ClusterStore
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
