"""Pod groups given up on a stale view: what a batch does when the store refuses its
PostFilter rejections.

One scheduler runs its cycles one after another: when Coscheduling's PostFilter rejects
a pod group's waiting members, their room goes back before the next pod is scheduled,
so a second group's member that fails next sees that room and its group completes.
Several replicas schedule at once: two groups' last members can each fail on a view
that still counts the other group's reservations, and each PostFilter would give its
own group up, both together. The store orders these decisions as one scheduler would:

- Each replica keeps the store's *release version* (``ClusterStore.release_version``,
  how many such rejections gave room back) as of its view of the others' reservations
  (``BatchScheduler.releases``, read before them whenever the cache is brought up to the
  store, and raised by its own releases).
- A failed attempt's PostFilter rejections are flushed with that version
  (``SharedWaitingPods.on_view``): ``ClusterStore.release_waiting`` rejects the waiting
  pods and releases their reservations in one atomic step if the version is unchanged.
- If another release came first, nothing is rejected: the attempt's failure is taken
  out of the outcome (:func:`take_refused`), the cache is brought up to the store (which
  no longer holds the other group's reservations) and the pod is scheduled again in
  the same batch, at most ``max_conflict_retries`` times (then :func:`overtaken`).

PostFilter rejections that come with a nomination (DefaultPreemption's waiting victims)
are not subject to this: a nomination is claimed on its own terms (scheduler.nominated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from contracts.messages import attempt_result
from services.scheduler.outcome import BatchOutcome, Failure


def take_refused(outcome: BatchOutcome, uids: Sequence[str]) -> list[Failure]:
    """Take the failures of the pods ``uids`` (and the claim decisions of their
    PostFilter) out of ``outcome``; returns them, their pods to schedule again."""
    if not uids:
        return []
    refused = set(uids)
    taken = [f for f in outcome.failures if f.request.uid in refused]
    outcome.failures = [f for f in outcome.failures if f.request.uid not in refused]
    outcome.claims = [c for c in outcome.claims if c.request.uid not in refused]
    return taken


def overtaken(outcome: BatchOutcome, failures: Sequence[Failure], times: int) -> None:
    """End the attempts of ``failures`` (taken out) with ``error`` instead: their
    PostFilter rejections were refused ``times`` times, another replica's release
    coming first each time (the queue tries them again after a backoff)."""
    reason = f"other pod groups gave their room back first, {times} times"
    for failure in failures:
        result = attempt_result(failure.request, "error", reason)
        outcome.failures.append(replace(failure, result=result))


__all__ = ["overtaken", "take_refused"]
