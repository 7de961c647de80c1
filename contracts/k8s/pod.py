"""core/v1 Pod, with every field the scheduler, queue and descheduler read."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.k8s.base import (
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    ObjectMeta,
    Quantity,
    Wire,
)
from contracts.k8s.workload import PodSchedulingGroup

DEFAULT_SCHEDULER_NAME = "default-scheduler"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
"""Pod phases after which a pod holds no resources and is never scheduled again."""


class ContainerResourceClaim(Wire, kw_only=True, frozen=True):
    """core/v1 ``ResourceClaim`` in ``resources.claims``: which of the pod's claims (and,
    optionally, which request of it) the container uses."""

    name: str = ""
    request: str | None = None


class ResourceRequirements(Wire, kw_only=True, frozen=True):
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    claims: list[ContainerResourceClaim] = []


class ContainerPort(Wire, kw_only=True, frozen=True):
    container_port: int = 0
    host_port: int | None = None
    host_ip: str | None = msgspec.field(default=None, name="hostIP")
    protocol: str = "TCP"
    name: str | None = None


class Container(Wire, kw_only=True, frozen=True):
    name: str = ""
    image: str | None = None
    resources: ResourceRequirements = ResourceRequirements()
    ports: list[ContainerPort] = []
    restart_policy: str | None = None
    """``Always`` on an init container makes it a restartable sidecar."""


class PreferredSchedulingTerm(Wire, kw_only=True, frozen=True):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(Wire, kw_only=True, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(Wire, kw_only=True, frozen=True):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(Wire, kw_only=True, frozen=True):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(Wire, kw_only=True, frozen=True):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(Wire, kw_only=True, frozen=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(Wire, kw_only=True, frozen=True):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class TopologySpreadConstraint(Wire, kw_only=True, frozen=True):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class PersistentVolumeClaimVolumeSource(Wire, kw_only=True, frozen=True):
    claim_name: str
    read_only: bool = False


class Volume(Wire, kw_only=True, frozen=True):
    """A pod volume. Sources the scheduler reasons about are typed; others stay opaque."""

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    host_path: dict[str, Any] | None = None
    empty_dir: dict[str, Any] | None = None
    ephemeral: dict[str, Any] | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    azure_disk: dict[str, Any] | None = None
    rbd: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None
    csi: dict[str, Any] | None = None
    config_map: dict[str, Any] | None = None
    secret: dict[str, Any] | None = None
    projected: dict[str, Any] | None = None
    downward_api: dict[str, Any] | None = msgspec.field(default=None, name="downwardAPI")


class PodSchedulingGate(Wire, kw_only=True, frozen=True):
    name: str


class PodResourceClaim(Wire, kw_only=True, frozen=True):
    """One entry of ``spec.resourceClaims``: a claim by name, or a template from which
    one is generated for the pod (exactly one of the two is set)."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodResourceClaimStatus(Wire, kw_only=True, frozen=True):
    """``status.resourceClaimStatuses[]``: the claim generated for a template entry
    (``resourceClaimName`` unset: none was needed)."""

    name: str = ""
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(Wire, kw_only=True, frozen=True):
    """``status.extendedResourceClaimStatus.requestMappings[]``: which request of the
    extended-resource claim serves a container's extended resource."""

    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(Wire, kw_only=True, frozen=True):
    """``status.extendedResourceClaimStatus``: the ResourceClaim the scheduler created
    for the pod's extended resources backed by DRA (DRAExtendedResource), and which of
    its requests serves each container's resource."""

    request_mappings: list[ContainerExtendedResourceRequest] = []
    resource_claim_name: str = ""


class PodSpec(Wire, kw_only=True, frozen=True):
    node_name: str | None = None
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    priority: int | None = None
    priority_class_name: str | None = None
    preemption_policy: str | None = None
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: dict[str, Quantity] = {}
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    volumes: list[Volume] = []
    scheduling_gates: list[PodSchedulingGate] = []
    resource_claims: list[PodResourceClaim] = []
    host_network: bool = False
    restart_policy: str | None = None
    termination_grace_period_seconds: int | None = None
    scheduling_group: PodSchedulingGroup | None = None
    """The native PodGroup the pod belongs to (GenericWorkload; see contracts.k8s.workload)."""


class PodCondition(Wire, kw_only=True, frozen=True):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    last_probe_time: str | None = None


class ContainerStatus(Wire, kw_only=True, frozen=True):
    name: str = ""
    ready: bool = False
    restart_count: int = 0
    image: str | None = None
    state: dict[str, Any] = {}


class PodStatus(Wire, kw_only=True, frozen=True):
    phase: str | None = None
    nominated_node_name: str | None = None
    conditions: list[PodCondition] = []
    container_statuses: list[ContainerStatus] = []
    init_container_statuses: list[ContainerStatus] = []
    qos_class: str | None = None
    start_time: str | None = None
    reason: str | None = None
    message: str | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(Wire, kw_only=True, frozen=True, tag_field="kind", tag="Pod"):
    api_version: str = "v1"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()
