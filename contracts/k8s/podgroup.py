"""``scheduling.x-k8s.io/v1alpha1`` PodGroup (kubernetes-sigs/scheduler-plugins), the gang
that Coscheduling schedules all or nothing. Pods join a group with the label
``scheduling.x-k8s.io/pod-group: <name>`` in the group's namespace."""

from __future__ import annotations

from typing import Final

from contracts.k8s.base import ObjectMeta, Quantity, Wire

POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"


class PodGroupSpec(Wire, kw_only=True, frozen=True):
    min_member: int = 0
    """Pods of the group that must be placed together (``minMember``)."""
    min_resources: dict[str, Quantity] = {}
    """What the group needs in total before any member is placed (``minResources``)."""
    schedule_timeout_seconds: int | None = None
    """How long members wait at Permit for the rest (Coscheduling's default otherwise)."""


class PodGroupStatus(Wire, kw_only=True, frozen=True):
    phase: str | None = None
    """Pending, PreScheduling, Scheduling, Scheduled, Running, Finished, Failed."""
    occupied_by: str | None = None
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: str | None = None


class PodGroup(Wire, kw_only=True, frozen=True, tag_field="kind", tag="PodGroup"):
    api_version: str = "scheduling.x-k8s.io/v1alpha1"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus = PodGroupStatus()
