"""The pods that started waiting at Permit in a batch of the scheduling cycle: their
reservations claimed (a waiting pod's must not expire), their records written to the
store with the journal of every allow and reject (SharedWaitingPods.flush), and what
that resolved handed on to a binder."""

from __future__ import annotations

import msgspec

from contracts.messages import AttemptResult
from services.common.clock import Clock
from services.common.store import BindClaim, ClusterStore
from services.framework.runtime.waiting_pods import SharedWaitingPods
from services.scheduler.outcome import BatchOutcome, Failure, request_of, resumed

_encoder = msgspec.json.Encoder()


async def flush_waiting(
    waiting_pods: SharedWaitingPods, store: ClusterStore, clock: Clock, outcome: BatchOutcome
) -> None:
    """Claim the reservations of the pods that started waiting (they must not expire
    while they wait), record them in the store with the journal of every allow and
    reject Permit and Unreserve did, and hand on what that resolved."""
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
    resolved = await waiting_pods.flush(added)
    outcome.binds.extend(resumed(resolved))


__all__ = ["flush_waiting"]
