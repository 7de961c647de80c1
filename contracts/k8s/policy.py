"""scheduling.k8s.io/v1 PriorityClass and policy/v1 PodDisruptionBudget."""

from __future__ import annotations

from contracts.k8s.base import LabelSelector, ObjectMeta, Wire


class PriorityClass(Wire, kw_only=True, frozen=True, tag_field="kind", tag="PriorityClass"):
    api_version: str = "scheduling.k8s.io/v1"
    metadata: ObjectMeta = ObjectMeta()
    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None
    description: str | None = None


class PodDisruptionBudgetSpec(Wire, kw_only=True, frozen=True):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(Wire, kw_only=True, frozen=True):
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(
    Wire, kw_only=True, frozen=True, tag_field="kind", tag="PodDisruptionBudget"
):
    api_version: str = "policy/v1"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodDisruptionBudgetSpec = PodDisruptionBudgetSpec()
    status: PodDisruptionBudgetStatus = PodDisruptionBudgetStatus()
