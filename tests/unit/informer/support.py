"""Support for the informer's tests: watch events as a client publishes them."""

from __future__ import annotations

import msgspec

from contracts import topology
from contracts.kinds import KubeObject, kind_of
from services.common.bus import Message


def event_message(obj: KubeObject, type_: str = "ADDED") -> Message:
    """``{"type": type_, "object": obj}`` on ``ksched.events`` with its routing key."""
    body = msgspec.json.encode({"type": type_, "object": obj})
    return Message(topology.EVENTS.name, topology.event_key(kind_of(obj), type_), body)
