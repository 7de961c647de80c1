"""Builders for storage objects, as upstream's volumebinding ``makePV`` / ``makePVC``::

make_storage_class("wait-sc", mode="WaitForFirstConsumer")
make_pvc("data", storage_class="wait-sc", request="50Gi")
make_pv("pv-a", storage_class="wait-sc", capacity="100Gi", hostname="node-a")
make_pod("web", volumes=[claim_volume("data")])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from contracts.k8s import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource,
    PersistentVolumeSpec,
    StorageClass,
    Volume,
    VolumeNodeAffinity,
)
from contracts.k8s.base import ObjectMeta, ObjectReference, OwnerReference, Quantity
from contracts.k8s.storage import (
    PersistentVolumeClaimStatus,
    PersistentVolumeStatus,
    TopologySelectorLabelRequirement,
    TopologySelectorTerm,
    VolumeResourceRequirements,
)

HOSTNAME = "kubernetes.io/hostname"
WAIT = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"


def claim_volume(claim: str, name: str | None = None, *, read_only: bool = False) -> Volume:
    """A pod volume using ``claim``."""
    source = PersistentVolumeClaimVolumeSource(claim_name=claim, read_only=read_only)
    return Volume(name=name or claim, persistent_volume_claim=source)


def inline_volume(kind: str, name: str = "", **fields: Any) -> Volume:
    """An in-tree inline volume: ``inline_volume("gce_persistent_disk", pdName="foo")``."""
    return msgspec.structs.replace(Volume(name=name), **{kind: dict(fields)})


def make_storage_class(
    name: str,
    *,
    mode: str | None = WAIT,
    provisioner: str = "",
    allowed_topologies: Sequence[Mapping[str, Sequence[str]]] = (),
) -> StorageClass:
    """A class; ``allowed_topologies``: one mapping (label → values) per term."""
    terms = [
        TopologySelectorTerm(
            match_label_expressions=[
                TopologySelectorLabelRequirement(key=k, values=list(v)) for k, v in term.items()
            ]
        )
        for term in allowed_topologies
    ]
    return StorageClass(
        metadata=ObjectMeta(name=name),
        provisioner=provisioner,
        volume_binding_mode=mode,
        allowed_topologies=terms,
    )


def make_pvc(
    name: str,
    namespace: str = "default",
    *,
    storage_class: str | None = None,
    request: Quantity | None = None,
    access_modes: Sequence[str] = (),
    volume_name: str | None = None,
    bound: bool = False,
    phase: str | None = None,
    annotations: Mapping[str, str] | None = None,
    owner_uid: str | None = None,
    deletion_timestamp: str | None = None,
    uid: str | None = None,
) -> PersistentVolumeClaim:
    """A claim. ``bound``: bound to ``volume_name`` as the PV controller leaves it (the
    bind-completed annotation). ``owner_uid``: controlled by that pod (ephemeral)."""
    notes = dict(annotations or {})
    if bound:
        notes["pv.kubernetes.io/bind-completed"] = "yes"
    owners = (
        [OwnerReference(api_version="v1", kind="Pod", name="", uid=owner_uid, controller=True)]
        if owner_uid
        else []
    )
    return PersistentVolumeClaim(
        metadata=ObjectMeta(
            name=name,
            namespace=namespace,
            uid=uid if uid is not None else f"{namespace}-{name}-uid",
            resource_version="1",
            annotations=notes,
            owner_references=owners,
            deletion_timestamp=deletion_timestamp,
        ),
        spec=PersistentVolumeClaimSpec(
            access_modes=list(access_modes),
            storage_class_name=storage_class,
            volume_name=volume_name,
            resources=VolumeResourceRequirements(
                requests={"storage": request} if request is not None else {}
            ),
        ),
        status=PersistentVolumeClaimStatus(phase=phase),
    )


def make_pv(
    name: str,
    *,
    storage_class: str = "",
    capacity: Quantity | None = None,
    access_modes: Sequence[str] = (),
    phase: str | None = "Available",
    hostname: str | None = None,
    node_affinity: Mapping[str, Sequence[str]] | None = None,
    claim: tuple[str, str] | tuple[str, str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    csi: tuple[str, str] | None = None,
    volume_mode: str | None = None,
) -> PersistentVolume:
    """A volume. ``hostname`` pins it to one node (a local volume);
    ``node_affinity``: label → values, all in one term; ``claim``: (namespace, name[,
    uid]) it is bound or pre-bound to; ``csi``: (driver, volume handle)."""
    affinity = dict(node_affinity or {})
    if hostname is not None:
        affinity[HOSTNAME] = [hostname]
    selector = (
        VolumeNodeAffinity(
            required=NodeSelector(
                node_selector_terms=[
                    NodeSelectorTerm(
                        match_expressions=[
                            NodeSelectorRequirement(key=k, operator="In", values=list(v))
                            for k, v in affinity.items()
                        ]
                    )
                ]
            )
        )
        if affinity
        else None
    )
    claim_ref = None
    if claim is not None:
        claim_ref = ObjectReference(
            kind="PersistentVolumeClaim",
            namespace=claim[0],
            name=claim[1],
            uid=claim[2] if len(claim) == 3 else None,
        )
    return PersistentVolume(
        metadata=ObjectMeta(name=name, resource_version="1", labels=dict(labels or {})),
        spec=PersistentVolumeSpec(
            capacity={"storage": capacity} if capacity is not None else {},
            access_modes=list(access_modes),
            storage_class_name=storage_class,
            claim_ref=claim_ref,
            node_affinity=selector,
            volume_mode=volume_mode,
            csi={"driver": csi[0], "volumeHandle": csi[1]} if csi else None,
        ),
        status=PersistentVolumeStatus(phase=phase),
    )
