"""Feature gates: upstream's scheduler gates, by upstream's names and current defaults.

Every ksched command takes ``--feature-gates NAME=true,NAME=false`` as kube-scheduler
does; the CLI parses it once (:func:`parse`) and installs the result (:func:`install`)
before anything is built, and code asks :func:`enabled`. A name upstream does not know
is an error, as is a value that is not a boolean and turning off a gate locked to its
default, all with component-base's messages.

The table is ``pkg/features/kube_features.go`` (the scheduler's gates) at its newest
version entry (1.37). ``implemented`` says whether ksched does what the gate turns on:
switching on a gate ksched does not implement is refused by name, so nobody is misled
into thinking a feature works. Every gate on by default upstream is implemented.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Spec:
    default: bool
    stage: str
    """Alpha, Beta or GA."""
    locked: bool = False
    """LockToDefault: the gate cannot be set to anything but its default."""
    implemented: bool = True
    """ksched does what the gate turns on (or the gate changes nothing ksched does)."""


SPECS: Final[Mapping[str, Spec]] = {
    "CompositePodGroup": Spec(False, "Alpha", implemented=False),
    "DRAAdminAccess": Spec(True, "GA", locked=True),
    "DRAConsumableCapacity": Spec(True, "Beta"),
    "DRADerivedAttributes": Spec(False, "Alpha", implemented=False),
    "DRADeviceBindingConditions": Spec(True, "Beta"),
    "DRADeviceCompatibilityGroups": Spec(False, "Alpha", implemented=False),
    "DRADeviceTaintRules": Spec(True, "GA"),
    "DRADeviceTaints": Spec(True, "GA"),
    "DRAExtendedResource": Spec(True, "GA", locked=True),
    "DRAFractionalCapacityRange": Spec(True, "Beta"),
    "DRAListTypeAttributes": Spec(False, "Alpha", implemented=False),
    "DRANodeAllocatableResources": Spec(False, "Alpha", implemented=False),
    "DRAOptionalNodeOperations": Spec(False, "Alpha", implemented=False),
    "DRAPartitionableDevices": Spec(True, "Beta"),
    "DRAPrioritizedList": Spec(True, "GA", locked=True),
    "DRAResourceClaimDeviceStatus": Spec(True, "GA", locked=True),
    "DRASchedulerFilterTimeout": Spec(True, "Beta"),
    "DRAWorkloadResourceClaims": Spec(False, "Beta", implemented=False),
    "DynamicResourceAllocation": Spec(True, "GA", locked=True),
    "GangScheduling": Spec(False, "Alpha"),
    "GenericWorkload": Spec(False, "Beta"),
    "InPlacePodLevelResourcesVerticalScaling": Spec(True, "Beta"),
    "InPlacePodVerticalScaling": Spec(True, "GA", locked=True),
    "InPlacePodVerticalScalingSchedulerPreemption": Spec(False, "Alpha", implemented=False),
    "InterPodAffinityHostnameFastPath": Spec(False, "Alpha"),
    "MatchLabelKeysInPodTopologySpread": Spec(True, "Beta"),
    "NodeDeclaredFeatures": Spec(True, "GA", locked=True),
    "NodeInclusionPolicyInPodTopologySpread": Spec(True, "GA", locked=True),
    "NominatedNodeNameForExpectation": Spec(True, "Beta"),
    "OpportunisticBatching": Spec(True, "Beta"),
    "PodGroupPreemptionPolicy": Spec(False, "Alpha", implemented=False),
    "PodLevelResources": Spec(True, "Beta"),
    "SchedulerAsyncAPICalls": Spec(False, "Beta"),
    "SchedulerAsyncPreemption": Spec(True, "Beta"),
    "SchedulerPopFromBackoffQ": Spec(True, "Beta"),
    "SchedulerPreEnqueuePodStatus": Spec(True, "Beta"),
    "SchedulerPreQueueingHints": Spec(False, "Alpha", implemented=False),
    "StorageCapacityScoring": Spec(True, "Beta"),
    "TaintTolerationComparisonOperators": Spec(False, "Alpha", implemented=False),
    "TopologyAwareWorkloadScheduling": Spec(False, "Alpha", implemented=False),
    "VolumeAttributesClass": Spec(True, "GA", locked=True),
    "VolumeLimitScaling": Spec(True, "Beta"),
}
"""Upstream's scheduler feature gates at their newest version entry."""


class FeatureGateError(ValueError):
    """A bad ``--feature-gates`` value; the message is component-base's."""


@dataclass(frozen=True, slots=True)
class FeatureGates:
    overrides: Mapping[str, bool]

    def enabled(self, name: str) -> bool:
        spec = SPECS.get(name)
        if spec is None:
            raise KeyError(f"feature {name!r} is not registered in FeatureGate")
        return self.overrides.get(name, spec.default)


DEFAULTS: Final = FeatureGates({})


def parse(text: str) -> FeatureGates:
    """``--feature-gates`` (``A=true,B=false``); empty text: the defaults."""
    overrides: dict[str, bool] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        spec = SPECS.get(name)
        if spec is None:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        value = _bool(raw)
        if value is None:
            raise FeatureGateError(
                f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}": '
                "invalid syntax"
            )
        if spec.locked and value != spec.default:
            raise FeatureGateError(
                f"cannot set feature gate {name} to {str(value).lower()}, "
                f"feature is locked to {str(spec.default).lower()}"
            )
        if value and not spec.implemented:
            raise FeatureGateError(f"feature gate {name}: not implemented in ksched")
        overrides[name] = value
    return FeatureGates(overrides)


SETTINGS: Final[Mapping[str, str]] = {
    "SchedulerPopFromBackoffQ": "pop_from_backoff",
    "SchedulerPreEnqueuePodStatus": "pre_enqueue_pod_status",
}
"""Gates that ksched implements as a settings field (of QueueSettings): gate → field."""


def setting_overrides(gates: FeatureGates) -> dict[str, bool]:
    """The settings fields the gates set explicitly (a gate left to its default sets
    nothing, so the setting keeps its own default or value)."""
    return {
        field: gates.overrides[name] for name, field in SETTINGS.items() if name in gates.overrides
    }


def _bool(raw: str) -> bool | None:
    """Go's ``strconv.ParseBool``."""
    if raw in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if raw in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


_current: FeatureGates = DEFAULTS


def install(gates: FeatureGates) -> None:
    """Make ``gates`` the process's feature gates (the CLI, once, at start)."""
    global _current
    _current = gates


def current() -> FeatureGates:
    return _current


def enabled(name: str) -> bool:
    """Whether the process's feature gate ``name`` is on."""
    return _current.enabled(name)
