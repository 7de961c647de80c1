"""What the API server refuses in an object, checked per kind (see the modules here):
names, labels, annotations, counts against :mod:`services.informer.limits`, quantities,
PriorityClass values, ``resource.k8s.io`` objects and a pod's claims, and the
``scheduling.k8s.io`` Workload and PodGroup. Each check
returns ``(field path, reason)`` pairs; the informer reports the first one, so a
malformed event yields exactly one report.

Not here: field paths and errors the framework shares (:mod:`services.common.k8s.validation`),
what the informer does with an accepted object (:mod:`services.informer.state`).
"""

from __future__ import annotations

from collections.abc import Callable

from contracts.k8s import (
    DeviceClass,
    Node,
    Pod,
    PriorityClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    SchedulingPodGroup,
    Workload,
)
from contracts.kinds import KubeObject
from services.informer.validation.meta import Problem, meta_problems
from services.informer.validation.node import node_problems
from services.informer.validation.pod import pod_problems
from services.informer.validation.priority import priority_class_problems
from services.informer.validation.resourceclaim import (
    resource_claim_problems,
    resource_claim_template_problems,
)
from services.informer.validation.resourceslice import (
    device_class_problems,
    resource_slice_problems,
)
from services.informer.validation.workload import (
    pod_group_problems,
    scheduling_group_problems,
    workload_problems,
)

__all__ = ["Problem", "object_problems"]

_SPEC_CHECKS: dict[type, Callable[..., list[Problem]]] = {
    Pod: pod_problems,
    Node: node_problems,
    PriorityClass: priority_class_problems,
    DeviceClass: device_class_problems,
    ResourceSlice: resource_slice_problems,
    ResourceClaim: resource_claim_problems,
    ResourceClaimTemplate: resource_claim_template_problems,
    Workload: workload_problems,
    SchedulingPodGroup: pod_group_problems,
}


def object_problems(kind: str, obj: KubeObject, *, deleted: bool) -> list[Problem]:
    """Every problem of ``obj`` (a ``kind`` object); for a deletion only its identity
    (name, namespace) is checked, as a deletion carries nothing else that matters."""
    found = meta_problems(kind, obj.metadata, identity_only=deleted)
    if deleted or found:
        return found
    check = _SPEC_CHECKS.get(type(obj))
    found = check(obj) if check is not None else []
    if not found and isinstance(obj, Pod):
        found = scheduling_group_problems(obj)
    return found
