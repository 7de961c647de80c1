"""A pod's priority, as the Priority admission plugin would have set it (seed 002):
``spec.priority`` if set, else the value of the PriorityClass named by
``priorityClassName``, else the value of the ``globalDefault`` PriorityClass (the lowest
one if several claim it, as admission does), else 0."""

from __future__ import annotations

import logging
from typing import Final

from contracts.k8s import Pod, PriorityClass

log = logging.getLogger("ksched.queue")

HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
"""Values above this are reserved for the system classes (system-cluster-critical…)."""
SYSTEM_PRIORITY_CLASS_PREFIX: Final = "system-"
SYSTEM_PRIORITY_CLASSES: Final = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
DEFAULT_PRIORITY: Final = 0
"""``DefaultPriorityWhenNoDefaultClassExists``."""


class PriorityClasses:
    def __init__(self) -> None:
        self._classes: dict[str, PriorityClass] = {}

    def put(self, priority_class: PriorityClass) -> None:
        """Record a class; one claiming a reserved value without a ``system-`` name is
        refused, as the API server's validation would."""
        name = priority_class.metadata.name
        if priority_class.value > HIGHEST_USER_DEFINABLE_PRIORITY and not name.startswith(
            SYSTEM_PRIORITY_CLASS_PREFIX
        ):
            log.warning(
                "PriorityClass %s ignored: value %d is above %d, reserved for system classes",
                name,
                priority_class.value,
                HIGHEST_USER_DEFINABLE_PRIORITY,
            )
            self._classes.pop(name, None)
            return
        self._classes[name] = priority_class

    def delete(self, name: str) -> None:
        self._classes.pop(name, None)

    def priority_of(self, pod: Pod) -> int:
        if pod.spec.priority is not None:
            return pod.spec.priority
        name = pod.spec.priority_class_name
        if name:
            if name in self._classes:
                return self._classes[name].value
            return SYSTEM_PRIORITY_CLASSES.get(name, DEFAULT_PRIORITY)
        defaults = [c.value for c in self._classes.values() if c.global_default]
        return min(defaults, default=DEFAULT_PRIORITY)
