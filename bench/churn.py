"""Upstream scheduler_perf's ``churn`` op (``create`` and ``recreate`` modes) for
``ksched bench``.

While the measured pods are scheduled, a background task takes one step of the
workload's :class:`~bench.workload.Churn` every ``interval`` seconds of real time, the
first as the measurement starts. A step goes over the op's templates in order, as
upstream's churn functions do: in ``create`` mode it creates an object of each (for
``number`` steps; 0: until the measurement ends); in ``recreate`` mode step ``k`` uses
slot ``k mod number`` of each template: an empty slot gets a new object (ADDED), a full
one has its object deleted (DELETED). Each object of a template gets a new name
(upstream's ``generateName``). In the embedded mode the services share this thread, so a
step can come late (a scheduling batch holds the event loop): the steps that fell due
meanwhile are taken then, keeping upstream's rate over the measurement.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec

from bench.workload import Churn
from contracts import topology
from services.cli.manifests import Document

Publish = Callable[[Sequence[Document]], Awaitable[None]]


class ChurnOp:
    """Publishes the churn's watch events with ``publish`` between :meth:`start` and
    :meth:`stop`."""

    def __init__(self, churn: Churn, publish: Publish) -> None:
        self._churn = churn
        self._publish = publish
        self._task: asyncio.Task[None] | None = None
        self._started = 0.0
        self._made = [0] * len(churn.templates)
        """Objects created so far, per template (the next one's index)."""
        self._slots: list[list[dict[str, Any] | None]] = [
            [None] * max(1, churn.number) for _ in churn.templates
        ]
        self.steps = 0
        """Steps taken so far."""
        self.published = 0
        """Objects created so far (every template)."""
        self.events = 0
        """Watch events published so far (ADDED and DELETED)."""

    @property
    def finished(self) -> bool:
        """A ``create`` churn with a ``number`` has taken its last step."""
        churn = self._churn
        return churn.mode == "create" and 0 < churn.number <= self.steps

    async def start(self) -> None:
        """Take the first step, then keep stepping in the background."""
        self._started = time.monotonic()
        await self._publish(self.step(1))
        self._task = asyncio.create_task(self._tick(), name="bench-churn")

    async def stop(self) -> int:
        """Stop stepping; returns how many objects were created."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        return self.published

    def step(self, count: int) -> list[Document]:
        """The watch events of the next ``count`` steps (fewer once a ``create`` churn
        with a ``number`` is done)."""
        documents: list[Document] = []
        for _ in range(count):
            if self.finished:
                break
            slot = self.steps % max(1, self._churn.number)
            for j in range(len(self._churn.templates)):
                documents.append(self._next(j, slot))
            self.steps += 1
        self.events += len(documents)
        return documents

    def _next(self, template: int, slot: int) -> Document:
        live = self._slots[template][slot] if self._churn.mode == "recreate" else None
        if live is not None:
            self._slots[template][slot] = None
            return _event("DELETED", live, self.events)
        obj = self._churn.object(template, self._made[template])
        self._made[template] += 1
        self.published += 1
        if self._churn.mode == "recreate":
            self._slots[template][slot] = obj
        return _event("ADDED", obj, self.events)

    async def _tick(self) -> None:
        """Step ``i`` falls due ``i * interval`` after the start; take what is due."""
        interval = self._churn.interval
        while not self.finished:
            due = self._started + self.steps * interval
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            fallen_due = int((time.monotonic() - self._started) / interval) + 1
            documents = self.step(max(1, fallen_due - self.steps))
            if documents:
                await self._publish(documents)


def _event(event_type: str, obj: dict[str, Any], index: int) -> Document:
    kind = str(obj["kind"]).lower()
    body = msgspec.json.encode({"type": event_type, "object": obj})
    return Document(index, kind, body, topology.event_key(kind, event_type))


__all__ = ["ChurnOp"]
