"""ksched's resourceclaim controller: what kube-controller-manager's
``pkg/controller/resourceclaim`` does in a real cluster, done by the informer because
ksched's users have no controller manager. Every object it writes is ksched's doing:
generated claims carry ``ksched.io/generated-claim: "true"``, and every entry it appends
to the log has ``origin="controller"``.

For each change the informer accepts, :func:`react` stages what the controller would
write, after that change and in this order:

- A pod that may still run (not terminal, not deleted before being scheduled) with a
  ``spec.resourceClaims[]`` entry naming a ``resourceClaimTemplateName`` and no entry in
  ``status.resourceClaimStatuses``: if a claim generated for it already exists (owned by
  the pod, annotated with the pod's claim name) it is used, else, when the template
  exists, a ResourceClaim is generated from it (ADDED resourceclaim), named as upstream's
  ``generateName`` makes it; then the pod gets its status entries (one MODIFIED pod for
  all its claims). A missing template is left alone (DynamicResources' PreEnqueue says
  so); when the template arrives, the waiting pods of its namespace get their claims.
- A pod deleted, or done (Succeeded/Failed, or being deleted while unscheduled): every
  claim it names, and the claim the scheduler created for its extended resources
  (named in ``status.extendedResourceClaimStatus``, else found by its annotation and
  owner), loses the pod from ``status.reservedFor`` (MODIFIED resourceclaim); one
  left with no consumer is deallocated (``status.allocation`` cleared and the
  ``resource.kubernetes.io/delete-protection`` finalizer removed) when it has that
  finalizer, as upstream; then a claim with no consumer whose controlling owner is that
  pod is deleted (DELETED resourceclaim: the garbage collector's job for a deleted pod).
- A claim added or changed: reservations of pods that are done or were replaced (same
  name, another uid) are removed as above. A reservation for a pod the informer has not
  seen is kept (it may be published later, as a dump's claims precede its pods).

Replay never regenerates: the generated names are in the log, ``ksched replay`` feeds the
controller's entries back and runs the informer with ``generate_claims=False``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Final

import msgspec

from contracts.k8s import TERMINAL_PHASES, OwnerReference, Pod, ResourceClaim
from contracts.k8s.base import ObjectMeta
from contracts.k8s.pod import PodResourceClaim, PodResourceClaimStatus
from contracts.k8s.resource import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    FINALIZER,
    GENERATED_BY_ANNOTATION,
    POD_CLAIM_NAME_ANNOTATION,
    ResourceClaimTemplate,
)
from services.informer.state import Change, Staged
from services.informer.validate import default_uid, object_key

MAX_BASE_LENGTH: Final = 57
"""The controller's ``maxBaseLen``: room for the generator's 5 random characters (and
a hyphen) in a 63-character name."""
MAX_GENERATED_NAME_LENGTH: Final = 58
"""``names.MaxGeneratedNameLength``: the API server cuts a longer generateName."""
RANDOM_LENGTH: Final = 5
ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"
"""``utilrand.String``'s alphabet (no vowels, no confusable characters)."""


def generate_name(pod_name: str, claim_name: str, rng: random.Random) -> str:
    """The generated claim's name: ``<pod>-<claim>-<5 random>``; a base longer than 57
    characters keeps a share of each part proportional to its length (and, as upstream,
    then has no trailing hyphen), and the API server's generator cuts it at 58."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) > MAX_BASE_LENGTH:
        whole = len(base)
        base = (
            pod_name[: len(pod_name) * MAX_BASE_LENGTH // whole]
            + "-"
            + claim_name[: len(claim_name) * MAX_BASE_LENGTH // whole]
        )
    base = base[:MAX_GENERATED_NAME_LENGTH]
    return base + "".join(rng.choice(ALPHANUMS) for _ in range(RANDOM_LENGTH))


def react(staged: Staged, change: Change, rng: random.Random) -> list[Change]:
    """The changes the controller makes after ``change`` (already staged), staged."""
    obj = change.object
    if isinstance(obj, Pod):
        if change.type == "DELETED" or _pod_done(obj):
            return _release(staged, obj, gone=change.type == "DELETED")
        return _claims_for(staged, obj, rng)
    if isinstance(obj, ResourceClaimTemplate) and change.type != "DELETED":
        found: list[Change] = []
        for pod in list(_pods_of(staged, obj.metadata.namespace)):
            if any(c.resource_claim_template_name == obj.metadata.name for c in _missing(pod)):
                found += _claims_for(staged, pod, rng)
        return found
    if isinstance(obj, ResourceClaim) and change.type != "DELETED":
        return _sync_claim(staged, obj, gone_uid=None)
    return []


# -- generating ---------------------------------------------------------------------------


def _pod_done(pod: Pod) -> bool:
    """``isPodDone``: terminal, or deleted before it was scheduled."""
    return pod.status.phase in TERMINAL_PHASES or (
        pod.metadata.deletion_timestamp is not None and not pod.spec.node_name
    )


def _missing(pod: Pod) -> list[PodResourceClaim]:
    """The pod's template claims with no status entry yet."""
    if pod.metadata.deletion_timestamp is not None or _pod_done(pod):
        return []
    done = {s.name for s in pod.status.resource_claim_statuses}
    return [
        c
        for c in pod.spec.resource_claims
        if c.resource_claim_template_name is not None and c.name not in done
    ]


def _claims_for(staged: Staged, pod: Pod, rng: random.Random) -> list[Change]:
    """Claims generated (or found) for the pod's template claims, then the pod's status."""
    namespace = pod.metadata.namespace or "default"
    found: list[Change] = []
    statuses: list[PodResourceClaimStatus] = []
    for pod_claim in pod.spec.resource_claims:
        name = pod_claim.resource_claim_template_name
        if name is None or pod_claim.name in {s.name for s in pod.status.resource_claim_statuses}:
            continue
        if pod.metadata.deletion_timestamp is not None or _pod_done(pod):
            continue
        claim = _owned_claim(staged, pod, pod_claim.name)
        if claim is None:
            template = staged.get("resourceclaimtemplate", f"{namespace}/{name}")
            if not isinstance(template, ResourceClaimTemplate):
                continue  # the plugin's PreEnqueue reports the missing template
            claim = _generated(staged, pod, pod_claim.name, template, rng)
            change = staged.reconcile(
                "resourceclaim", object_key("resourceclaim", claim.metadata), "ADDED", claim
            )
            if change is not None:
                found.append(change)
        statuses.append(
            PodResourceClaimStatus(name=pod_claim.name, resource_claim_name=claim.metadata.name)
        )
    if statuses:
        status = msgspec.structs.replace(
            pod.status, resource_claim_statuses=[*pod.status.resource_claim_statuses, *statuses]
        )
        updated = msgspec.structs.replace(pod, status=status)
        change = staged.reconcile("pod", object_key("pod", pod.metadata), "MODIFIED", updated)
        if change is not None:
            found.append(change)
    return found


def _owned_claim(staged: Staged, pod: Pod, pod_claim_name: str) -> ResourceClaim | None:
    """``findPodResourceClaim``: a claim the pod controls, annotated with its claim name
    (one generated before the pod's status lost its entry)."""
    for claim in staged.claims_owned_by(pod.metadata.uid):
        if (
            isinstance(claim, ResourceClaim)
            and claim.metadata.namespace == pod.metadata.namespace
            and _controller_uid(claim) == pod.metadata.uid
            and claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION) == pod_claim_name
        ):
            return claim
    return None


def _generated(
    staged: Staged,
    pod: Pod,
    pod_claim_name: str,
    template: ResourceClaimTemplate,
    rng: random.Random,
) -> ResourceClaim:
    namespace = pod.metadata.namespace or "default"
    while True:  # the API server refuses a generated name in use; the client retries
        name = generate_name(pod.metadata.name, pod_claim_name, rng)
        if staged.get("resourceclaim", f"{namespace}/{name}") is None:
            break
    annotations = {
        **template.spec.metadata.annotations,
        POD_CLAIM_NAME_ANNOTATION: pod_claim_name,
        GENERATED_BY_ANNOTATION: "true",
    }
    owner = OwnerReference(
        api_version="v1",
        kind="Pod",
        name=pod.metadata.name,
        uid=pod.metadata.uid,
        controller=True,
        block_owner_deletion=True,
    )
    meta = ObjectMeta(
        name=name,
        generate_name=f"{pod.metadata.name}-{pod_claim_name}-",
        namespace=namespace,
        labels=dict(template.spec.metadata.labels),
        annotations=annotations,
        owner_references=[owner],
    )
    meta = msgspec.structs.replace(meta, uid=default_uid("resourceclaim", meta))
    return ResourceClaim(metadata=meta, spec=template.spec.spec)


def _pods_of(staged: Staged, namespace: str | None) -> Iterator[Pod]:
    for pod in staged.values("pod"):
        if isinstance(pod, Pod) and pod.metadata.namespace == namespace:
            yield pod


# -- releasing ----------------------------------------------------------------------------


def _claim_names(pod: Pod) -> list[str]:
    """``resourceclaim.Name`` for each of the pod's claims that has one."""
    generated = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    names: list[str] = []
    for pod_claim in pod.spec.resource_claims:
        name = pod_claim.resource_claim_name or generated.get(pod_claim.name)
        if name:
            names.append(name)
    return names


def _extended_claim_names(staged: Staged, pod: Pod) -> list[str]:
    """The pod's extended-resource claim (DRAExtendedResource), which the scheduler
    created for it: named in ``status.extendedResourceClaimStatus``, or, before that
    status is applied, the annotated claim the pod controls."""
    status = pod.status.extended_resource_claim_status
    if status is not None and status.resource_claim_name:
        return [status.resource_claim_name]
    return sorted(
        claim.metadata.name
        for claim in staged.claims_owned_by(pod.metadata.uid)
        if isinstance(claim, ResourceClaim)
        and claim.metadata.namespace == pod.metadata.namespace
        and claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"
    )


def _release(staged: Staged, pod: Pod, *, gone: bool) -> list[Change]:
    namespace = pod.metadata.namespace or "default"
    found: list[Change] = []
    for name in [*_claim_names(pod), *_extended_claim_names(staged, pod)]:
        claim = staged.get("resourceclaim", f"{namespace}/{name}")
        if isinstance(claim, ResourceClaim):
            found += _sync_claim(staged, claim, gone_uid=pod.metadata.uid if gone else None)
    return found


def _controller_uid(claim: ResourceClaim) -> str | None:
    """``owningPod``: the uid of the pod that controls the claim."""
    for owner in claim.metadata.owner_references:
        if owner.controller and owner.api_version == "v1" and owner.kind == "Pod":
            return owner.uid
    return None


def _pod_named(staged: Staged, namespace: str, name: str) -> Pod | None:
    pod = staged.get("pod", f"{namespace}/{name}")
    return pod if isinstance(pod, Pod) else None


def _sync_claim(staged: Staged, claim: ResourceClaim, *, gone_uid: str | None) -> list[Change]:
    """``syncClaim``: drop the reservations of pods that will not run, deallocate a
    claim left unused, delete a generated claim whose pod is gone or done."""
    namespace = claim.metadata.namespace or "default"
    key = object_key("resourceclaim", claim.metadata)
    reserved = claim.status.reserved_for
    valid = []
    for ref in reserved:
        if ref.api_group or ref.resource != "pods":
            valid.append(ref)  # upstream supports only pods; others are kept
            continue
        pod = _pod_named(staged, namespace, ref.name)
        if ref.uid == gone_uid:
            continue
        if pod is not None and (pod.metadata.uid != ref.uid or _pod_done(pod)):
            continue
        valid.append(ref)
    found: list[Change] = []
    if len(valid) < len(reserved):
        status = msgspec.structs.replace(claim.status, reserved_for=valid)
        meta = claim.metadata
        if not valid and FINALIZER in meta.finalizers:
            status = msgspec.structs.replace(status, allocation=None)
            meta = msgspec.structs.replace(
                meta, finalizers=[f for f in meta.finalizers if f != FINALIZER]
            )
        claim = msgspec.structs.replace(claim, metadata=meta, status=status)
        change = staged.reconcile("resourceclaim", key, "MODIFIED", claim)
        if change is not None:
            found.append(change)
    if valid:
        return found
    owner_uid = _controller_uid(claim)
    if owner_uid is None:
        return found
    owner = next(
        (r.name for r in claim.metadata.owner_references if r.uid == owner_uid),
        "",
    )
    pod = _pod_named(staged, namespace, owner)
    gone = owner_uid == gone_uid or (
        pod is not None and (pod.metadata.uid != owner_uid or _pod_done(pod))
    )
    if gone:
        change = staged.reconcile("resourceclaim", key, "DELETED", claim)
        if change is not None:
            found.append(change)
    return found
