"""core/v1 PersistentVolume and PersistentVolumeClaim, storage.k8s.io/v1 StorageClass."""

from __future__ import annotations

from typing import Any

from contracts.k8s.base import (
    LabelSelector,
    NodeSelector,
    ObjectMeta,
    ObjectReference,
    Quantity,
    Wire,
)


class VolumeNodeAffinity(Wire, kw_only=True, frozen=True):
    required: NodeSelector | None = None


class PersistentVolumeSpec(Wire, kw_only=True, frozen=True):
    capacity: dict[str, Quantity] = {}
    access_modes: list[str] = []
    storage_class_name: str | None = None
    claim_ref: ObjectReference | None = None
    node_affinity: VolumeNodeAffinity | None = None
    persistent_volume_reclaim_policy: str | None = None
    volume_mode: str | None = None
    csi: dict[str, Any] | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    azure_disk: dict[str, Any] | None = None
    local: dict[str, Any] | None = None
    host_path: dict[str, Any] | None = None


class PersistentVolumeStatus(Wire, kw_only=True, frozen=True):
    phase: str | None = None


class PersistentVolume(Wire, kw_only=True, frozen=True, tag_field="kind", tag="PersistentVolume"):
    api_version: str = "v1"
    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeSpec = PersistentVolumeSpec()
    status: PersistentVolumeStatus = PersistentVolumeStatus()


class VolumeResourceRequirements(Wire, kw_only=True, frozen=True):
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}


class PersistentVolumeClaimSpec(Wire, kw_only=True, frozen=True):
    access_modes: list[str] = []
    storage_class_name: str | None = None
    volume_name: str | None = None
    resources: VolumeResourceRequirements = VolumeResourceRequirements()
    volume_mode: str | None = None
    selector: LabelSelector | None = None


class PersistentVolumeClaimStatus(Wire, kw_only=True, frozen=True):
    phase: str | None = None
    capacity: dict[str, Quantity] = {}
    access_modes: list[str] = []


class PersistentVolumeClaim(
    Wire, kw_only=True, frozen=True, tag_field="kind", tag="PersistentVolumeClaim"
):
    api_version: str = "v1"
    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeClaimSpec = PersistentVolumeClaimSpec()
    status: PersistentVolumeClaimStatus = PersistentVolumeClaimStatus()


class TopologySelectorLabelRequirement(Wire, kw_only=True, frozen=True):
    key: str
    values: list[str] = []


class TopologySelectorTerm(Wire, kw_only=True, frozen=True):
    match_label_expressions: list[TopologySelectorLabelRequirement] = []


class StorageClass(Wire, kw_only=True, frozen=True, tag_field="kind", tag="StorageClass"):
    api_version: str = "storage.k8s.io/v1"
    metadata: ObjectMeta = ObjectMeta()
    provisioner: str = ""
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] = []
    parameters: dict[str, str] = {}
    reclaim_policy: str | None = None
