"""The chaos run's workload: upstream scheduler_perf's SchedulingBasic shape.

Pods are ``templates/pod-default.yaml`` (one container, requests and limits of 100m CPU
and 500Mi memory); nodes are ``templates/node-default.yaml`` (4 CPU, 32Gi, 110 pods)
grown so that every pod fits with a quarter of the room to spare: the run checks that
nothing is lost, so every pod must be schedulable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tests.integration.harness import node, pod

NAMESPACE = "chaos"
POD_CPU_MILLI = 100
POD_MEMORY_MI = 500
HEADROOM = 1.25


REQUESTS = {"cpu": POD_CPU_MILLI, "memory": POD_MEMORY_MI, "pods": 1}
"""What each pod costs its node: cpu in millicores, memory in Mi, one pod."""


@dataclass(frozen=True, slots=True)
class Workload:
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    allocatable: dict[str, int]
    """Of every node, in REQUESTS' units."""

    def pod_keys(self) -> list[str]:
        return [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in self.pods]


def node_size(pods: int, nodes: int) -> dict[str, int]:
    """Allocatable of each node (REQUESTS' units): the template's, or enough for its share
    of the pods (times HEADROOM), whichever is larger."""
    slots = max(110, math.ceil(HEADROOM * pods / nodes))
    return {
        "cpu": max(4000, slots * POD_CPU_MILLI),
        "memory": max(32 * 1024, slots * POD_MEMORY_MI),
        "pods": slots,
    }


def scheduling_basic(pods: int, nodes: int) -> Workload:
    size = node_size(pods, nodes)
    cpu, memory, slots = f"{size['cpu']}m", f"{size['memory']}Mi", str(size["pods"])
    node_objects = [node(f"node-{i}", cpu, memory, slots) for i in range(nodes)]
    pod_objects = []
    for i in range(pods):
        obj = pod(f"pod-{i:05d}", f"{POD_CPU_MILLI}m", f"{POD_MEMORY_MI}Mi", namespace=NAMESPACE)
        obj["metadata"]["uid"] = f"chaos-pod-{i:05d}"
        container = obj["spec"]["containers"][0]
        container["image"] = "registry.k8s.io/pause:3.10"
        container["resources"]["limits"] = dict(container["resources"]["requests"])
        pod_objects.append(obj)
    return Workload(node_objects, pod_objects, size)
