"""Upstream scheduler_perf's steady state (``createPods`` with ``steadyState: true``):
``in_flight`` measured pods are kept pending for ``duration`` seconds: as soon as one is
bound it is deleted and the next one created, so the cluster stays at the same level of
use. Throughput is the pods bound in that window over the window.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import msgspec

from contracts import topology
from services.cli.manifests import Document

if TYPE_CHECKING:
    from bench.embedded import Publish
    from bench.workload import Workload

_DURATION: Final = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)$")
_UNIT: Final = {"ms": 0.001, "s": 1.0, "m": 60.0}


def parse_duration(text: str) -> float | None:
    """A Go duration of one unit (``10s``, ``500ms``, ``2m``) in seconds; None if not."""
    match = _DURATION.match(text)
    return None if match is None else float(match.group(1)) * _UNIT[match.group(2)]


@dataclass(frozen=True, slots=True)
class Steady:
    in_flight: int
    """Measured pods pending at any time (upstream's ``count``)."""
    duration: float
    """Seconds the measurement lasts (``durationParam``)."""


class SteadyState:
    """Keeps ``steady.in_flight`` measured pods of ``workload`` pending: each bound one
    (:meth:`bound`) is deleted and replaced until the window closes."""

    def __init__(self, steady: Steady, workload: Workload) -> None:
        self.steady = steady
        self.workload = workload
        self.next_index = 0
        self.index: dict[str, int] = {}
        self.until = float("inf")
        self._replace: asyncio.Queue[str] = asyncio.Queue()

    def bound(self, pod: str, at: float) -> None:
        """A measured pod was bound at ``at``: replace it while the window is open."""
        if pod in self.index and at < self.until:
            self._replace.put_nowait(pod)

    def _created(self, count: int) -> list[Document]:
        docs = []
        for _ in range(count):
            i = self.next_index
            self.next_index += 1
            self.index[self.workload.measured_key(i)] = i
            body = msgspec.json.encode({"type": "ADDED", "object": self.workload.measured(i)})
            docs.append(Document(i, "pod", body, topology.event_key("pod", "ADDED")))
        return docs

    def _deleted(self, pod: str) -> Document:
        i = self.index[pod]
        body = msgspec.json.encode({"type": "DELETED", "object": self.workload.measured(i)})
        return Document(i, "pod", body, topology.event_key("pod", "DELETED"))

    async def run(
        self,
        publish: Publish,
        published: dict[str, float],
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> float:
        """Create the first pods, replace bound ones until the window closes; returns
        when the window opened."""
        started = clock()
        self.until = started + self.steady.duration
        first = self._created(self.steady.in_flight)
        for doc in first:
            published[self.workload.measured_key(doc.index)] = started

        async def replace() -> None:
            while True:
                pod = await self._replace.get()
                [created] = self._created(1)
                published[self.workload.measured_key(created.index)] = clock()
                await publish([self._deleted(pod), created])

        await publish(first)
        replacer = asyncio.create_task(replace())
        try:
            await sleep(max(0.0, self.until - clock()))
        finally:
            replacer.cancel()
            await asyncio.gather(replacer, return_exceptions=True)
        return started
