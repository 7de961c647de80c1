"""``ksched leases``: each single-writer role's leader lease (the informer, the queue, the
descheduler), read from the store (services.common.leaderelection holds them).

The table has one row per role: ROLE, HOLDER (its identity; ``-`` once released), HOST,
PID, TOKEN (the fencing token of the holder's term), RENEWED (seconds since the last
renewal) and EXPIRES (seconds until a standby may take over; negative: expired).
``-o json`` prints a JSON list of objects with the keys ``role``, ``holder``, ``host``,
``pid``, ``token``, ``renewed_at`` and ``expires_at`` (RFC 3339; a released lease
expired when it was released).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from services.common.decisions import rfc3339_precise
from services.common.settings import LEADER_ELECTED, Settings, from_env
from services.common.store import LeaderLease, open_settings_store


async def read_leases(settings: Settings) -> list[LeaderLease]:
    store = open_settings_store(settings)
    try:
        leases = await store.leader_leases()
    finally:
        await store.close()
    order = {role: i for i, role in enumerate(LEADER_ELECTED)}
    return sorted(leases.values(), key=lambda lease: (order.get(lease.name, 99), lease.name))


def expires(lease: LeaderLease) -> float:
    """When a standby may take ``lease`` over (clock seconds)."""
    return lease.renewed + lease.duration if lease.holder else lease.renewed


def leases_json(leases: Sequence[LeaderLease]) -> list[dict[str, Any]]:
    return [
        {
            "role": lease.name,
            "holder": lease.holder,
            "host": lease.host,
            "pid": lease.pid,
            "token": lease.token,
            "renewed_at": rfc3339_precise(lease.renewed),
            "expires_at": rfc3339_precise(expires(lease)),
        }
        for lease in leases
    ]


def render_table(leases: Sequence[LeaderLease], now: float, out: TextIO) -> None:
    rows = [("ROLE", "HOLDER", "HOST", "PID", "TOKEN", "RENEWED", "EXPIRES")]
    for lease in leases:
        rows.append(
            (
                lease.name,
                lease.holder or "-",
                lease.host or "-",
                str(lease.pid) if lease.pid else "-",
                str(lease.token),
                f"{now - lease.renewed:.1f}s ago",
                f"in {expires(lease) - now:.1f}s",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() + "\n")


def show(leases: Sequence[LeaderLease], *, now: float, output: str, out: TextIO) -> int:
    if output == "json":
        out.write(json.dumps(leases_json(leases), indent=2) + "\n")
        return 0
    if not leases:
        out.write("no role holds a leader lease (none ran with --leader-elect yet)\n")
        return 0
    render_table(leases, now, out)
    return 0


def leases_command(args: argparse.Namespace) -> int:
    """``ksched leases``: always 0 once the store answered (an unreachable store raises:
    main reports it, exit code 3)."""
    settings = from_env(redis_url=args.redis_url, namespace=args.namespace)
    leases = asyncio.run(read_leases(settings))
    return show(leases, now=time.time(), output=args.output, out=sys.stdout)


__all__ = ["leases_command", "leases_json", "read_leases", "render_table", "show"]
