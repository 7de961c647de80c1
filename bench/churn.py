"""Upstream scheduler_perf's ``churn`` op (``create`` mode) for ``ksched bench``.

While the measured pods are scheduled, a background task publishes one pod of the
workload's :class:`~bench.workload.Churn` template every ``interval`` seconds
of real time, the first as the measurement starts. In the embedded mode the services
share this thread, so a tick can come late (a scheduling batch holds the event loop):
the pods that fell due meanwhile are published then, keeping the rate upstream's
churn op has (5/s for Unschedulable) over the measurement.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence

import msgspec

from bench.workload import Churn
from contracts import topology
from services.cli.manifests import Document

Publish = Callable[[Sequence[Document]], Awaitable[None]]


class ChurnOp:
    """Publishes churn pods with ``publish`` between :meth:`start` and :meth:`stop`."""

    def __init__(self, churn: Churn, publish: Publish) -> None:
        self._churn = churn
        self._publish = publish
        self._task: asyncio.Task[None] | None = None
        self._started = 0.0
        self.published = 0
        """Churn pods published so far."""

    async def start(self) -> None:
        """Publish the first pod, then keep publishing in the background."""
        self._started = time.monotonic()
        await self._publish_pods(1)
        self._task = asyncio.create_task(self._tick(), name="bench-churn")

    async def stop(self) -> int:
        """Stop publishing; returns how many pods were published."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        return self.published

    async def _tick(self) -> None:
        """Pod ``i`` falls due ``i * interval`` after the start; publish what is due."""
        interval = self._churn.interval
        while True:
            due = self._started + self.published * interval
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            fallen_due = int((time.monotonic() - self._started) / interval) + 1
            await self._publish_pods(max(1, fallen_due - self.published))

    async def _publish_pods(self, count: int) -> None:
        key = topology.event_key("pod", "ADDED")
        documents = []
        for i in range(self.published, self.published + count):
            body = msgspec.json.encode({"type": "ADDED", "object": self._churn.pod(i)})
            documents.append(Document(i, "pod", body, key))
        await self._publish(documents)
        self.published += count


__all__ = ["ChurnOp"]
