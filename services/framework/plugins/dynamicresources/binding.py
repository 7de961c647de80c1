"""What DynamicResources hands from Reserve (scheduler) to PreBind (binder), and the
claim status PreBind publishes.

The binding state is the JSON of :class:`PendingClaims`: every claim of the pod that
is not reserved for it yet, as the scheduling cycle saw it, with the allocation
Reserve chose for it (null: the claim was already allocated, the pod only joins
``reservedFor``)::

    {"claims": [{"claim": {<resource.k8s.io/v1 ResourceClaim>},
                 "allocation": {<AllocationResult>} | null}, ...],
     "extendedResourceClaimStatus": {<v1 PodExtendedResourceClaimStatus>}}

PreBind turns each into the claim's new status (``bindClaim``): the allocation with
its ``allocationTimestamp`` (when the binding-conditions gates are on), the
delete-protection finalizer, and the pod appended to ``status.reservedFor``.
PostFilter's deallocation is :func:`deallocated`.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from contracts.k8s import Pod, PodExtendedResourceClaimStatus
from contracts.k8s.resource import (
    FINALIZER,
    AllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
)
from services.framework.api.types import pod_uid


class PendingClaim(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    claim: ResourceClaim
    allocation: AllocationResult | None = None


class PendingClaims(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    claims: list[PendingClaim] = []
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None
    """Set when the last claim is the pod's extended-resource claim (created at
    PreBind): what the pod's ``status.extendedResourceClaimStatus`` becomes."""
    published: bool = False
    """PreBind already published these claims and waits for their devices' binding
    conditions (the state a pod waiting at PreBind resumes with)."""


encoder = msgspec.json.Encoder()
decoder = msgspec.json.Decoder(PendingClaims)


def with_allocation(claim: ResourceClaim, allocation: AllocationResult) -> ResourceClaim:
    """The claim as Reserve assumes it: allocated, with the finalizer."""
    finalizers = claim.metadata.finalizers
    if FINALIZER not in finalizers:
        finalizers = [*finalizers, FINALIZER]
    meta = msgspec.structs.replace(claim.metadata, finalizers=finalizers)
    status = msgspec.structs.replace(claim.status, allocation=allocation)
    return msgspec.structs.replace(claim, metadata=meta, status=status)


def reserved(pending: PendingClaim, pod: Pod, stamp: Callable[[], str] | None) -> ResourceClaim:
    """``bindClaim``'s update: the allocation (if any), the pod in ``reservedFor``, and
    ``allocationTimestamp`` from ``stamp`` when given and not set yet."""
    claim = pending.claim
    if pending.allocation is not None:
        claim = with_allocation(claim, pending.allocation)
    consumer = ResourceClaimConsumerReference(
        resource="pods", name=pod.metadata.name, uid=pod_uid(pod)
    )
    allocation = claim.status.allocation
    if stamp is not None and allocation is not None and allocation.allocation_timestamp is None:
        allocation = msgspec.structs.replace(allocation, allocation_timestamp=stamp())
    status = msgspec.structs.replace(
        claim.status,
        allocation=allocation,
        reserved_for=[*claim.status.reserved_for, consumer],
    )
    return msgspec.structs.replace(claim, status=status)


def deallocated(claim: ResourceClaim) -> ResourceClaim:
    """PostFilter's status update: no allocation, no ``reservedFor``, no device
    statuses. Only the status changes (upstream writes it with ``UpdateStatus``, which
    leaves metadata alone: the finalizer stays for the resourceclaim controller)."""
    status = msgspec.structs.replace(claim.status, allocation=None, reserved_for=[], devices=[])
    return msgspec.structs.replace(claim, status=status)
