"""What the binder's service tests share: a bus that records what is published, and the
watch events a user publishes."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from contracts import topology
from services.common.bus import Message
from services.common.bus.memory import MemoryBus


class RecordingBus(MemoryBus):
    """A MemoryBus that keeps every message published through it."""

    def __init__(self) -> None:
        super().__init__()
        self.published: list[Message] = []

    async def publish(self, messages: Sequence[Message]) -> None:
        self.published += messages
        await super().publish(messages)


def watch_event(kind: str, obj: object) -> Message:
    """A user's ADDED watch event for ``obj`` on ``ksched.events``."""
    body = msgspec.json.encode({"type": "ADDED", "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind, "ADDED"), body)
