"""The pods that started waiting at Permit in a batch of the scheduling cycle: their
reservations claimed (a waiting pod's must not expire), their records written to the
store with the journal of every allow and reject (SharedWaitingPods.flush), the room of
the pods that rejected given back."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from contracts.messages import AttemptResult
from services.common.clock import Clock
from services.common.store import BindClaim, ClusterStore
from services.framework.runtime.waiting_pods import Flushed, SharedWaitingPods
from services.scheduler.outcome import BatchOutcome, Failure, request_of

_encoder = msgspec.json.Encoder()


async def flush_waiting(
    waiting_pods: SharedWaitingPods,
    store: ClusterStore,
    clock: Clock,
    outcome: BatchOutcome,
    forget_local: Callable[[str], None],
) -> Flushed:
    """Claim the reservations of the pods that started waiting (they must not expire
    while they wait), record them in the store with the journal of every allow and
    reject Permit, PostFilter and Unreserve did; the room of a pod rejected here goes
    back at once (the store's reservation and ``forget_local``, the replica's
    assumption). Returns what the flush did: the caller hands on what it resolved
    (``resumed``) and schedules again the pods whose PostFilter rejections the store
    refused."""
    waiting = {b.uid: b for b in outcome.binds if b.permit}
    outcome.binds = [b for b in outcome.binds if not b.permit]
    claims = [BindClaim(b.uid, b.node, b.attempt) for b in waiting.values()]
    granted = await store.begin_bind(claims, clock.now()) if claims else []
    lost = [c.uid for c, ok in zip(claims, granted, strict=True) if not ok]
    if lost:
        waiting_pods.discard(lost)
        for uid in lost:
            request = waiting.pop(uid)
            outcome.waiting = [w for w in outcome.waiting if w.uid != uid]
            outcome.waiting_results = [r for r in outcome.waiting_results if r.uid != uid]
            reason = "the reservation expired or was taken over before Permit"
            result = AttemptResult(
                uid=uid,
                namespace=request.namespace or "default",
                name=request.name,
                attempt=request.attempt,
                outcome="error",
                node=request.node,
                message=reason,
            )
            outcome.failures.append(Failure(request_of(request), result, False))
    added = {uid: (b.attempt, b.profile, _encoder.encode(b)) for uid, b in waiting.items()}
    flushed = await waiting_pods.flush(added)
    resolved = flushed.resolved
    rejected = [r for r in resolved if r.state == "rejected"]
    if rejected:
        # Upstream's binding cycle forgets a rejected waiting pod at once. Its Unreserve
        # runs in a binder later, but its room goes back now, so the pods it was rejected
        # for (the gang's next try, the pods queued behind it) find it in the next batch.
        await store.forget([BindClaim(r.uid, r.node, r.attempt) for r in rejected])
        for record in rejected:
            forget_local(record.uid)
    return flushed


__all__ = ["flush_waiting"]
