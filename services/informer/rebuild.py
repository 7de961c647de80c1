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

A failover that kept the marker (Redis replicates asynchronously: the promoted replica
may miss the last acknowledged writes) is found by :func:`find_failover`, from what the
informer knows of the store it made live (:class:`Known`): a store whose applied seq is
behind the last seq the informer applied is caught up from the log; a store whose
identity changed (another Redis: a failover, a restart) may have lost any client's
writes, so it is invalidated and made live again under a new token like a lost one
(only the log's tail is restored: the projection it kept stays).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from contracts.events import LogEntry
from services.common.eventlog import EventLog
from services.common.store import ClusterStore, Epoch, ProjectedEntry

CHUNK = 512
"""Log entries per restore call (one atomic script call on Redis)."""


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """What a rebuild found and did."""

    found: Epoch
    """The store when the loss was found (blank, or building at some seq)."""
    restored: int
    """Log entries restored."""
    epoch: Epoch
    """The store once live again."""


async def ensure_live(
    store: ClusterStore, log: EventLog, project: Callable[[LogEntry], ProjectedEntry]
) -> Rebuilt | None:
    """Make ``store`` live and attach to it: rebuild it from ``log`` if it lost its
    projection (the Rebuilt), make a fresh store of an empty log live, or attach to a
    live one (None for both). Raises StoreLost if the store is lost again meanwhile:
    call again (the rebuild continues from what was restored)."""
    found = await store.epoch()
    if found.state == "live":
        await store.attach()
        return None
    if found.state == "blank" and log.last_seq() == 0:
        await store.restore([], final=True)  # a fresh cluster: nothing was lost
        return None
    restored = 0
    chunk: list[ProjectedEntry] = []
    async for event in log.read(after=found.seq):
        if len(chunk) == CHUNK:
            await store.restore(chunk, final=False)
            restored += len(chunk)
            chunk = []
        chunk.append(project(event))
    await store.restore(chunk, final=True)
    return Rebuilt(found, restored + len(chunk), await store.epoch())


@dataclass(frozen=True, slots=True)
class Known:
    """What the informer knows of the store it made live."""

    token: str
    seq: int
    """The last seq it applied."""
    identity: str
    """The store's :meth:`~services.common.store.ClusterStore.identity` then."""


async def find_failover(store: ClusterStore, known: Known | None, identity: str) -> str | None:
    """The WARNING line for a failover that lost writes under the marker ``known``
    expects (``identity``: the store's now), after invalidating the store when its
    identity changed; None when there is nothing of the kind (a store that lost its
    marker is :func:`ensure_live`'s)."""
    if known is None:
        return None
    found = await store.epoch()
    if (found.state, found.token) != ("live", known.token):
        return None
    if identity != known.identity and await store.invalidate(known.token):
        return (
            f"the store's Redis changed identity ({known.identity} -> {identity}: a "
            f"failover or a restart) at seq {found.seq}, this informer applied seq "
            f"{known.seq}: acknowledged writes of any service may be lost, so epoch "
            f"{known.token} ends; the log's tail is restored under a new epoch and "
            "every service reloads what it held"
        )
    if found.seq < known.seq:
        return (
            f"the store is behind the event log: applied seq {found.seq}, this informer "
            f"applied seq {known.seq} (a Redis failover lost acknowledged writes): "
            "catching up from the log"
        )
    return None


def describe(rebuilt: Rebuilt, expected: str | None, counts: Mapping[str, int]) -> str:
    """The one line that reports a rebuild: what was lost and what was rebuilt.
    ``expected``: the token the informer had made live before, if any."""
    found = rebuilt.found
    was = f"expected epoch {expected}" if expected else "the event log is not empty"
    state = "blank" if found.state == "blank" else f"building at seq {found.seq}"
    objects = ", ".join(f"{kind}: {n}" for kind, n in sorted(counts.items()) if n) or "none"
    return (
        f"the store lost the cluster's projection ({was}, found it {state}): rebuilt "
        f"{rebuilt.restored} event log entries up to seq {rebuilt.epoch.seq} as epoch "
        f"{rebuilt.epoch.token} (objects {objects}); reservations, leases and nominations "
        "in flight were lost: the queue and the schedulers reload and retry them"
    )
