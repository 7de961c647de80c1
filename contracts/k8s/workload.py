"""``scheduling.k8s.io`` Workload and PodGroup (KEP-4671, split by KEP-5832), the native
gang API that the GangScheduling plugin reads. Both need the GenericWorkload gate.

A Workload holds up to 8 ``podGroupTemplates``; a controller creates a runtime
``PodGroup`` from a template, and pods join it with ``spec.schedulingGroup.podGroupName``
(in the pod's namespace). A group's ``schedulingPolicy`` is ``basic`` (scheduled as
usual) or ``gang`` (``minCount`` pods all or nothing).

Versions: ``v1beta1`` (1.37, the newest served) is the shape modelled here; ``v1alpha2``
(1.36) decodes into the same structs through its own field names
(``podGroupTemplateRef.workload``, ``topologyConstraints[].topologyKey``), which
:meth:`SchedulingPodGroup.workload_reference` and friends read, as the API server still
converts v1alpha2. ``v1alpha1`` (1.35: pods named their Workload in ``spec.workloadRef``,
since tombstoned) is not accepted.

Python names: scheduler-plugins' ``PodGroup`` (``scheduling.x-k8s.io``, routing kind
``podgroup``) came first, so the native one is :class:`SchedulingPodGroup` with routing
kind ``schedulingpodgroup``; on the wire it is ``kind: PodGroup`` as upstream.
"""

from __future__ import annotations

from typing import Final

from contracts.k8s.base import ObjectMeta, Wire

SCHEDULING_GROUP: Final = "scheduling.k8s.io"
WORKLOAD_API_VERSIONS: Final = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2")
"""Newest first: the versions ksched accepts for Workload and PodGroup."""

POD_GROUP_SCHEDULED: Final = "PodGroupScheduled"
"""v1alpha2's condition type (reasons ``Scheduled``, ``Unschedulable``, ``Preempted``)."""
POD_GROUP_INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"
"""v1beta1's name for the same condition (reasons ``Unschedulable``, ``SchedulerError``)."""


class BasicSchedulingPolicy(Wire, kw_only=True, frozen=True):
    """Empty: its presence selects the usual scheduling."""


class GangSchedulingPolicy(Wire, kw_only=True, frozen=True):
    min_count: int = 0
    """Pods that must be schedulable together before any is admitted (at least 1)."""


class PodGroupSchedulingPolicy(Wire, kw_only=True, frozen=True):
    """Exactly one of ``basic`` and ``gang``."""

    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(Wire, kw_only=True, frozen=True):
    key: str = ""
    """v1beta1's node label key of the domain."""
    topology_key: str = ""
    """v1alpha2's name for ``key``."""


class PodGroupSchedulingConstraints(Wire, kw_only=True, frozen=True):
    topology: list[TopologyConstraint] = []
    topology_constraints: list[TopologyConstraint] = []
    """v1alpha2's name for ``topology``."""


class TypedLocalObjectReference(Wire, kw_only=True, frozen=True):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class PodGroupTemplate(Wire, kw_only=True, frozen=True):
    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy = PodGroupSchedulingPolicy()
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    priority_class_name: str = ""
    priority: int | None = None


class WorkloadSpec(Wire, kw_only=True, frozen=True):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[PodGroupTemplate] = []


class Workload(Wire, kw_only=True, frozen=True, tag_field="kind", tag="Workload"):
    api_version: str = WORKLOAD_API_VERSIONS[0]
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpec = WorkloadSpec()


class WorkloadReference(Wire, kw_only=True, frozen=True):
    """v1beta1's ``spec.workloadRef``."""

    workload_name: str = ""
    template_name: str = ""


class WorkloadPodGroupTemplateReference(Wire, kw_only=True, frozen=True):
    """v1alpha2's ``spec.podGroupTemplateRef.workload``."""

    workload_name: str = ""
    pod_group_template_name: str = ""


class PodGroupTemplateReference(Wire, kw_only=True, frozen=True):
    workload: WorkloadPodGroupTemplateReference | None = None


class SchedulingPodGroupSpec(Wire, kw_only=True, frozen=True):
    workload_ref: WorkloadReference | None = None
    pod_group_template_ref: PodGroupTemplateReference | None = None
    """v1alpha2's reference to the template (see :meth:`workload_reference`)."""
    scheduling_policy: PodGroupSchedulingPolicy = PodGroupSchedulingPolicy()
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    priority_class_name: str = ""
    priority: int | None = None


class Condition(Wire, kw_only=True, frozen=True):
    """``metav1.Condition``."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None


class SchedulingPodGroupStatus(Wire, kw_only=True, frozen=True):
    conditions: list[Condition] = []


class SchedulingPodGroup(Wire, kw_only=True, frozen=True, tag_field="kind", tag="PodGroup"):
    api_version: str = WORKLOAD_API_VERSIONS[0]
    metadata: ObjectMeta = ObjectMeta()
    spec: SchedulingPodGroupSpec = SchedulingPodGroupSpec()
    status: SchedulingPodGroupStatus = SchedulingPodGroupStatus()

    def workload_reference(self) -> WorkloadReference | None:
        """The Workload template the group was made from, in either version's field."""
        if self.spec.workload_ref is not None:
            return self.spec.workload_ref
        ref = self.spec.pod_group_template_ref
        if ref is not None and ref.workload is not None:
            return WorkloadReference(
                workload_name=ref.workload.workload_name,
                template_name=ref.workload.pod_group_template_name,
            )
        return None

    def scheduled_condition_type(self) -> str:
        """``PodGroupScheduled`` for a v1alpha2 group, ``PodGroupInitiallyScheduled``
        for v1beta1: the condition the scheduler writes, in the group's version."""
        if self.api_version.endswith("/v1alpha2"):
            return POD_GROUP_SCHEDULED
        return POD_GROUP_INITIALLY_SCHEDULED


class PodSchedulingGroup(Wire, kw_only=True, frozen=True):
    """A pod's ``spec.schedulingGroup``: the runtime PodGroup it belongs to."""

    pod_group_name: str | None = None
