"""PreBind's objects: what VolumeBinding writes before the pod is bound.

Upstream's PreBind updates the chosen volumes (``spec.claimRef``) and claims (the
selected-node annotation) through the API and waits for the PV controller to finish.
ksched has no PV controller: the scheduler finishes the objects at Reserve
(:class:`ClaimBinding`), they travel to the binder in the BindRequest as the plugin's
binding state, and the plugin's PreBind (in the binder) leaves them as watch-event
effects, which the binder publishes together with the Binding. A statically bound
claim ends up as the PV controller leaves it (``bindVolumeToClaim`` /
``bindClaimToVolume``); a claim to provision keeps the selected-node annotation for a
provisioner.
"""

from __future__ import annotations

import msgspec

from contracts.k8s import ObjectReference, PersistentVolume, PersistentVolumeClaim, Wire
from services.framework.plugins.volumebinding.matching import is_volume_bound_to_claim
from services.framework.plugins.volumehelpers.claims import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    CLAIM_BOUND,
    VOLUME_BOUND,
)

replace = msgspec.structs.replace


class ClaimBinding(Wire, kw_only=True, frozen=True):
    """VolumeBinding's decision for one of the pod's claims, applied (PreBind) before the
    pod is bound: ``volume`` (if any) and then ``claim`` go out as MODIFIED watch events
    on ``ksched.events``, in the same confirmed publish as the Binding, so the informer
    records them.

    - Static binding (``volume`` set): the PV with ``spec.claimRef`` to the claim and
      ``status.phase: Bound``; the claim with ``spec.volumeName``, the
      ``pv.kubernetes.io/bind-completed`` annotation and ``status.phase: Bound``.
    - Dynamic provisioning (``volume`` None): the claim with the
      ``volume.kubernetes.io/selected-node`` annotation naming the pod's node.
    """

    claim: PersistentVolumeClaim
    volume: PersistentVolume | None = None

    @property
    def provision(self) -> bool:
        """True when the claim is to be dynamically provisioned on the selected node."""
        return self.volume is None


def with_annotation(obj: PersistentVolumeClaim, key: str, value: str) -> PersistentVolumeClaim:
    meta = obj.metadata
    return replace(obj, metadata=replace(meta, annotations={**meta.annotations, key: value}))


def bind_volume_to_claim(
    volume: PersistentVolume, claim: PersistentVolumeClaim
) -> tuple[PersistentVolume, bool]:
    """``GetBindVolumeToClaim``: the volume with ``claimRef`` to ``claim`` and, unless it
    was pre-bound to it, the bound-by-controller annotation; and whether it changed."""
    set_bound_by_controller = not is_volume_bound_to_claim(volume, claim)
    ref, meta = volume.spec.claim_ref, claim.metadata
    dirty = False
    if (
        ref is None
        or ref.name != meta.name
        or (ref.namespace or "default") != (meta.namespace or "default")
        or (ref.uid or "") != meta.uid
    ):
        claim_ref = ObjectReference(
            api_version="v1",
            kind="PersistentVolumeClaim",
            namespace=meta.namespace or "default",
            name=meta.name,
            uid=meta.uid or None,
            resource_version=meta.resource_version,
        )
        volume = replace(volume, spec=replace(volume.spec, claim_ref=claim_ref))
        dirty = True
    annotations = volume.metadata.annotations
    if set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in annotations:
        new_annotations = {**annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
        volume = replace(volume, metadata=replace(volume.metadata, annotations=new_annotations))
        dirty = True
    return volume, dirty


def bound_volume(volume: PersistentVolume) -> PersistentVolume:
    """The volume as the PV controller leaves it once bound: phase Bound."""
    return replace(volume, status=replace(volume.status, phase=VOLUME_BOUND))


def bound_claim(claim: PersistentVolumeClaim, volume: PersistentVolume) -> PersistentVolumeClaim:
    """``bindClaimToVolume`` + ``updateClaimStatus``: the claim names the volume, is
    marked bound (by the controller, unless the user pre-bound it) and takes the
    volume's capacity and access modes."""
    annotations = {**claim.metadata.annotations, ANN_BIND_COMPLETED: "yes"}
    if not claim.spec.volume_name:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    status = replace(
        claim.status,
        phase=CLAIM_BOUND,
        capacity=dict(volume.spec.capacity),
        access_modes=list(volume.spec.access_modes),
    )
    return replace(
        claim,
        metadata=replace(claim.metadata, annotations=annotations),
        spec=replace(claim.spec, volume_name=volume.metadata.name),
        status=status,
    )


def static_binding(claim: PersistentVolumeClaim, volume: PersistentVolume) -> ClaimBinding:
    return ClaimBinding(claim=bound_claim(claim, volume), volume=bound_volume(volume))
