"""The final-state checker: every bound pod judged by the profile's filters with all
the others in place. Each case breaks one hard constraint (and a twin that keeps it
reports nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec
import pytest

from contracts.k8s import Node, Pod, ResourceClaim, ResourceSlice
from services.framework.verify import Violation, violations
from tests.builders import make_node, make_pod
from tests.builders.constraints import (
    ZONE,
    anti_affine,
    grouped,
    ported,
    rwop,
    rwop_objects,
    spread,
    zoned_node,
)


@dataclass(frozen=True)
class Case:
    nodes: Sequence[Node]
    pods: Sequence[Pod]
    broken: set[tuple[str, str]]
    """(pod name, plugin) of every violation."""
    objects: dict[str, list[object]] = field(default_factory=dict)


N1, N2 = zoned_node("n1", "z1"), zoned_node("n2", "z2")


def allocated_claim(name: str, *devices: tuple[str, bool]) -> ResourceClaim:
    """A claim allocated ``devices`` of pool n1: (device, admin access)."""
    results = [
        {"request": "r", "driver": "gpu.example.com", "pool": "n1", "device": device,
         **({"adminAccess": True} if admin else {})}
        for device, admin in devices
    ]  # fmt: skip
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "default"},
         "status": {"allocation": {"devices": {"results": results}}}},
        ResourceClaim,
    )  # fmt: skip


def shared_claim(name: str, device: str, bandwidth: str) -> ResourceClaim:
    """A claim holding a share of ``device`` of pool n1 that consumes ``bandwidth``."""
    result = {
        "request": "r",
        "driver": "gpu.example.com",
        "pool": "n1",
        "device": device,
        "shareID": f"{name}-share",
        "consumedCapacity": {"bandwidth": bandwidth},
    }
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "default"},
         "status": {"allocation": {"devices": {"results": [result]}}}},
        ResourceClaim,
    )  # fmt: skip


def gpu_slice(shareable: bool = True) -> ResourceSlice:
    """Pool n1 with gpu-0 (bandwidth 2), shareable or not."""
    device = {
        "name": "gpu-0",
        "capacity": {"bandwidth": {"value": "2"}},
        **({"allowMultipleAllocations": True} if shareable else {}),
    }
    return msgspec.convert(
        {"metadata": {"name": "n1-gpus"},
         "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                  "pool": {"name": "n1", "resourceSliceCount": 1}, "devices": [device]}},
        ResourceSlice,
    )  # fmt: skip


TWO_ZONES = [N1, N2, zoned_node("n3", "z1")]

CASES = {
    "nothing broken": Case(
        [N1, N2], [anti_affine("a", node_name="n1"), anti_affine("b", node_name="n2")], set()
    ),
    "required anti-affinity: both pods of a node": Case(
        [N1, N2], [anti_affine("a", node_name="n1"), anti_affine("b", node_name="n1")],
        {("a", "InterPodAffinity"), ("b", "InterPodAffinity")},
    ),
    "host ports": Case(
        [N1], [ported("a", "n1"), ported("b", "n1"), ported("c", "n1", port=9090)],
        {("a", "NodePorts"), ("b", "NodePorts")},
    ),
    "resources": Case(
        [make_node("n1", allocatable={"cpu": "3", "pods": 10})],
        [make_pod(p, requests={"cpu": "2"}, node_name="n1") for p in "ab"],
        {("a", "NodeResourcesFit"), ("b", "NodeResourcesFit")},
    ),
    "pod count": Case(
        [make_node("n1", allocatable={"cpu": "3", "pods": 1})],
        [make_pod(p, node_name="n1") for p in "ab"],
        {("a", "NodeResourcesFit"), ("b", "NodeResourcesFit")},
    ),
    "DoNotSchedule spread: the pods of the fuller zone": Case(
        TWO_ZONES, [spread("a", "n1"), spread("b", "n3"), spread("c", "n1"), spread("d", "n2")],
        {("a", "PodTopologySpread"), ("b", "PodTopologySpread"), ("c", "PodTopologySpread")},
    ),
    "DoNotSchedule spread within maxSkew": Case(
        TWO_ZONES, [spread("a", "n1"), spread("b", "n3"), spread("c", "n2")], set()
    ),
    "required pod affinity: a second group": Case(
        TWO_ZONES, [grouped("a", "n1"), grouped("b", "n3"), grouped("c", "n2")],
        {("c", "InterPodAffinity")},
    ),
    "required pod affinity: the first of its group": Case(
        TWO_ZONES, [grouped("a", "n2")], set()
    ),
    "a taint not tolerated": Case(
        [zoned_node("n1", tainted=True)], [make_pod("a", node_name="n1")],
        {("a", "TaintToleration")},
    ),
    "a node selector not matched": Case(
        [N1, N2], [make_pod("a", node_name="n2", node_selector={ZONE: "z1"})],
        {("a", "NodeAffinity")},
    ),
    "a ReadWriteOncePod claim used twice": Case(
        [N1, N2], [rwop("a", "n1"), rwop("b", "n2")],
        {("a", "VolumeRestrictions"), ("b", "VolumeRestrictions")}, rwop_objects(),
    ),
    "a DRA device allocated to two claims: the later one": Case(
        [N1], [],
        {("c2", "DynamicResources")},
        {"resourceclaim": [allocated_claim("c1", ("gpu-0", False)),
                           allocated_claim("c2", ("gpu-0", False), ("gpu-1", False)),
                           allocated_claim("c3", ("gpu-2", False))]},
    ),
    "a DRA device in use taken again with admin access": Case(
        [N1], [], set(),
        {"resourceclaim": [allocated_claim("c1", ("gpu-0", False)),
                           allocated_claim("c2", ("gpu-0", True))]},
    ),
    "DRA shares of one device within its capacity": Case(
        [N1], [], set(),
        {"resourceslice": [gpu_slice()],
         "resourceclaim": [shared_claim("c1", "gpu-0", "1"), shared_claim("c2", "gpu-0", "1")]},
    ),
    "DRA shares past the device's capacity: the one that passes it": Case(
        [N1], [], {("c2", "DynamicResources")},
        {"resourceslice": [gpu_slice()],
         "resourceclaim": [shared_claim("c1", "gpu-0", "1"), shared_claim("c2", "gpu-0", "2")]},
    ),
    "a DRA device taken whole and shared": Case(
        [N1], [], {("c2", "DynamicResources"), ("c3", "DynamicResources")},
        {"resourceslice": [gpu_slice()],
         "resourceclaim": [allocated_claim("c1", ("gpu-0", False)),
                           shared_claim("c2", "gpu-0", "1"),
                           allocated_claim("c3", ("gpu-0", False))]},
    ),
    "a DRA share of a device that allows one allocation": Case(
        [N1], [], {("c1", "DynamicResources")},
        {"resourceslice": [gpu_slice(shareable=False)],
         "resourceclaim": [shared_claim("c1", "gpu-0", "1")]},
    ),
    "a node the cluster lacks": Case([N1], [make_pod("a", node_name="gone")], {("a", "")}),
    "pending and finished pods are not judged": Case(
        [make_node("n1", allocatable={"cpu": "1", "pods": 1})],
        [make_pod("a", node_name="n1"), make_pod("b", phase="Succeeded", node_name="n1"),
         make_pod("c")],
        set(),
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_violations(case: Case) -> None:
    found = violations(case.nodes, case.pods, case.objects)
    assert {(v.pod.split("/")[1], v.plugin) for v in found} == case.broken, found
    assert all(v.node and v.reason for v in found)


def test_a_violation_reads_as_the_filter_says() -> None:
    [found, _] = violations([N1], [ported("a", "n1"), ported("b", "n1")])
    assert found == Violation(
        "default/a", "n1", "NodePorts", "node(s) didn't have free ports for the requested pod ports"
    )
    assert str(found) == (
        "default/a on n1: NodePorts: node(s) didn't have free ports for the requested pod ports"
    )
