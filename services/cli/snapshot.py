"""``ksched snapshot [-o FILE] [--event-log LOG]``: what the running services hold, as
a kubectl-style List that ``simulate``, ``capacity``, ``compare`` and ``deschedule``
read unchanged.

What it reads: the store (Redis, at ``--redis-url`` under ``--namespace``), or, with
``--event-log``, the event log (a file or ``stream://NAME``) from its newest snapshot
on. Either way the objects land in the informer's own view of the cluster
(:class:`~services.informer.state.ClusterObjects`): from the store as the informer
loads it at start, from the log by reconciling each entry as the informer did when it
wrote it. The List is built from that view, kinds in the order of the log's snapshots
(:data:`~services.common.eventlog.snapshot.KIND_ORDER`: nodes first, pods last),
objects by key within a kind.

Consistency, never a half-applied batch:

- The store applies each batch of the log in one atomic step and records its seq with
  it. The snapshot reads the marker and the applied seq (``epoch``), every kind, and
  the marker again. When a batch was applied in between (the cluster is busy), it reads
  every kind and the seq again in one atomic step (``ClusterStore.objects_at``: one
  script, which holds Redis for the length of the read, so it is not the first try).
  When the store was rebuilt in between, or is being rebuilt, it reads again, up to
  :data:`ATTEMPTS` times, pausing a little longer each time. A Blank
  store (no informer ever ran, or it was emptied) gives an empty List and a warning.
- A file log is read under its writer's lock, so only whole appends; a stream up to the
  end marker the read publishes, in whole messages. The fold stops at the log's last
  entry, which is the seq of the snapshot.

The List (``kubectl get -o yaml``'s shape, keys sorted as kubectl prints them)::

    apiVersion: v1
    items:
    - apiVersion: v1
      kind: Node
      ...
    kind: List
    metadata:
      annotations:
        ksched.io/seq: "1234"        the log seq the objects are as of
        ksched.io/source: store      or event-log
      resourceVersion: ""

Each item is the object as the informer stored it (the Kubernetes JSON it was published
as, fields ksched does not read left out), with its ``apiVersion`` and ``kind``; a
bound pod has ``spec.nodeName``, a pending one has none (a pod only reserved by a
scheduler is pending). Within a kind the items are sorted by namespace and name: the
store does not keep the order objects arrived in, so ``simulate`` queues pending pods of
equal priority in name order, where the services' queue took them as they arrived. The
file holds everything users published (env, annotations), so it is written owner-only
(0600), whole or not at all (a temporary file renamed); ``-o -`` (or no ``-o``) writes
standard output.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import itertools
import os
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from contracts.k8s import Pod
from contracts.kinds import KINDS, KubeObject
from services.cli.errors import InputError
from services.common.eventlog import EventLog
from services.common.eventlog.snapshot import KIND_ORDER, SnapshotError, read_from_snapshot
from services.common.settings import Settings, from_env
from services.common.store import ClusterStore, StoreLost, open_settings_store
from services.informer.state import ClusterObjects
from services.informer.validate import object_key

SEQ_ANNOTATION = "ksched.io/seq"
"""The List's annotation holding the log seq its objects are as of."""
SOURCE_ANNOTATION = "ksched.io/source"
"""The List's annotation saying what was read: ``store`` or ``event-log``."""
ATTEMPTS = 10
"""Reads of the store before giving up on one at a consistent seq."""
FILE_MODE = 0o600
STDOUT = "-"
FORMAT_WORDS = frozenset({"json", "yaml", "wide", "name", "table"})
"""What ``-o`` means to kubectl and to ksched's other commands (a format): taken as a
file name here, they would write a file no one asked for."""

_decoders = {kind: msgspec.json.Decoder(cls) for kind, cls in KINDS.items()}
_encoder = msgspec.json.Encoder()

Pause = Callable[[int], Awaitable[None]]
"""What happens between two reads of the store: given the attempt (0-based) that failed."""


async def backoff(attempt: int) -> None:
    """50 ms after the first failed read, doubling up to 1 s (about 6 s in all)."""
    await asyncio.sleep(min(0.05 * 2**attempt, 1.0))


@dataclass(frozen=True, slots=True)
class Taken:
    """A snapshot: the live objects as of log seq ``seq``."""

    seq: int
    objects: ClusterObjects
    source: str
    """``store`` or ``event-log``."""


async def from_store(
    store: ClusterStore, *, attempts: int = ATTEMPTS, pause: Pause = backoff
) -> Taken:
    """Every object the store holds, all as of one applied seq (see the module
    docstring); TimeoutError when no read out of ``attempts`` was consistent."""
    seen = ""
    for attempt in range(attempts):
        before = await store.epoch()
        if before.state == "blank":
            return Taken(0, ClusterObjects(), "store")
        if before.state == "live":
            try:
                await store.attach()  # a rebuild meanwhile makes the reads raise
                stored = await asyncio.gather(*(store.objects(kind) for kind in KIND_ORDER))
            except StoreLost:
                seen = "it was rebuilt while it was read"
            else:
                after = await store.epoch()
                if after == before:
                    return Taken(before.seq, _view(zip(KIND_ORDER, stored, strict=True)), "store")
                seen = "it was rebuilt while it was read"
                if (after.state, after.token) == ("live", before.token):
                    # Batches keep coming: one atomic read, which holds Redis meanwhile.
                    with contextlib.suppress(StoreLost):  # rebuilt since: read again
                        seq, read = await store.objects_at(KIND_ORDER)
                        return Taken(seq, _view((k, read[k]) for k in KIND_ORDER), "store")
        else:
            seen = f"it is {before.state}: the informer is rebuilding it"
        if attempt + 1 < attempts:
            await pause(attempt)
    raise TimeoutError(
        f"no consistent read of the store in {attempts} attempts (last: {seen}); try "
        "again, or read the event log with --event-log"
    )


def _view(stored: Iterable[tuple[str, dict[str, bytes]]]) -> ClusterObjects:
    """The informer's view of ``(kind, {key: JSON})`` pairs, as it loads the store."""
    objects = ClusterObjects()
    for kind, bodies in stored:
        decoder = _decoders[kind]
        objects.load(kind, ((key, decoder.decode(body)) for key, body in bodies.items()))
    return objects


async def from_log(log: EventLog, name: str) -> Taken:
    """The objects live at the last entry of ``log`` (connected), from its newest
    snapshot on; ``name`` is the log in messages."""
    snapshot, tail = await read_from_snapshot(log, name)
    objects = ClusterObjects()
    seq = snapshot.seq if snapshot is not None else 0
    head = snapshot.entries if snapshot is not None else []
    for entry in itertools.chain(head, tail):
        kind = str(entry.__struct_config__.tag)
        obj: KubeObject = entry.object
        objects.reconcile(kind, object_key(kind, obj.metadata), entry.type, obj)
        seq = entry.seq
    return Taken(seq, objects, "event-log")


def cluster_list(taken: Taken) -> dict[str, Any]:
    """The List of ``taken``'s objects (see the module docstring)."""
    items: list[dict[str, Any]] = []
    for kind in KIND_ORDER:
        for obj in sorted(taken.objects.values(kind), key=lambda o: object_key(kind, o.metadata)):
            body = msgspec.json.decode(_encoder.encode(obj))
            items.append({"apiVersion": obj.api_version, **body})
    annotations = {SEQ_ANNOTATION: str(taken.seq), SOURCE_ANNOTATION: taken.source}
    return {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": annotations, "resourceVersion": ""},
        "items": items,
    }


def render(document: dict[str, Any]) -> str:
    """``document`` as YAML, as ``kubectl get -o yaml`` prints it (keys sorted)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(document, Dumper=dumper, sort_keys=True, allow_unicode=True)


def summary(taken: Taken) -> str:
    """One line: what the snapshot holds."""
    pods = [pod for pod in taken.objects.values("pod") if isinstance(pod, Pod)]
    bound = sum(1 for pod in pods if pod.spec.node_name)
    others = sum(taken.objects.count(kind) for kind in KINDS if kind not in ("node", "pod"))
    what = "the store" if taken.source == "store" else "the event log"
    return (
        f"snapshot of {what} at seq {taken.seq}: {taken.objects.count('node')} nodes, "
        f"{len(pods)} pods ({bound} bound, {len(pods) - bound} pending), {others} other objects"
    )


def check_target(path: Path) -> None:
    """OSError naming ``path`` unless a file can be written there (before reading)."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    parent = path.parent
    if not parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"no directory {parent}", str(path))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, f"directory {parent} is not writable", str(path))


def write(text: str, path: Path) -> None:
    """Write ``text`` to ``path`` owner-only, whole or not at all."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise type(error)(error.errno, error.strerror, str(path)) from error


async def _read_store(settings: Settings) -> Taken:
    store = open_settings_store(settings)
    try:
        return await from_store(store)
    finally:
        await store.close()


async def _read_log(spec: str, settings: Settings) -> Taken:
    from services.cli.eventlogs import open_log

    log = open_log(spec, settings, must_exist=True)
    try:
        await log.connect()
        return await from_log(log, f"event log {spec}")
    finally:
        await log.close()


def snapshot_command(args: argparse.Namespace) -> int:
    """``ksched snapshot``: 0 once written (a Blank store: an empty List, and a
    warning); failures are raised for main's one line (cli.errors)."""
    if args.output_file in FORMAT_WORDS:
        raise InputError(
            f"-o {args.output_file}: snapshot's -o names the file to write (the snapshot "
            "is a YAML List, as kubectl get -o yaml prints it); for a file of that name, "
            f"give -o ./{args.output_file}"
        )
    target = Path(args.output_file) if args.output_file not in (None, STDOUT) else None
    if target is not None:
        check_target(target)
    settings = from_env(amqp_url=args.amqp_url, redis_url=args.redis_url, namespace=args.namespace)
    if args.event_log:
        try:
            taken = asyncio.run(_read_log(args.event_log, settings))
        except SnapshotError as error:  # names the snapshot's file and line
            raise InputError(str(error)) from error
        except ValueError as error:  # a corrupt entry: names the file and line
            raise InputError(
                f"{error} (not a log of the informer or simulate --record?)"
            ) from error
    else:
        taken = asyncio.run(_read_store(settings))
    if taken.seq == 0:
        empty = "the store holds no cluster (no informer has run, or it was emptied)"
        if args.event_log:
            empty = f"event log {args.event_log} is empty"
        print(f"ksched snapshot: warning: {empty}: the List is empty", file=sys.stderr)
    text = render(cluster_list(taken))
    if target is None:
        sys.stdout.write(text)
    else:
        write(text, target)
    print(f"ksched snapshot: {summary(taken)}", file=sys.stderr)
    return 0


__all__ = [
    "ATTEMPTS",
    "SEQ_ANNOTATION",
    "SOURCE_ANNOTATION",
    "Taken",
    "cluster_list",
    "from_log",
    "from_store",
    "render",
    "snapshot_command",
]
