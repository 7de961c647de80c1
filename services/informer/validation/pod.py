"""A Pod's spec as ``ValidatePodSpec`` checks what ksched reads: container names (DNS
labels, unique), integer ranges, label maps, list lengths against the limits table, and
resource quantities."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from contracts.k8s import Affinity, Container, NodeSelector, Pod, PodSpec
from contracts.k8s.names import dns1123_label_errors
from services.common.resources import validate_pod
from services.informer.limits import (
    INT32_MAX,
    MAX_AFFINITY_TERMS,
    MAX_CONTAINERS,
    MAX_TOLERATIONS,
    MAX_TOPOLOGY_SPREAD_CONSTRAINTS,
    MAX_VOLUMES,
)
from services.informer.validation.meta import Problem, label_problems, shown
from services.informer.validation.resourceclaim import pod_claim_problems

_INT64_MAX: Final = 2**63 - 1


def too_many(field: str, items: Sequence[object], limit: int) -> list[Problem]:
    if len(items) > limit:
        return [(field, f"Too many: {len(items)}: must have at most {limit} items")]
    return []


def out_of_range(field: str, value: int | None, low: int, high: int) -> list[Problem]:
    if value is not None and not low <= value <= high:
        return [(field, f"Invalid value: {value}: must be between {low} and {high}, inclusive")]
    return []


PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
"""``ValidatePreemptionPolicy``'s supported values, in its order."""


def preemption_policy_problems(policy: str | None, field: str) -> list[Problem]:
    """``ValidatePreemptionPolicy`` (a Pod's ``spec.preemptionPolicy``, a
    PriorityClass's ``preemptionPolicy``): unset, or one of the supported values."""
    if policy is None or policy in PREEMPTION_POLICIES:
        return []
    if not policy:
        return [(field, "Required value")]
    supported = ", ".join(f'"{p}"' for p in PREEMPTION_POLICIES)
    return [(field, f'Unsupported value: "{policy}": supported values: {supported}')]


def pod_problems(pod: Pod) -> list[Problem]:
    spec = pod.spec
    found = _count_problems(spec)
    found += _container_problems(spec.containers, "spec.containers", set())
    names = {c.name for c in spec.containers}
    found += _container_problems(spec.init_containers, "spec.initContainers", names)
    found += out_of_range("spec.priority", spec.priority, -INT32_MAX - 1, INT32_MAX)
    found += label_problems(spec.node_selector, "spec.nodeSelector")
    for i, t in enumerate(spec.tolerations):
        seconds = t.toleration_seconds
        found += out_of_range(
            f"spec.tolerations[{i}].tolerationSeconds", seconds, -_INT64_MAX - 1, _INT64_MAX
        )
    found += preemption_policy_problems(spec.preemption_policy, "spec.preemptionPolicy")
    for i, c in enumerate(spec.topology_spread_constraints):
        field = f"spec.topologySpreadConstraints[{i}]"
        found += out_of_range(f"{field}.maxSkew", c.max_skew, 1, INT32_MAX)
        found += out_of_range(f"{field}.minDomains", c.min_domains, 1, INT32_MAX)
    found += _affinity_problems(spec.affinity)
    found += pod_claim_problems(pod)
    if found:
        return found[:1]
    return validate_pod(pod)[:1]


def _count_problems(spec: PodSpec) -> list[Problem]:
    return (
        too_many("spec.containers", spec.containers, MAX_CONTAINERS)
        + too_many("spec.initContainers", spec.init_containers, MAX_CONTAINERS)
        + too_many("spec.tolerations", spec.tolerations, MAX_TOLERATIONS)
        + too_many(
            "spec.topologySpreadConstraints",
            spec.topology_spread_constraints,
            MAX_TOPOLOGY_SPREAD_CONSTRAINTS,
        )
        + too_many("spec.volumes", spec.volumes, MAX_VOLUMES)
    )


def _container_problems(
    containers: Sequence[Container], field: str, seen: set[str]
) -> list[Problem]:
    """Names are required DNS labels, unique across app and init containers; ports in range."""
    seen = set(seen)
    for i, c in enumerate(containers):
        where = f"{field}[{i}]"
        if not c.name:
            return [(f"{where}.name", "Required value")]
        for error in dns1123_label_errors(c.name):
            return [(f"{where}.name", f"Invalid value: {shown(c.name)}: {error}")]
        if c.name in seen:
            return [(f"{where}.name", f"Duplicate value: {shown(c.name)}")]
        seen.add(c.name)
        for j, port in enumerate(c.ports):
            at = f"{where}.ports[{j}]"
            found = out_of_range(f"{at}.containerPort", port.container_port, 1, 65535)
            found += out_of_range(f"{at}.hostPort", port.host_port, 0, 65535)
            if found:
                return found
    return []


def _selector_problems(selector: NodeSelector | None, field: str) -> list[Problem]:
    if selector is None:
        return []
    terms = selector.node_selector_terms
    found = too_many(field, terms, MAX_AFFINITY_TERMS)
    for i, term in enumerate(terms):
        at = f"{field}[{i}]"
        found += too_many(f"{at}.matchExpressions", term.match_expressions, MAX_AFFINITY_TERMS)
        found += too_many(f"{at}.matchFields", term.match_fields, MAX_AFFINITY_TERMS)
    return found


def _affinity_problems(affinity: Affinity | None) -> list[Problem]:
    if affinity is None:
        return []
    found: list[Problem] = []
    node = affinity.node_affinity
    if node is not None:
        field = "spec.affinity.nodeAffinity"
        required = node.required_during_scheduling_ignored_during_execution
        found += _selector_problems(
            required, f"{field}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        )
        preferred = node.preferred_during_scheduling_ignored_during_execution
        at = f"{field}.preferredDuringSchedulingIgnoredDuringExecution"
        found += too_many(at, preferred, MAX_AFFINITY_TERMS)
        for i, term in enumerate(preferred):
            found += out_of_range(f"{at}[{i}].weight", term.weight, 1, 100)
    for name, pod_affinity in (
        ("podAffinity", affinity.pod_affinity),
        ("podAntiAffinity", affinity.pod_anti_affinity),
    ):
        if pod_affinity is None:
            continue
        field = f"spec.affinity.{name}"
        terms = pod_affinity.required_during_scheduling_ignored_during_execution
        weighted_terms = pod_affinity.preferred_during_scheduling_ignored_during_execution
        found += too_many(
            f"{field}.requiredDuringSchedulingIgnoredDuringExecution", terms, MAX_AFFINITY_TERMS
        )
        at = f"{field}.preferredDuringSchedulingIgnoredDuringExecution"
        found += too_many(at, weighted_terms, MAX_AFFINITY_TERMS)
        for i, weighted in enumerate(weighted_terms):
            found += out_of_range(f"{at}[{i}].weight", weighted.weight, 1, 100)
    return found
