"""The report of ``ksched capacity``: cluster-capacity's text for ``table``, its
report's fields under ksched's names for ``json`` and ``yaml``::

    {
      "timestamp": "2026-11-28T06:00:00Z",
      "pod": {"namespace": "default", "name": "web",
              "requests": {"cpu": "500m", "memory": "1073741824"}, "nodeSelector": {}},
      "maxLimit": 0,
      "instances": 3,
      "instancesPerNode": {"n1": 2, "n2": 1},
      "failReason": {"reason": "FailedScheduling", "message": "0/2 nodes are available: …",
                     "nodeFailures": {"n1": {"plugin": "NodeResourcesFit",
                                             "status": "Unschedulable",
                                             "reasons": ["Insufficient cpu"]}, …}}
    }

``requests`` are the pod's (init containers, sidecars and overhead counted as the
scheduler counts them) as quantities: cpu in millicores, the rest in units. ``maxLimit``
0 is no limit. ``failReason.reason`` is ``FailedScheduling``, ``LimitReached`` or
``NotReadyForScheduling``; ``nodeFailures`` (FailedScheduling only) is, for each node
that rejected the last copy, the first filter that did and its reasons.

With ``--ratio`` (a workload mix: several ``--pod`` files, or units of N copies of one)
the report counts whole units instead, and each pod gets its own entry::

    {
      "timestamp": "2026-11-28T06:00:00Z",
      "ratio": [3, 1],
      "maxLimit": 0,
      "units": 2,
      "pods": [{"namespace": "default", "name": "web", "requests": {"cpu": "1000m"},
                "nodeSelector": {}, "instances": 6, "instancesPerNode": {"n1": 6}},
               {"namespace": "default", "name": "db", "requests": {"cpu": "1000m"},
                "nodeSelector": {}, "instances": 2, "instancesPerNode": {"n1": 2}}],
      "partialUnit": {"web": 2},
      "failReason": {"reason": "FailedScheduling", …}
    }

``ratio`` is ``--ratio``'s counts in ``--pod`` order: copies of that pod per unit (whole
gangs, for a pod with a PodGroup, whose entry then has ``podGroup`` too). ``units`` is
how many whole units were bound; ``instances`` and ``instancesPerNode`` count the pods of
those only. ``partialUnit`` is pod name → copies of it bound in the unit that did not fit,
before the pod that failed (left out of every count; ``{}`` when none were, or when
``--max-limit`` ended the run).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

from contracts.k8s import Pod, PodGroup
from services.cli.output import render_object
from services.common.resources import CPU, pod_requests

FAILED_SCHEDULING = "FailedScheduling"
LIMIT_REACHED = "LimitReached"


@dataclass(frozen=True, slots=True)
class Termination:
    """Why no more copies were scheduled."""

    reason: str
    """``FailedScheduling``, ``LimitReached`` or ``NotReadyForScheduling``."""
    message: str
    """The FailedScheduling message exactly as the scheduler gave it; for LimitReached,
    cluster-capacity's ``Maximum number of pods simulated: N``."""
    node_failures: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Node → the filter verdict that rejected the failing copy there (see
    framework.runtime.explain): ``plugin``, ``status``, ``reasons``."""


@dataclass(frozen=True, slots=True)
class Preempted:
    """A copy placed by preemption (``--allow-preemption``) and what it evicted."""

    pod: str
    """The copy, ``namespace/name``."""
    node: str
    """The node its preemption nominated."""
    victims: tuple[str, ...]
    """The pods evicted for it, ``namespace/name``, most important first."""


@dataclass(frozen=True, slots=True)
class CapacityReport:
    """What one ``ksched capacity`` run found."""

    pod: Pod
    """The pod copied, as the file gives it."""
    termination: Termination
    instances_per_node: Mapping[str, int]
    """Node → copies bound there, by node name; nodes without one are left out."""
    timestamp: datetime
    """When the run was made (UTC)."""
    max_limit: int = 0
    group: PodGroup | None = None
    """The PodGroup whose whole gangs were copied, if any."""
    preemptions: tuple[Preempted, ...] | None = None
    """With ``--allow-preemption``, each placement that evicted pods; else None."""

    @property
    def gangs(self) -> int:
        """Whole gangs bound: copies of a gang are bound all together or not at all."""
        size = self.group.spec.min_member if self.group is not None else 0
        return self.instances // size if size else 0

    @property
    def requests(self) -> Mapping[str, int]:
        """What each copy requests, in ksched's units (cpu in millicores)."""
        return pod_requests(self.pod)

    @property
    def instances(self) -> int:
        return sum(self.instances_per_node.values())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "timestamp": _timestamp(self.timestamp),
            "pod": _pod_json(self.pod),
            "maxLimit": self.max_limit,
            "instances": self.instances,
            "instancesPerNode": dict(self.instances_per_node),
            "failReason": _fail_json(self.termination),
        }
        if self.preemptions is not None:
            out["preemptions"] = _preemptions_json(self.preemptions)
        if self.group is not None:
            out["podGroup"] = _group_json(self.group, self.gangs)
        return out


@dataclass(frozen=True, slots=True)
class MixPart:
    """One ``--pod`` of a workload mix and where the copies of it in whole units went."""

    pod: Pod
    count: int
    """Copies of the pod per unit (whole gangs, with a PodGroup): its ``--ratio`` count."""
    instances_per_node: Mapping[str, int]
    """Node → copies bound there in whole units; nodes without one are left out."""
    group: PodGroup | None = None
    """The PodGroup whose whole gangs are this part of a unit, if any."""

    @property
    def instances(self) -> int:
        return sum(self.instances_per_node.values())

    @property
    def gangs(self) -> int:
        size = self.group.spec.min_member if self.group is not None else 0
        return self.instances // size if size else 0

    def describe(self) -> str:
        """Its share of a unit, as the table names it: ``3 web``, ``1 gang(s) of 4 worker``."""
        if self.group is None:
            return f"{self.count} {self.pod.metadata.name}"
        return f"{self.count} gang(s) of {self.group.spec.min_member} {self.pod.metadata.name}"

    def to_json(self) -> dict[str, Any]:
        out = {
            **_pod_json(self.pod),
            "instances": self.instances,
            "instancesPerNode": dict(self.instances_per_node),
        }
        if self.group is not None:
            out["podGroup"] = _group_json(self.group, self.gangs)
        return out


@dataclass(frozen=True, slots=True)
class MixReport:
    """What one ``ksched capacity --ratio`` run found: whole units of the mix."""

    parts: tuple[MixPart, ...]
    """In ``--pod`` order."""
    units: int
    """Whole units bound: every pod of each is."""
    termination: Termination
    timestamp: datetime
    partial_unit: Mapping[str, int] = field(default_factory=dict)
    """Pod name → copies of it bound in the unit that did not fit, before the pod that
    failed; counted nowhere else. Empty when the limit ended the run."""
    max_limit: int = 0
    preemptions: tuple[Preempted, ...] | None = None
    """With ``--allow-preemption``, each placement of a whole unit that evicted pods."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "timestamp": _timestamp(self.timestamp),
            "ratio": [part.count for part in self.parts],
            "maxLimit": self.max_limit,
            "units": self.units,
            "pods": [part.to_json() for part in self.parts],
            "partialUnit": dict(self.partial_unit),
            "failReason": _fail_json(self.termination),
        }
        if self.preemptions is not None:
            out["preemptions"] = _preemptions_json(self.preemptions)
        return out


def _timestamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod_json(pod: Pod) -> dict[str, Any]:
    requests = {
        name: f"{amount}m" if name == CPU else str(amount)
        for name, amount in sorted(pod_requests(pod).items())
    }
    return {
        "namespace": pod.metadata.namespace or "default",
        "name": pod.metadata.name,
        "requests": requests,
        "nodeSelector": dict(pod.spec.node_selector),
    }


def _fail_json(termination: Termination) -> dict[str, Any]:
    fail: dict[str, Any] = {"reason": termination.reason, "message": termination.message}
    if termination.reason == FAILED_SCHEDULING:
        fail["nodeFailures"] = {n: dict(v) for n, v in termination.node_failures.items()}
    return fail


def _preemptions_json(preemptions: tuple[Preempted, ...]) -> list[dict[str, Any]]:
    return [{"pod": p.pod, "node": p.node, "victims": list(p.victims)} for p in preemptions]


def _group_json(group: PodGroup, gangs: int) -> dict[str, Any]:
    return {"name": group.metadata.name, "minMember": group.spec.min_member, "gangs": gangs}


def print_report(report: CapacityReport | MixReport, output: str, out: TextIO) -> None:
    """``report`` as ``table`` (cluster-capacity's text), ``json`` (one line) or ``yaml``."""
    if output != "table":
        out.write(render_object(report.to_json(), output))
        return
    if isinstance(report, MixReport):
        _print_mix(report, out)
    else:
        _print_one(report, out)
    if report.preemptions:
        out.write("\nPreemptions:\n")
    for p in report.preemptions or ():
        out.write(f"\t- {p.pod} on {p.node} evicts {', '.join(p.victims)}\n")
    out.flush()


def _print_one(report: CapacityReport, out: TextIO) -> None:
    name = report.pod.metadata.name
    out.write(f"The cluster can schedule {report.instances} instance(s) of the pod {name}.\n")
    if report.group is not None:
        _print_gangs(report.group, report.gangs, out)
    _print_termination(report.termination, out)
    if report.instances_per_node:
        out.write("\nPod distribution among nodes:\n")
    _print_nodes(report.instances_per_node, out)


def _print_mix(report: MixReport, out: TextIO) -> None:
    unit = " + ".join(part.describe() for part in report.parts)
    out.write(f"The cluster can schedule {report.units} unit(s) of {unit}.\n")
    counts = [(part.instances, part.pod.metadata.name) for part in report.parts]
    out.write(f"That is {_instances(counts)}.\n")
    for part in report.parts:
        if part.group is not None:
            _print_gangs(part.group, part.gangs, out)
    _print_termination(report.termination, out)
    if report.partial_unit:
        placed = _instances([(n, name) for name, n in report.partial_unit.items()])
        out.write(f"Not counted: {placed}, placed by the unit that did not fit.\n")
    if report.units:
        out.write("\nPod distribution among nodes:\n")
        for part in report.parts:
            out.write(f"{part.pod.metadata.name}:\n")
            _print_nodes(part.instances_per_node, out)


def _instances(counts: list[tuple[int, str]]) -> str:
    """``36 instance(s) of the pod web, 4 of the pod cache and 12 of the pod db``."""
    said = [
        f"{n} instance(s) of the pod {name}" if i == 0 else f"{n} of the pod {name}"
        for i, (n, name) in enumerate(counts)
    ]
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"


def _print_gangs(group: PodGroup, gangs: int, out: TextIO) -> None:
    name, size = group.metadata.name, group.spec.min_member
    out.write(f"That is {gangs} whole gang(s) of the pod group {name} ({size} each).\n")


def _print_termination(reason: Termination, out: TextIO) -> None:
    out.write(f"\nTermination reason: {reason.reason}: {reason.message}\n")


def _print_nodes(instances_per_node: Mapping[str, int], out: TextIO) -> None:
    for node, count in instances_per_node.items():
        out.write(f"\t- {node}: {count} instance(s)\n")


__all__ = [
    "FAILED_SCHEDULING",
    "LIMIT_REACHED",
    "CapacityReport",
    "MixPart",
    "MixReport",
    "Preempted",
    "Termination",
    "print_report",
]
