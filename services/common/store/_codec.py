"""How RedisStore writes the leader leases, the fence, the preemptions and the waiting
pods for its scripts, and reads them and the assume script's answers back (the rest of
its encoding sits in redis.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import msgspec

from services.common.store._charges import devices_taken
from services.common.store.base import (
    AssumeResult,
    AssumeStatus,
    Preemption,
    WaitingRecord,
    WaitState,
)
from services.common.store.leases import Fence, FencedError, LeaderLease

_FORBIDDEN = frozenset("|,=")

_STATUSES: dict[bytes, AssumeStatus] = {
    b"assumed": "assumed",
    b"conflict": "conflict",
    b"stale": "stale",
}


def assume_result(
    status: bytes,
    reason: bytes,
    usage: Sequence[bytes],
    versions: Sequence[bytes],
    keys: Sequence[bytes],
    held: Sequence[bytes],
) -> AssumeResult:
    """One reservation's answer from the assume script (a refusal for devices comes
    without its reason, worded here as the in-memory store does)."""
    devices = tuple(d.decode() for d in held)
    return AssumeResult(
        _STATUSES[status],
        _pairs(usage),
        devices_taken(devices) if devices else reason.decode(),
        _pairs(versions),
        tuple(k.decode() for k in keys),
        devices,
    )


def _pairs(flat: Sequence[bytes]) -> dict[str, int]:
    return {flat[i].decode(): int(flat[i + 1]) for i in range(0, len(flat), 2)}


def guard_arg(expected: str, fence: Fence | None) -> str:
    """ARGV[2] of a guarded or fenced script: ``expected|role|token`` (see _lua)."""
    if fence is None:
        return f"{expected}||"
    if _FORBIDDEN.intersection(fence.role):
        raise ValueError(f"role {fence.role!r} contains one of '|', ',', '='")
    return f"{expected}|{fence.role}|{fence.token}"


def fenced_error(text: str) -> FencedError:
    """The FencedError of a script's ``KSCHED_FENCED role token current`` error."""
    role, token, current = text.split()[1:4]
    return FencedError(role, int(token), int(current))


def leader_of(name: str, fields: Sequence[bytes | None]) -> LeaderLease:
    """A leader lease from its hash's fields (holder, token, duration, acquired,
    renewed, transitions, host, pid)."""
    holder, token, duration, acquired, renewed, transitions, host, pid = (
        bytes(f or b"").decode() for f in fields
    )
    return LeaderLease(
        name,
        holder,
        int(token),
        float(duration),
        float(acquired),
        float(renewed),
        int(transitions),
        host,
        int(pid or 0),
    )


def preemption_value(preemption: Preemption) -> str:
    """``since|victim,victim,...``"""
    for victim in preemption.victims:
        if _FORBIDDEN.intersection(victim):
            raise ValueError(f"uid {victim!r} contains one of '|', ',', '='")
    return f"{float(preemption.since)!r}|{','.join(preemption.victims)}"


def preemption_of(value: bytes) -> Preemption:
    since, victims = value.decode().split("|", 1)
    return Preemption(tuple(filter(None, victims.split(","))), float(since))


waiting_encoder = msgspec.json.Encoder()
_waiting_decoder = msgspec.json.Decoder(WaitingRecord)
_STATES: dict[str, WaitState] = {"waiting": "waiting", "allowed": "allowed", "rejected": "rejected"}


def waiting_record(row: Sequence[Any]) -> WaitingRecord:
    """A record from a script: the JSON as put, ``state|resolved_at|plugin|message``
    and the pending plugins' deadlines (flat)."""
    rec, status, flat = row
    record = _waiting_decoder.decode(rec)
    state, resolved_at, plugin, message = bytes(status).decode().split("|", 3)
    pending = {flat[i].decode(): float(flat[i + 1]) for i in range(0, len(flat), 2)}
    return replace(
        record,
        state=_STATES[state],
        resolved_at=float(resolved_at),
        plugin=plugin,
        message=message,
        pending=pending,
    )
