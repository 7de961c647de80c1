"""``ksched queue``: the scheduling queue as the queue service last published it.

The queue service writes a :class:`~contracts.queueview.QueueView` to the store (at most
once a second); this reads it from there, so it never talks to the queue process. It
shows the pods per sub-queue (activeQ, backoffQ, unschedulablePods, gated, in flight)
and the first ``--limit`` pods of each, in the order they would leave it, with their
priority, attempts, when their backoff expires (seconds from now), how long they have
been in that sub-queue and the plugins that rejected their last attempt (gated pods:
the PreEnqueue plugin that holds them back, their scheduling gates and the plugin's
message, which their ``NotReadyForScheduling`` condition says 5 s on: KEP-5501).

``--output json`` prints one JSON object: the view's fields (camelCase, as on the wire)
plus ``ageSeconds`` and, per pod, ``backoffSeconds`` (None when not backing off,
negative once expired) and ``waitingSeconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, TextIO

import msgspec

from contracts.queueview import QueuedPod, QueueView
from services.common.redact import redact
from services.common.settings import Settings, from_env
from services.common.store import open_settings_store

SUB_QUEUES = ("active", "backoff", "unschedulable", "gated", "inflight")
"""The sub-queues in the order they are shown; any others the view names follow."""
NONE = "-"

_decoder = msgspec.json.Decoder(QueueView)


def decode_view(raw: bytes) -> QueueView:
    """The stored view; raises msgspec.DecodeError if it is not a QueueView."""
    return _decoder.decode(raw)


def sub_queues(view: QueueView) -> list[str]:
    """Every sub-queue the view counts or lists, the known ones first."""
    extra = sorted((set(view.counts) | set(view.heads)) - set(SUB_QUEUES))
    return [*SUB_QUEUES, *extra]


def pod_json(pod: QueuedPod, now: float) -> dict[str, Any]:
    backoff = None if pod.backoff_until is None else round(pod.backoff_until - now, 3)
    return {
        "pod": pod.pod,
        "uid": pod.uid,
        "priority": pod.priority,
        "attempts": pod.attempts,
        "backoffSeconds": backoff,
        "waitingSeconds": round(now - pod.since, 3),
        "plugins": list(pod.plugins),
        "gates": list(pod.gates),
        "message": pod.message,
    }


def view_json(view: QueueView, now: float, limit: int) -> dict[str, Any]:
    """The view as ``--output json`` prints it, with the first ``limit`` pods of each."""
    names = sub_queues(view)
    return {
        "at": view.at,
        "ageSeconds": round(now - view.at, 3),
        "appliedSeq": view.applied_seq,
        "counts": {name: view.counts.get(name, 0) for name in names},
        "heads": {
            name: [pod_json(p, now) for p in view.heads.get(name, [])[:limit]] for name in names
        },
    }


def render_table(view: QueueView, now: float, limit: int, out: TextIO) -> None:
    """The view as ``--output table`` prints it: the counts, then a table per sub-queue."""
    taken = datetime.fromtimestamp(view.at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out.write(
        f"Queue view of {taken} ({_duration(now - view.at)} ago), "
        f"applied seq {view.applied_seq}\n\n"
    )
    names = sub_queues(view)
    _write(out, [["SUB-QUEUE", "PODS"], *([n, str(view.counts.get(n, 0))] for n in names)])
    if limit <= 0:
        return
    for name in names:
        count = view.counts.get(name, 0)
        heads = view.heads.get(name, [])[:limit]
        if not count and not heads:
            continue
        if not heads:
            out.write(f"\n{name}: {count} pods, none listed in the view\n")
            continue
        out.write(f"\n{name}: first {len(heads)} of {count}\n")
        _write(out, _pod_rows(heads, now, gated=name == "gated"))


def _pod_rows(pods: Iterable[QueuedPod], now: float, *, gated: bool) -> list[list[str]]:
    last = ["PLUGIN", "GATES", "MESSAGE"] if gated else ["REJECTED BY"]
    rows = [["POD", "PRIORITY", "ATTEMPTS", "BACKOFF", "WAITING", *last]]
    for pod in pods:
        said = [", ".join(pod.plugins) or NONE]
        if gated:
            said += [", ".join(pod.gates) or NONE, pod.message or NONE]
        rows.append(
            [
                pod.pod,
                str(pod.priority),
                str(pod.attempts),
                _backoff(pod.backoff_until, now),
                _duration(now - pod.since),
                *said,
            ]
        )
    return rows


def _backoff(until: float | None, now: float) -> str:
    if until is None:
        return NONE
    if until <= now:
        return "expired"
    return f"in {_duration(until - now)}"


def _duration(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def _write(out: TextIO, rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        out.write(line.rstrip() + "\n")


async def read_view(settings: Settings) -> bytes | None:
    """The raw view the queue last published under ``settings``' namespace, or None."""
    store = open_settings_store(settings)
    try:
        return await store.queue_view()
    finally:
        await store.close()


def show(raw: bytes | None, *, now: float, limit: int, output: str, where: str) -> int:
    """Print the view (or why there is none); returns the exit code. ``where`` names the
    store and namespace for the messages."""
    if raw is None:
        print(
            f"ksched queue: no queue view in {where}: the queue service has not published "
            "one. Is it running (ksched run queue, or ksched up) with the same "
            "--redis-url and --namespace?",
            file=sys.stderr,
        )
        return 1
    try:
        view = decode_view(raw)
    except msgspec.DecodeError as err:
        print(f"ksched queue: the view in {where} is not a QueueView: {err}", file=sys.stderr)
        return 1
    if output == "json":
        print(json.dumps(view_json(view, now, limit)))
    else:
        render_table(view, now, limit, sys.stdout)
    return 0


def queue_command(args: argparse.Namespace) -> int:
    """``ksched queue``: 0 when a view was shown, 1 when there is none to show. A store
    that cannot be reached raises (main reports it, exit code 3)."""
    settings = from_env(redis_url=args.redis_url, namespace=args.namespace)
    where = f"{redact(settings.redis_url)} (namespace {settings.store_namespace!r})"
    raw = asyncio.run(read_view(settings))
    return show(raw, now=time.time(), limit=args.limit, output=args.output, where=where)


__all__ = [
    "SUB_QUEUES",
    "decode_view",
    "queue_command",
    "read_view",
    "render_table",
    "show",
    "view_json",
]
