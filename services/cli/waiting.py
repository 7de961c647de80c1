"""``ksched waiting``: the pods waiting at Permit, read from the store every binder and
scheduler replica shares (never from a process).

The table has one row per pod: POD, NODE, PENDING (each plugin that has not allowed it
yet, with the time its wait has left, in seconds; negative once due: the next binder
timer rejects it), and STATE (``waiting``; ``allowed`` or ``rejected`` for a pod that was
just resolved and is being handed to a binder). ``-o json`` prints a JSON list with the
same fields (``pendingPlugins``: name, deadline in RFC 3339, ``secondsLeft``). A pod
whose PreBind waits (DynamicResources, for its devices' binding conditions) is listed
too, its plugin marked ``@PreBind`` in the table (``"at": "PreBind"`` in JSON, else
``"Permit"``), with the plugin's own deadline.
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
from services.common.settings import Settings, from_env
from services.common.store import WaitingRecord, open_settings_store


async def read_waiting(settings: Settings) -> list[WaitingRecord]:
    store = open_settings_store(settings)
    try:
        records = await store.waiting()
    finally:
        await store.close()
    return sorted(records.values(), key=lambda r: (r.namespace, r.name))


def waiting_json(records: Sequence[WaitingRecord], now: float) -> list[dict[str, Any]]:
    return [
        {
            "pod": f"{r.namespace}/{r.name}",
            "uid": r.uid,
            "node": r.node,
            "attempt": r.attempt,
            "state": r.state,
            "pendingPlugins": [
                {
                    "name": plugin,
                    "deadline": rfc3339_precise(deadline),
                    "secondsLeft": round(deadline - now, 3),
                }
                for plugin, deadline in sorted(_deadlines(r).items())
            ],
            "at": r.point,
        }
        for r in records
    ]


def _deadlines(r: WaitingRecord) -> dict[str, float]:
    """Pending plugin → when its wait runs out: the store's deadline at Permit; at
    PreBind the plugin's (the store's own comes a grace period later)."""
    if r.point == "PreBind":
        return {p: r.since + r.waits.get(p, d - r.since) for p, d in r.pending.items()}
    return dict(r.pending)


def render_table(records: Sequence[WaitingRecord], now: float, out: TextIO) -> None:
    rows = [("POD", "NODE", "PENDING", "STATE")]
    for r in records:
        pending = ", ".join(
            f"{plugin}{'@PreBind' if r.point == 'PreBind' else ''}={deadline - now:.1f}s"
            for plugin, deadline in sorted(_deadlines(r).items())
        )
        rows.append((f"{r.namespace}/{r.name}", r.node, pending or "-", r.state))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        out.write("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])))
        out.write(f"  {row[3]}\n")


def show(records: Sequence[WaitingRecord], *, now: float, output: str, out: TextIO) -> int:
    if output == "json":
        out.write(json.dumps(waiting_json(records, now), indent=2) + "\n")
        return 0
    if not records:
        out.write("no pod is waiting at Permit\n")
        return 0
    render_table(records, now, out)
    return 0


def waiting_command(args: argparse.Namespace) -> int:
    """``ksched waiting``: always 0 once the store answered (an unreachable store raises:
    main reports it, exit code 3)."""
    settings = from_env(redis_url=args.redis_url, namespace=args.namespace)
    records = asyncio.run(read_waiting(settings))
    return show(records, now=time.time(), output=args.output, out=sys.stdout)


__all__ = ["read_waiting", "render_table", "show", "waiting_command", "waiting_json"]
