"""DynamicResources' queueing hints: which cluster changes may make a pod it rejected
schedulable (upstream's ``isSchedulableAfter*``). Each errs towards Queue for an
object it does not expect."""

from __future__ import annotations

from contracts.k8s import Pod
from contracts.k8s.resource import ResourceClaim
from services.framework.api.events import QueueingHint
from services.framework.api.listers import Listers
from services.framework.api.types import pod_uid
from services.framework.plugins.dynamicresources.claims import ClaimProblem, claim_uid, pod_claims


def after_claim_change(
    listers: Listers, pod: Pod, old: object | None, new: object | None
) -> QueueingHint:
    """``isSchedulableAfterClaimChange``: skip while any claim of the pod is missing
    (or otherwise unusable), the changed claim as it is now; a deallocated claim frees
    devices for anyone; else only a claim of the pod created, or with a changed
    status, helps."""
    if not isinstance(new, ResourceClaim | None) or not isinstance(old, ResourceClaim | None):
        return QueueingHint.Queue
    try:
        claims = [claim for _, claim in pod_claims(pod, listers, newer=new)]
    except ClaimProblem:
        return QueueingHint.QueueSkip
    if new is None:  # a deletion (not registered: upstream never asks)
        return QueueingHint.QueueSkip
    if old is not None and old.status.allocation is not None and new.status.allocation is None:
        return QueueingHint.Queue
    if all(claim_uid(claim) != claim_uid(new) for claim in claims):
        return QueueingHint.QueueSkip
    if old is None or old.status != new.status:
        return QueueingHint.Queue
    return QueueingHint.QueueSkip


def after_pod_change(
    listers: Listers, pod: Pod, old: object | None, new: object | None
) -> QueueingHint:
    """``isSchedulableAfterPodChange``: the pod itself got its generated claims'
    names, and every claim it names now exists and is usable."""
    if not isinstance(new, Pod):
        return QueueingHint.Queue
    if pod_uid(new) != pod_uid(pod):
        return QueueingHint.QueueSkip
    try:
        for _ in pod_claims(new, listers):
            pass
    except ClaimProblem:
        return QueueingHint.QueueSkip
    return QueueingHint.Queue
