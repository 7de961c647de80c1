"""The ``harness`` fixture: a started queue service (see service_support.Harness)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.unit.queue.service_support import Harness


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    await h.start()
    yield h
    await h.queue.stop()
    await h.bus.close()
