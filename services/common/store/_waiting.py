"""The waiting-pod record's transitions, shared by both stores (the Redis one runs the
same rules in Lua: see store.redis)."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from services.common.store.base import WaitingRecord, WaitState

WAITING_REMOVED: Final = "removed"
"""Message of a wait ended because its pod was deleted (upstream's ``RejectWaitingPod``)."""


def resolve(
    record: WaitingRecord, state: WaitState, plugin: str, message: str, now: float
) -> WaitingRecord:
    return replace(record, state=state, plugin=plugin, message=message, resolved_at=now)


def first_due(record: WaitingRecord, now: float) -> str | None:
    """The pending plugin whose deadline passed first (ties: the smaller name), if the
    record still waits and one did."""
    if record.state != "waiting":
        return None
    due = [(deadline, plugin) for plugin, deadline in record.pending.items() if deadline <= now]
    return min(due)[1] if due else None
