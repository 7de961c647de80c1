"""The embedded mode's part in DRA: what a ``claim.<namespace>`` decision says, as the
``ClaimAllocation`` record ``simulate`` prints before the pod's Binding, and the
claim's MODIFIED watch event that applies it (the API server's part, as the embedded
cluster applies Bindings and deletes preemption victims).

Which pod: the last pod in the claim's ``status.reservedFor`` (DynamicResources'
PreBind appends the pod it binds). Which of the pod's claims (``podClaim``): the
``spec.resourceClaims[]`` entry naming the claim, directly (``resourceClaimName``) or
through the claim generated from its template (``status.resourceClaimStatuses``, else
the generated claim's ``resource.kubernetes.io/pod-claim-name`` annotation), or
``<extended-resources>`` for the claim DynamicResources created for the pod's extended
resources backed by DRA. A ``status.<namespace>`` decision setting a pod's
``extendedResourceClaimStatus`` is applied as the pod's MODIFIED watch event
(:func:`pod_status_applied`).
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from contracts import topology
from contracts.k8s import Pod, ResourceClaim, namespaced_name
from contracts.k8s.resource import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    EXTENDED_RESOURCE_CLAIM_POD_NAME,
    POD_CLAIM_NAME_ANNOTATION,
)
from contracts.podstatus import PodStatusPatch
from services.common.bus import Message

CLAIM_ALLOCATION = "ClaimAllocation"
"""The kind of the record of a claim's allocation."""

_claim_decoder = msgspec.json.Decoder(ResourceClaim)
_pod_decoder = msgspec.json.Decoder(Pod)
_patch_decoder = msgspec.json.Decoder(PodStatusPatch)


def decode_claim(body: bytes) -> ResourceClaim:
    return _claim_decoder.decode(body)


def applied(body: bytes) -> Message:
    """The claim's MODIFIED watch event: what a client publishes to apply the decision."""
    key = topology.event_key("resourceclaim", "MODIFIED")
    return Message(topology.EVENTS.name, key, b'{"type":"MODIFIED","object":' + body + b"}")


def pod_status_applied(pods: Mapping[str, bytes], body: bytes) -> Message | None:
    """The pod's MODIFIED watch event with the ``extendedResourceClaimStatus`` a
    ``status.<namespace>`` decision sets (None: another kind of patch, or the pod is
    gone). The informer keeps the pod's node if the Binding came first."""
    patch = _patch_decoder.decode(body)
    status = patch.extended_resource_claim_status
    pod = pod_of(pods, f"{patch.namespace}/{patch.name}")
    if status is None or pod is None or (patch.uid and pod.metadata.uid != patch.uid):
        return None
    updated = msgspec.structs.replace(
        pod, status=msgspec.structs.replace(pod.status, extended_resource_claim_status=status)
    )
    key = topology.event_key("pod", "MODIFIED")
    event = b'{"type":"MODIFIED","object":' + msgspec.json.encode(updated) + b"}"
    return Message(topology.EVENTS.name, key, event)


def reserved_pod(claim: ResourceClaim) -> str | None:
    """``namespace/name`` of the last pod the claim is reserved for (None: none)."""
    pods = [r for r in claim.status.reserved_for if r.resource == "pods" and not r.api_group]
    if not pods:
        return None
    return f"{claim.metadata.namespace or 'default'}/{pods[-1].name}"


def pod_claim_name(pod: Pod, claim: ResourceClaim) -> str | None:
    """The name under which ``pod`` refers to ``claim`` (``spec.resourceClaims[].name``;
    its extended-resource claim: ``<extended-resources>``, upstream's in-memory name)."""
    name = claim.metadata.name
    if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true":
        status = pod.status.extended_resource_claim_status
        owned = any(
            r.controller and r.uid == pod.metadata.uid for r in claim.metadata.owner_references
        )
        if owned or (status is not None and status.resource_claim_name == name):
            return EXTENDED_RESOURCE_CLAIM_POD_NAME
    generated = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    for entry in pod.spec.resource_claims:
        if entry.resource_claim_name == name or generated.get(entry.name) == name:
            return entry.name
    annotated = claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION)
    if annotated and any(e.name == annotated for e in pod.spec.resource_claims):
        return annotated
    return None


def pod_of(pods: Mapping[str, bytes], key: str | None) -> Pod | None:
    """The pod ``key`` among the store's pods (``namespace/name`` → JSON)."""
    body = pods.get(key or "")
    return _pod_decoder.decode(body) if body is not None else None


def results(claim: ResourceClaim) -> tuple[Mapping[str, str], ...]:
    """The allocation's results as ``{"request", "driver", "pool", "device"}``."""
    allocation = claim.status.allocation
    if allocation is None:
        return ()
    return tuple(
        {"request": r.request, "driver": r.driver, "pool": r.pool, "device": r.device}
        for r in allocation.devices.results
    )


def claim_key(claim: ResourceClaim) -> str:
    return namespaced_name(claim.metadata)
