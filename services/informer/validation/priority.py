"""A PriorityClass as ``ValidatePriorityClass`` checks it: a name with the reserved
``system-`` prefix must be one of the system classes with its value; any other class's
value is at most HighestUserDefinablePriority; every value is an int32; a
``preemptionPolicy`` is one of the supported values."""

from __future__ import annotations

from contracts.k8s import PriorityClass
from services.informer.limits import (
    HIGHEST_USER_DEFINABLE_PRIORITY,
    INT32_MAX,
    SYSTEM_PRIORITY_CLASSES,
)
from services.informer.validation.meta import Problem
from services.informer.validation.pod import out_of_range, preemption_policy_problems

_SYSTEM_PREFIX = "system-"


def priority_class_problems(pc: PriorityClass) -> list[Problem]:
    found = out_of_range("value", pc.value, -INT32_MAX - 1, INT32_MAX)
    if found:
        return found
    name = pc.metadata.name
    if name.startswith(_SYSTEM_PREFIX):
        why = _system_class_error(pc)
        if why is not None:
            reason = (
                f"Forbidden: priority class names with '{_SYSTEM_PREFIX}' prefix are reserved "
                f"for system use only. error: {why}"
            )
            return [("metadata.name", reason)]
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        reason = (
            "Forbidden: maximum allowed value of a user defined priority is "
            f"{HIGHEST_USER_DEFINABLE_PRIORITY}"
        )
        return [("value", reason)]
    return preemption_policy_problems(pc.preemption_policy, "preemptionPolicy")


def _system_class_error(pc: PriorityClass) -> str | None:
    """``IsKnownSystemPriorityClass``'s error, or None for a known system class."""
    name = pc.metadata.name
    value = SYSTEM_PRIORITY_CLASSES.get(name)
    if value is None:
        return f"{name} is not a known system priority class"
    if pc.value != value:
        return f"value of {name} PriorityClass must be {value}"
    if pc.global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None
