"""A pod's priority, as the Priority admission plugin would have set it (seed 002):
``spec.priority`` if set, else the value of the PriorityClass named by
``priorityClassName``, else the value of the ``globalDefault`` PriorityClass, else 0."""

from __future__ import annotations

from contracts.k8s import Pod, PriorityClass

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
"""Values above this are reserved for the system classes (system-cluster-critical…)."""
SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}


class PriorityClasses:
    def __init__(self) -> None:
        self._classes: dict[str, PriorityClass] = {}

    def put(self, priority_class: PriorityClass) -> None:
        self._classes[priority_class.metadata.name] = priority_class

    def delete(self, name: str) -> None:
        self._classes.pop(name, None)

    def priority_of(self, pod: Pod) -> int:
        if pod.spec.priority is not None:
            return pod.spec.priority
        name = pod.spec.priority_class_name
        if name:
            if name in self._classes:
                return self._classes[name].value
            if name in SYSTEM_PRIORITY_CLASSES:
                return SYSTEM_PRIORITY_CLASSES[name]
            return 0
        defaults = [c for c in self._classes.values() if c.global_default]
        return max((c.value for c in defaults), default=0)
