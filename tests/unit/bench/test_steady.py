"""The steady-state measurement (bench.steady): ``count`` pods pending, each bound one
deleted and replaced while the window is open, none after it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest

from bench.config import load_workloads
from bench.embedded import Timings
from bench.steady import SteadyState, parse_duration
from services.cli.manifests import Document

WORKLOAD = load_workloads()["SteadyStateClusterResourceClaimTemplate_half"]


@pytest.mark.parametrize(
    ("text", "seconds"), [("10s", 10.0), ("500ms", 0.5), ("2m", 120.0), ("1.5s", 1.5),
                          ("10", None), ("ten s", None), ("", None)]
)  # fmt: skip
def test_durations_as_upstream_writes_them(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


async def test_each_bound_pod_is_replaced_until_the_window_closes() -> None:
    assert WORKLOAD.steady is not None
    timings = Timings(WORKLOAD.steady.in_flight)
    state = SteadyState(WORKLOAD.steady, WORKLOAD)
    timings.steady = state
    now = [100.0]
    sent: list[tuple[str, str]] = []
    window_open = asyncio.Event()

    async def publish(docs: Sequence[Document]) -> None:
        for doc in docs:
            event = json.loads(doc.body)
            sent.append((event["type"], event["object"]["metadata"]["name"]))
        window_open.set()

    async def sleep(_: float) -> None:
        await window_open.wait()
        # Two pods bound inside the window, then the window closes and a third binds.
        timings.decision(WORKLOAD.measured_key(0), 101.0)
        timings.decision(WORKLOAD.measured_key(3), 102.0)
        for _ in range(20):
            await asyncio.sleep(0)
        now[0] = 200.0

    started = await state.run(publish, timings.published, clock=lambda: now[0], sleep=sleep)
    timings.decision(WORKLOAD.measured_key(1), 199.0 + WORKLOAD.steady.duration)
    assert started == 100.0
    created = [name for kind, name in sent if kind == "ADDED"]
    deleted = [name for kind, name in sent if kind == "DELETED"]
    assert created == [f"test-dra-{i}" for i in range(12)]
    assert deleted == ["test-dra-0", "test-dra-3"]
    assert set(timings.decided) == {WORKLOAD.measured_key(0), WORKLOAD.measured_key(3)}
