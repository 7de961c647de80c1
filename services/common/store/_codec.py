"""How RedisStore writes what its scripts take and reads what they answer: names and
amounts as the scripts' strings, waiting records, assume results and leader leases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import msgspec

from services.common.store._charges import devices_taken
from services.common.store.base import (
    AssumeResult,
    AssumeStatus,
    WaitingRecord,
    WaitState,
)
from services.common.store.leases import LeaderLease

_FORBIDDEN = frozenset("|,=")
_STATUSES: dict[bytes, AssumeStatus] = {
    b"assumed": "assumed",
    b"conflict": "conflict",
    b"stale": "stale",
}


WAITING_ENCODER = msgspec.json.Encoder()
_WAITING_DECODER = msgspec.json.Decoder(WaitingRecord)
_STATES: dict[str, WaitState] = {"waiting": "waiting", "allowed": "allowed", "rejected": "rejected"}


def waiting_of(row: Sequence[Any]) -> WaitingRecord:
    """A record from a script: the JSON as put, ``state|resolved_at|plugin|message``
    and the pending plugins' deadlines (flat)."""
    rec, status, flat = row
    record = _WAITING_DECODER.decode(rec)
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
        int_pairs(usage),
        devices_taken(devices) if devices else reason.decode(),
        int_pairs(versions),
        tuple(k.decode() for k in keys),
        devices,
    )


def leader_of(name: str, fields: Sequence[bytes]) -> LeaderLease:
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


def device(device: str) -> str:
    if not device or "\n" in device:
        raise ValueError(f"device {device!r} is empty or contains a newline")
    return device


def named(name: str) -> str:
    if _FORBIDDEN.intersection(name):
        raise ValueError(f"name {name!r} contains one of '|', ',', '='")
    return name


def domain(name: str) -> str:
    if not name or "\n" in name:
        raise ValueError(f"domain {name!r} is empty or contains a newline")
    return name


def encode_amounts(amounts: Mapping[str, int]) -> str:
    return ",".join(f"{named(name)}={int(amount)}" for name, amount in amounts.items())


def decode_amounts(text: str) -> dict[str, int]:
    pairs = (item.split("=", 1) for item in text.split(",") if item)
    return {name: int(amount) for name, amount in pairs}


def int_pairs(flat: Sequence[bytes]) -> dict[str, int]:
    return {flat[i].decode(): int(flat[i + 1]) for i in range(0, len(flat), 2)}
