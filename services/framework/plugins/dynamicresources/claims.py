"""A pod's ResourceClaims, found as upstream's ``resourceclaim`` helpers find them.

``spec.resourceClaims[]`` names a claim directly (``resourceClaimName``) or a template
(``resourceClaimTemplateName``); the claim generated from a template is named in the
pod's ``status.resourceClaimStatuses`` (by the resourceclaim controller, or ksched's
informer), must be controlled by the pod, and may be absent on purpose (a status
entry without a name: nothing was needed). Every failure is a
:class:`ClaimProblem` whose text is upstream's: the plugin reports it as
UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

import msgspec

from contracts.k8s import Pod, PodResourceClaim, ResourceClaim, namespaced_name
from services.framework.api.listers import Listers
from services.framework.api.status import Code, Status
from services.framework.api.types import pod_uid

ERR_CLAIM_NOT_FOUND: Final = "ResourceClaim not created yet"
ERR_API_UNSUPPORTED: Final = "none of the supported fields are set"


class ClaimProblem(Exception):
    """Why the pod's claims cannot be used now (upstream's error text)."""


def claim_name(pod: Pod, entry: PodResourceClaim) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim's name (None: intentionally not created) and
    whether :func:`check_for_pod` must be called on it."""
    meta = pod.metadata
    if entry.resource_claim_name is not None:
        return entry.resource_claim_name, False
    if entry.resource_claim_template_name is not None:
        for status in pod.status.resource_claim_statuses:
            if status.name == entry.name:
                return status.resource_claim_name, True
        raise ClaimProblem(f'pod "{meta.namespace}/{meta.name}": {ERR_CLAIM_NOT_FOUND}')
    raise ClaimProblem(
        f'pod "{meta.namespace}/{meta.name}", spec.resourceClaim "{entry.name}": '
        f"{ERR_API_UNSUPPORTED}"
    )


def claim_uid(claim: ResourceClaim) -> str:
    """The claim's UID, or ``namespace/name`` for a claim published without one (as
    :func:`~services.framework.api.types.pod_uid` for pods)."""
    return claim.metadata.uid or namespaced_name(claim.metadata)


def check_for_pod(pod: Pod, claim: ResourceClaim) -> None:
    """``resourceclaim.IsForPod``: a generated claim is controlled by its pod."""
    meta = claim.metadata
    controlled = any(ref.controller and ref.uid == pod_uid(pod) for ref in meta.owner_references)
    if meta.namespace != pod.metadata.namespace or not controlled:
        raise ClaimProblem(
            f"ResourceClaim {meta.namespace}/{meta.name} was not created for pod "
            f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
        )


def is_reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    """``resourceclaim.IsReservedForPod``."""
    return any(ref.uid == pod_uid(pod) for ref in claim.status.reserved_for)


def not_found(namespace: str | None, name: str) -> str:
    """The claim tracker's (assume cache's) error for a claim it does not hold."""
    return f'could not find ResourceClaim "{namespace or ""}/{name}"'


def pod_claims(
    pod: Pod, listers: Listers, newer: ResourceClaim | None = None
) -> Iterator[tuple[str, ResourceClaim]]:
    """``foreachPodResourceClaim``: ``(spec.resourceClaims[].name, claim)`` for every
    claim of the pod that exists (in spec order), checking each as upstream does;
    raises :class:`ClaimProblem` at the first that is missing, being deleted or not
    the pod's. ``newer``: a claim to take instead of the listed one of its name (a
    queueing hint runs before the listers see the change that triggered it)."""
    for entry in pod.spec.resource_claims:
        name, must_check_owner = claim_name(pod, entry)
        if name is None:
            continue
        claim = listers.resource_claim(pod.metadata.namespace, name)
        key = namespaced_name(msgspec.structs.replace(pod.metadata, name=name))
        if newer is not None and namespaced_name(newer.metadata) == key:
            claim = newer
        if claim is None:
            raise ClaimProblem(not_found(pod.metadata.namespace, name))
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimProblem(f'resourceclaim "{claim.metadata.name}" is being deleted')
        if must_check_owner:
            check_for_pod(pod, claim)
        yield entry.name, claim


def check_class(classes: Mapping[str, object], class_name: str, request: str) -> Status | None:
    """``validateDeviceClass``: the request names a class that exists."""
    if not class_name:
        return Status(Code.Error, (f"request {request}: unsupported request type",))
    if class_name not in classes:
        return unschedulable(f"request {request}: device class {class_name} does not exist")
    return None


RESERVED_FOR_MAX_SIZE: Final = 256
"""``ResourceClaimReservedForMaxSize``: the API server refuses a longer ``reservedFor``;
ksched has none, so PreFilter keeps the limit (see :func:`can_be_reserved`)."""


def unschedulable(reason: str) -> Status:
    """``statusUnschedulable``: upstream's DRA rejections are all unresolvable."""
    return Status(Code.UnschedulableAndUnresolvable, (reason,))


def can_be_reserved(claim: ResourceClaim) -> bool:
    """``resourceclaim.CanBeReserved`` plus the API server's ``reservedFor`` limit (256:
    upstream's ``ResourceClaimReservedForMaxSize``)."""
    return len(claim.status.reserved_for) < RESERVED_FOR_MAX_SIZE
