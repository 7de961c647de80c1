"""The native gang API at ingest (``pkg/apis/scheduling/validation``): Workload and
PodGroup (``scheduling.k8s.io``) and the pod's ``spec.schedulingGroup``.

Both kinds exist only with the GenericWorkload feature gate, as upstream serves them only
then: without it they are refused by name (:func:`gate_problem`) and a pod's
``spec.schedulingGroup`` is dropped (:func:`drop_disabled_fields`), as the API server
drops a field whose gate is off.

Checked: the apiVersion (``v1beta1``, or ``v1alpha2`` which upstream still converts;
``v1alpha1``'s Workload with ``podGroups`` is gone upstream), at most 8 templates with
unique DNS-label names, exactly one of ``basic`` and ``gang``, ``minCount`` at least 1,
the template reference's names, a pod's ``podGroupName`` (a DNS subdomain).
"""

from __future__ import annotations

from typing import Final

import msgspec

from contracts.k8s import (
    WORKLOAD_API_VERSIONS,
    Pod,
    SchedulingPodGroup,
    Workload,
)
from contracts.k8s.names import dns1123_label_errors, dns1123_subdomain_errors
from contracts.k8s.workload import PodGroupSchedulingPolicy
from services.common import features
from services.informer.validation.meta import Problem, shown

GATE: Final = "GenericWorkload"
GATED_KINDS: Final = frozenset({"workload", "schedulingpodgroup"})
MAX_POD_GROUP_TEMPLATES: Final = 8
"""``WorkloadMaxPodGroupTemplates``."""


def gate_problem(kind: str) -> str | None:
    """Why a ``kind`` event is refused while its feature gate is off (None: accepted)."""
    if kind in GATED_KINDS and not features.enabled(GATE):
        shown_kind = "Workload" if kind == "workload" else "PodGroup (scheduling.k8s.io)"
        return (
            f"{shown_kind} needs the {GATE} feature gate, which is off "
            f"(enable it with --feature-gates={GATE}=true)"
        )
    return None


def drop_disabled_fields(pod: Pod) -> Pod:
    """The pod without ``spec.schedulingGroup`` while GenericWorkload is off."""
    if pod.spec.scheduling_group is None or features.enabled(GATE):
        return pod
    return msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, scheduling_group=None)
    )


def _api_version_problems(api_version: str) -> list[Problem]:
    if api_version in WORKLOAD_API_VERSIONS:
        return []
    served = ", ".join(WORKLOAD_API_VERSIONS)
    return [("apiVersion", f"Unsupported value: {api_version!r}: supported values: {served}")]


def _policy_problems(policy: PodGroupSchedulingPolicy, path: str) -> list[Problem]:
    if policy.basic is None and policy.gang is None:
        return [(path, "Invalid value: must specify one of: `basic`, `gang`")]
    if policy.basic is not None and policy.gang is not None:
        return [(path, "Invalid value: must specify exactly one of: `basic`, `gang`")]
    if policy.gang is not None and policy.gang.min_count < 1:
        return [
            (
                f"{path}.gang.minCount",
                f"Invalid value: {policy.gang.min_count}: must be greater than or equal to 1",
            )
        ]
    return []


def _label(value: str, path: str) -> list[Problem]:
    if not value:
        return [(path, "Required value")]
    return [(path, f"Invalid value: {shown(value)}: {e}") for e in dns1123_label_errors(value)]


def workload_problems(workload: Workload) -> list[Problem]:
    found = _api_version_problems(workload.api_version)
    if found:
        return found
    templates = workload.spec.pod_group_templates
    path = "spec.podGroupTemplates"
    if not templates:
        return [(path, "Required value")]
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        return [(path, f"Too many: {len(templates)}: must have at most 8 items")]
    seen: set[str] = set()
    for i, template in enumerate(templates):
        at = f"{path}[{i}]"
        found = _label(template.name, f"{at}.name")
        if not found and template.name in seen:
            found = [(f"{at}.name", f'Duplicate value: "{template.name}"')]
        seen.add(template.name)
        found = found or _policy_problems(template.scheduling_policy, f"{at}.schedulingPolicy")
        if found:
            return found
    ref = workload.spec.controller_ref
    if ref is not None:
        for field, value in (("kind", ref.kind), ("name", ref.name)):
            if not value:
                return [(f"spec.controllerRef.{field}", "Required value")]
    return []


def pod_group_problems(group: SchedulingPodGroup) -> list[Problem]:
    found = _api_version_problems(group.api_version)
    if found:
        return found
    ref = group.workload_reference()
    if ref is not None:
        v1alpha2 = group.spec.workload_ref is None
        base = "spec.podGroupTemplateRef.workload" if v1alpha2 else "spec.workloadRef"
        template = "podGroupTemplateName" if v1alpha2 else "templateName"
        found = _label(ref.workload_name, f"{base}.workloadName") if v1alpha2 else []
        if not v1alpha2 and not ref.workload_name:
            found = [(f"{base}.workloadName", "Required value")]
        elif not v1alpha2:
            found = [
                (f"{base}.workloadName", f"Invalid value: {shown(ref.workload_name)}: {e}")
                for e in dns1123_subdomain_errors(ref.workload_name)
            ]
        found = found or _label(ref.template_name, f"{base}.{template}")
        if found:
            return found[:1]
    return _policy_problems(group.spec.scheduling_policy, "spec.schedulingPolicy")


def scheduling_group_problems(pod: Pod) -> list[Problem]:
    """A pod's ``spec.schedulingGroup``: its ``podGroupName`` set and a valid name."""
    group = pod.spec.scheduling_group
    if group is None:
        return []
    path = "spec.schedulingGroup.podGroupName"
    name = group.pod_group_name
    if not name:
        return [(path, "Required value")]
    return [(path, f"Invalid value: {shown(name)}: {e}") for e in dns1123_subdomain_errors(name)][
        :1
    ]
