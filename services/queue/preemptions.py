"""The queue's preemptions in flight (:class:`~services.framework.api.preemption.Preempting`)
kept in the store, fenced with the queue's lease, so that a queue restarted or taking
over remembers which preemptors still wait for their victims: such a preemptor is not
retried against its own preemption, nor does it preempt again before its patience has
passed (the preemption keeps the time it started).

The queue changes them as results and cluster events arrive, and writes what changed
with each batch (:func:`flush`); on a (re)load it starts from the store's and drops the
victims that are gone by now (:func:`load`).
"""

from __future__ import annotations

from collections.abc import Iterable

from contracts.k8s import Pod
from services.common.store import ClusterStore, Preemption
from services.framework.api.preemption import Preempting


async def flush(preempting: Preempting, store: ClusterStore) -> None:
    """Write the preemptions that changed since the last flush (kept to retry if the
    store refuses)."""
    changed = preempting.changed()
    if not changed:
        return
    kept = {uid for uid in changed if uid in preempting}
    records = {uid: _record(preempting, uid) for uid in sorted(kept)}
    await store.set_preemptions(records)
    await store.drop_preemptions(sorted(changed - kept))
    preempting.written(changed)


async def write_back(preempting: Preempting, store: ClusterStore) -> None:
    """Write every preemption in flight (after a store loss took them)."""
    await store.set_preemptions({uid: _record(preempting, uid) for uid in preempting})


async def load(preempting: Preempting, store: ClusterStore, pods: Iterable[Pod]) -> None:
    """Start from the store's preemptions, then end those whose preemptor is bound or
    gone and drop the victims that are gone or terminating (and write that back)."""
    stored = await store.preemptions()
    preempting.load({uid: (p.victims, p.since) for uid, p in stored.items()})
    present = {p.metadata.uid: p for p in pods}
    for uid in stored:
        preemptor = present.get(uid)
        if preemptor is None or preemptor.spec.node_name:
            preempting.forget(uid)
    for victim in {v for p in stored.values() for v in p.victims}:
        pod = present.get(victim)
        if pod is None or pod.metadata.deletion_timestamp is not None:
            preempting.gone(victim)
    await flush(preempting, store)


def _record(preempting: Preempting, uid: str) -> Preemption:
    since = preempting.since(uid)
    assert since is not None
    return Preemption(tuple(sorted(preempting.victims(uid))), since)
