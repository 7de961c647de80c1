"""Rebuilding a lost store from the event log: the log is the truth.

A store that is not live (see the marker's state machine in
:mod:`services.common.store.base`) while the log has entries lost its projection: a
FLUSHDB, a Redis restarted without persistence, a failover to an empty replica, or an
informer that died mid-rebuild. :func:`ensure_live` restores it from the log, in chunks
of :data:`CHUNK` entries (memory stays bounded whatever the log's length), continuing a
rebuild that was interrupted (a Building store holds a prefix of the log). Until the last
chunk the store is Building, so no service decides on a half-rebuilt store; the last one
makes it Live under a new token, which tells every other client that what it held
(reservations, leases, nominations) is gone.

A log with a snapshot is rebuilt from its newest snapshot (one entry per live object)
and the entries after it, never from the entries the snapshot covers: the cost follows
the cluster's state plus the tail, not its history (see
:mod:`services.common.eventlog.snapshot`). A Building store continues from where it
stopped: inside the snapshot's entries, or in the tail.

A failover that kept the marker (Redis replicates asynchronously: the promoted replica
may miss the last acknowledged writes) is found by :func:`find_failover`, from what the
informer knows of the store it made live (:class:`Known`): a store whose applied seq is
behind the last seq the informer applied is caught up from the log; a store whose
identity changed (another Redis: a failover, a restart) may have lost any client's
writes, so it is invalidated and made live again under a new token like a lost one
(only the log's tail is restored, from the log itself, never from a snapshot: the
projection it kept stays).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from contracts.events import LogEntry
from services.common.eventlog import EventLog, LogMismatchError
from services.common.eventlog.snapshot import Snapshot, newest, read_tail, where
from services.common.store import ClusterStore, Epoch, ProjectedEntry

CHUNK = 512
"""Log entries per restore call (one atomic script call on Redis)."""


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """What a rebuild found and did."""

    found: Epoch
    """The store when the loss was found (blank, or building at some seq)."""
    restored: int
    """Entries restored: the snapshot's (one per live object) and the log's after it."""
    epoch: Epoch
    """The store once live again."""
    snapshot: int = 0
    """The seq of the snapshot it started from (0: from the log's first entry)."""


async def ensure_live(
    store: ClusterStore,
    log: EventLog,
    project: Callable[[LogEntry], ProjectedEntry],
    *,
    tail_only: bool = False,
) -> Rebuilt | None:
    """Make ``store`` live and attach to it: rebuild it from ``log`` if it lost its
    projection (the Rebuilt), make a fresh store of an empty log live, or attach to a
    live one (None for both). Raises StoreLost if the store is lost again meanwhile:
    call again (the rebuild continues from what was restored). ``tail_only``: the store
    was invalidated (:func:`find_failover`) and holds the log up to its seq, so the
    log's own entries after it are restored, never a snapshot's."""
    found = await store.epoch()
    if found.state == "live":
        await store.attach()
        return None
    if found.state == "blank" and log.last_seq() == 0:
        await store.restore([], final=True)  # a fresh cluster: nothing was lost
        return None
    name = log_name(log)
    snapshot = await newest(log)
    restored = 0
    chunk: list[ProjectedEntry] = []
    base: int | None = None
    after = found.seq
    if snapshot is not None and found.seq < snapshot.seq and not tail_only:
        first = snapshot.seq - len(snapshot.entries)  # the seq its entries continue
        if found.state == "blank" and found.seq == 0:
            base = after = first
        elif found.seq < first:
            raise LogMismatchError(
                f"the store is building at seq {found.seq}, before {where(log, snapshot.seq)} "
                f"begins (seq {first + 1}): empty the store to rebuild it from the snapshot"
            )
        for entry in snapshot.entries[after - first :]:
            if len(chunk) == CHUNK:
                await store.restore(chunk, final=False, base=base)
                restored, chunk, base = restored + len(chunk), [], None
            chunk.append(project(entry))
        after = snapshot.seq
    async for event in read_tail(log, after, name):
        if len(chunk) == CHUNK:
            await store.restore(chunk, final=False, base=base)
            restored, chunk, base = restored + len(chunk), [], None
        chunk.append(project(event))
    await store.restore(chunk, final=True, base=base)
    return Rebuilt(found, restored + len(chunk), await store.epoch(), snapshot_seq(snapshot))


def log_name(log: EventLog) -> str:
    """The log in messages: ``event log PATH`` for a file, else ``the event log``."""
    path = getattr(log, "path", None)  # a file's; None in memory
    return f"event log {path}" if path else "the event log"


def snapshot_seq(snapshot: Snapshot | None) -> int:
    return snapshot.seq if snapshot is not None else 0


@dataclass(frozen=True, slots=True)
class Known:
    """What the informer knows of the store it made live."""

    token: str
    seq: int
    """The last seq it applied."""
    identity: str
    """The store's :meth:`~services.common.store.ClusterStore.identity` then."""


@dataclass(frozen=True, slots=True)
class Failover:
    """What :func:`find_failover` found."""

    line: str
    """The WARNING that says it."""
    invalidated: bool
    """The store was made Building (rebuild it with ``ensure_live(tail_only=True)``)."""


async def find_failover(store: ClusterStore, known: Known | None, identity: str) -> Failover | None:
    """A failover that lost writes under the marker ``known`` expects (``identity``:
    the store's now), after invalidating the store when its identity changed; None when
    there is nothing of the kind (a store that lost its marker is :func:`ensure_live`'s)."""
    if known is None:
        return None
    found = await store.epoch()
    if (found.state, found.token) != ("live", known.token):
        return None
    if identity != known.identity and await store.invalidate(known.token):
        return Failover(
            f"the store's Redis changed identity ({known.identity} -> {identity}: a "
            f"failover or a restart) at seq {found.seq}, this informer applied seq "
            f"{known.seq}: acknowledged writes of any service may be lost, so epoch "
            f"{known.token} ends; the log's tail is restored under a new epoch and "
            "every service reloads what it held",
            invalidated=True,
        )
    if found.seq < known.seq:
        return Failover(
            f"the store is behind the event log: applied seq {found.seq}, this informer "
            f"applied seq {known.seq} (a Redis failover lost acknowledged writes): "
            "catching up from the log",
            invalidated=False,
        )
    return None


def describe(rebuilt: Rebuilt, expected: str | None, counts: Mapping[str, int]) -> str:
    """The one line that reports a rebuild: what was lost and what was rebuilt.
    ``expected``: the token the informer had made live before, if any."""
    found = rebuilt.found
    was = f"expected epoch {expected}" if expected else "the event log is not empty"
    state = "blank" if found.state == "blank" else f"building at seq {found.seq}"
    objects = ", ".join(f"{kind}: {n}" for kind, n in sorted(counts.items()) if n) or "none"
    start = f" from the snapshot at seq {rebuilt.snapshot}" if rebuilt.snapshot else ""
    return (
        f"the store lost the cluster's projection ({was}, found it {state}): rebuilt "
        f"{rebuilt.restored} event log entries{start} up to seq {rebuilt.epoch.seq} as epoch "
        f"{rebuilt.epoch.token} (objects {objects}); reservations, leases and nominations "
        "in flight were lost: the queue and the schedulers reload and retry them"
    )
