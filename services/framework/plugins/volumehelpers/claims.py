"""Claims, volumes and classes as the volume plugins read them.

Texts are the API server's and upstream helpers': a missing object is reported as the
lister's NotFound error (``persistentvolumeclaim "data" not found``).

ksched has no PV controller and no API defaulting, so two documented defaults apply
where a real cluster would have filled a field in:

- a StorageClass without ``volumeBindingMode`` binds ``Immediate`` (the API default);
- a PersistentVolume without ``status.phase`` is ``Available`` (what the PV controller
  sets on a new volume).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

from contracts.k8s import PersistentVolume, PersistentVolumeClaim, Pod, Volume
from contracts.quantity import QuantityError, parse_quantity
from services.framework.api.listers import Listers
from services.framework.api.status import Code, Status

ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER: Final = "kubernetes.io/no-provisioner"

IMMEDIATE: Final = "Immediate"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
VOLUME_AVAILABLE: Final = "Available"
VOLUME_BOUND: Final = "Bound"
CLAIM_BOUND: Final = "Bound"
CLAIM_LOST: Final = "Lost"
READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"
FILESYSTEM: Final = "Filesystem"
STORAGE: Final = "storage"


def claim_not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def volume_not_found(name: str) -> str:
    return f'persistentvolume "{name}" not found'


def class_not_found(name: str) -> str:
    return f'storageclass.storage.k8s.io "{name}" not found'


def claim_class(claim: PersistentVolumeClaim) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation first, then the spec."""
    annotations = claim.metadata.annotations
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return claim.spec.storage_class_name or ""


def volume_class(volume: PersistentVolume) -> str:
    """``GetPersistentVolumeClass``."""
    annotations = volume.metadata.annotations
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return volume.spec.storage_class_name or ""


def binding_mode(listers: Listers, class_name: str) -> str | None:
    """The class's ``volumeBindingMode`` (Immediate when unset); None if no such class."""
    storage_class = listers.storage_classes.get(class_name)
    if storage_class is None:
        return None
    return storage_class.volume_binding_mode or IMMEDIATE


def is_delay_binding(listers: Listers, claim: PersistentVolumeClaim) -> bool:
    """``IsDelayBindingMode``: the claim's class exists and waits for the first consumer."""
    name = claim_class(claim)
    return bool(name) and binding_mode(listers, name) == WAIT_FOR_FIRST_CONSUMER


def is_fully_bound(claim: PersistentVolumeClaim) -> bool:
    """``isPVCFullyBound``: the claim names its volume and the binding completed.

    Upstream knows completion by the ``pv.kubernetes.io/bind-completed`` annotation the
    PV controller sets; ksched also takes ``status.phase: Bound`` (set at the same time),
    so a claim published as ``kubectl`` prints it, or written by hand, counts as bound.
    """
    if not claim.spec.volume_name:
        return False
    return ANN_BIND_COMPLETED in claim.metadata.annotations or claim.status.phase == CLAIM_BOUND


def volume_phase(volume: PersistentVolume) -> str:
    return volume.status.phase or VOLUME_AVAILABLE


def quantity(values: dict[str, object], name: str = STORAGE) -> Fraction:
    """``values[name]`` parsed exactly; 0 when absent or invalid."""
    raw = values.get(name)
    if not isinstance(raw, str | int | float):
        return Fraction(0)
    try:
        return parse_quantity(raw)
    except QuantityError:
        return Fraction(0)


def claim_request(claim: PersistentVolumeClaim) -> Fraction:
    return quantity(dict(claim.spec.resources.requests))


def volume_capacity(volume: PersistentVolume) -> Fraction:
    return quantity(dict(volume.spec.capacity))


def ephemeral_claim_name(pod: Pod, volume: Volume) -> str:
    """``ephemeral.VolumeClaimName``."""
    return f"{pod.metadata.name}-{volume.name}"


def pod_claim_name(pod: Pod, volume: Volume) -> tuple[str, bool] | None:
    """The claim a pod volume uses and whether it is a generic ephemeral volume; None
    for volumes without a claim."""
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name, False
    if volume.ephemeral is not None:
        return ephemeral_claim_name(pod, volume), True
    return None


def volume_is_for_pod(pod: Pod, claim: PersistentVolumeClaim) -> str | None:
    """``ephemeral.VolumeIsForPod``: None if ``pod`` controls ``claim``, else the error."""
    pod_ns = pod.metadata.namespace or "default"
    claim_ns = claim.metadata.namespace or "default"
    controlled = any(
        ref.controller and ref.uid == pod.metadata.uid for ref in claim.metadata.owner_references
    )
    if claim_ns != pod_ns or not controlled:
        return (
            f"PVC {claim_ns}/{claim.metadata.name} was not created for pod "
            f"{pod_ns}/{pod.metadata.name} (pod is not owner)"
        )
    return None


class Unresolvable(Exception):
    """A claim, class or volume the pod needs is missing: the pod cannot be placed here
    whatever happens to other pods (``UnschedulableAndUnresolvable``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.status = Status(Code.UnschedulableAndUnresolvable, (reason,))
