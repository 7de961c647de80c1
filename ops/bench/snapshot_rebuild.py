"""A cold rebuild of the store from a long event log, with and without snapshots (issue 32).

    .venv/bin/python ops/bench/snapshot_rebuild.py [--rounds 40] [--pods 2000] [--nodes 20]

Builds the issue's log in a file, entry by entry (``--nodes`` nodes, then ``--rounds``
rounds of ``--pods`` pods added, bound and deleted: 240,020 entries by default; the
live state at the end is the nodes), and rebuilds an emptied Redis store from it
(a private namespace, removed afterwards) three ways:

- ``whole log``: no snapshot, as before snapshots existed;
- ``default policy``: the snapshots the informer takes with the default settings
  (every 50,000 entries, 100,000 kept before the newest), so the tail after the last
  snapshot is what a cold start reads;
- ``snapshot at the end``: a snapshot at the last entry, no window.

For each: the time to open the log file (it is scanned), the time of the rebuild, the
entries it restored and the entries the log still holds. The last line is one JSON
object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from services.common.clock import SystemClock
from services.common.eventlog import FileEventLog, read_all
from services.common.settings import InformerSettings
from services.common.store import open_store
from services.informer import rebuild
from services.informer.service import _projected
from services.informer.snapshots import SnapshotPolicy, SnapshotWriter
from services.informer.state import ClusterObjects
from services.informer.validate import object_key
from tests.builders.eventlogs import churn

NEVER = SnapshotPolicy(every=0, interval=0, retention=0)
DEFAULTS = InformerSettings()
DEFAULT = SnapshotPolicy(
    every=DEFAULTS.snapshot_every,
    interval=DEFAULTS.snapshot_interval,
    retention=DEFAULTS.log_retention,
)


async def build(path: Path, args: argparse.Namespace, policy: SnapshotPolicy) -> int:
    """Write the log at ``path``, taking snapshots by ``policy``; its last seq."""
    log = await FileEventLog.open(path)
    view = ClusterObjects()
    writer = SnapshotWriter(log, SystemClock(), policy)
    for batch in churn(args.nodes, args.rounds, args.pods):
        await log.append(batch)
        staged = view.stage()
        for e in batch:
            kind = str(e.__struct_config__.tag)
            staged.reconcile(kind, object_key(kind, e.object.metadata), e.type, e.object)
        view.commit(staged)
        writer.maybe_take(view, log.last_seq())
        await writer.wait()
    last = log.last_seq()
    await log.close()
    return last


async def at_end(path: Path) -> None:
    """A snapshot at the last entry and no window (the view rebuilt from the log)."""
    log = await FileEventLog.open(path)
    writer = SnapshotWriter(log, SystemClock(), SnapshotPolicy(every=1, interval=0, retention=0))
    view = ClusterObjects()
    async for e in log.read():
        kind = str(e.__struct_config__.tag)
        view.reconcile(kind, object_key(kind, e.object.metadata), e.type, e.object)
    writer.maybe_take(view, log.last_seq())
    await writer.wait()
    await log.close()


async def measure(path: Path, redis_url: str) -> dict[str, float | int]:
    began = time.perf_counter()
    log = await FileEventLog.open(path)
    opened = time.perf_counter() - began
    store = open_store(redis_url, namespace=f"bench-snap-{uuid.uuid4().hex[:8]}")
    try:
        began = time.perf_counter()
        rebuilt = await rebuild.ensure_live(store, log, _projected)
        took = time.perf_counter() - began
        assert rebuilt is not None
        held = len(await read_all(log))
        return {
            "open_s": round(opened, 2),
            "rebuild_s": round(took, 2),
            "restored": rebuilt.restored,
            "snapshot_seq": rebuilt.snapshot,
            "log_holds": held,
            "last_seq": log.last_seq(),
        }
    finally:
        await store.flush_namespace()  # type: ignore[attr-defined]
        await store.close()
        await log.close()


async def run(args: argparse.Namespace) -> dict[str, dict[str, float | int]]:
    results: dict[str, dict[str, float | int]] = {}
    directory = Path(tempfile.mkdtemp(prefix="ksched-snap-"))
    try:
        for name, policy in (("whole log", NEVER), ("default policy", DEFAULT)):
            path = directory / name.replace(" ", "-") / "events.jsonl"
            await build(path, args, policy)
            results[name] = await measure(path, args.redis_url)
            print(name, results[name], flush=True)
        path = directory / "whole-log" / "events.jsonl"
        await at_end(path)
        results["snapshot at the end"] = await measure(path, args.redis_url)
        print("snapshot at the end", results["snapshot at the end"], flush=True)
    finally:
        shutil.rmtree(directory)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
