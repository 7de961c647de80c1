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
        meta = self.pod.metadata
        requests = {
            name: f"{amount}m" if name == CPU else str(amount)
            for name, amount in sorted(self.requests.items())
        }
        fail: dict[str, Any] = {
            "reason": self.termination.reason,
            "message": self.termination.message,
        }
        if self.termination.reason == FAILED_SCHEDULING:
            fail["nodeFailures"] = {n: dict(v) for n, v in self.termination.node_failures.items()}
        out: dict[str, Any] = {
            "timestamp": self.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "pod": {
                "namespace": meta.namespace or "default",
                "name": meta.name,
                "requests": requests,
                "nodeSelector": dict(self.pod.spec.node_selector),
            },
            "maxLimit": self.max_limit,
            "instances": self.instances,
            "instancesPerNode": dict(self.instances_per_node),
            "failReason": fail,
        }
        if self.preemptions is not None:
            out["preemptions"] = [
                {"pod": p.pod, "node": p.node, "victims": list(p.victims)} for p in self.preemptions
            ]
        if self.group is not None:
            group = {"name": self.group.metadata.name, "minMember": self.group.spec.min_member}
            out["podGroup"] = {**group, "gangs": self.gangs}
        return out


def print_report(report: CapacityReport, output: str, out: TextIO) -> None:
    """``report`` as ``table`` (cluster-capacity's text), ``json`` (one line) or ``yaml``."""
    if output != "table":
        out.write(render_object(report.to_json(), output))
        return
    name = report.pod.metadata.name
    out.write(f"The cluster can schedule {report.instances} instance(s) of the pod {name}.\n")
    if report.group is not None:
        group, size = report.group.metadata.name, report.group.spec.min_member
        out.write(f"That is {report.gangs} whole gang(s) of the pod group {group} ({size} each).\n")
    reason = report.termination
    out.write(f"\nTermination reason: {reason.reason}: {reason.message}\n")
    if report.instances_per_node:
        out.write("\nPod distribution among nodes:\n")
    for node, count in report.instances_per_node.items():
        out.write(f"\t- {node}: {count} instance(s)\n")
    if report.preemptions:
        out.write("\nPreemptions:\n")
    for p in report.preemptions or ():
        out.write(f"\t- {p.pod} on {p.node} evicts {', '.join(p.victims)}\n")
    out.flush()


__all__ = [
    "FAILED_SCHEDULING",
    "LIMIT_REACHED",
    "CapacityReport",
    "Preempted",
    "Termination",
    "print_report",
]
