"""Two scheduler replicas (and two binders) against the real RabbitMQ and Redis keep
what one scheduler keeps: required anti-affinity, topology spread ``maxSkew``, host
ports and a required pod affinity group's single zone hold across every pod either
replica placed (scheduler.domains: a decision that read a domain another replica placed
a pod in meanwhile is not committed)."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import Client, node, pod, running_cluster

pytestmark = pytest.mark.integration

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
SELECTOR = {"matchLabels": {"app": "web"}}
PODS = 300
NODES = 100


def zoned(i: int, zones: int) -> dict[str, Any]:
    n = node(f"n{i}")
    n["metadata"]["labels"][ZONE] = f"z{i % zones}"
    return n


def web(i: int, spec: dict[str, Any]) -> dict[str, Any]:
    p = pod(f"web-{i}")
    p["metadata"]["labels"] = {"app": "web"}
    p["spec"].update(copy.deepcopy(spec))
    return p


ANTI_AFFINITY = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": SELECTOR, "topologyKey": HOSTNAME}
            ]
        }
    }
}
SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": SELECTOR,
        }
    ]
}
AFFINITY = {  # a group of its own: the first pod goes anywhere, the rest follow it
    "affinity": {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": SELECTOR, "topologyKey": ZONE}
            ]
        }
    }
}
HOST_PORT = {
    "containers": [
        {
            "name": "app",
            "image": "nginx",
            "ports": [{"containerPort": 8080, "hostPort": 8080}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        }
    ]
}


@dataclass(frozen=True)
class Case:
    spec: dict[str, Any]
    zones: int
    bound: int
    """Pods that fit in all (the rest stay unschedulable)."""
    violations: Callable[[dict[str, str], dict[str, str]], list[str]]
    """(pod → node, node → zone) → the broken constraints."""


def shared_nodes(placed: dict[str, str], zones: dict[str, str]) -> list[str]:
    return [f"{n}: {c} pods" for n, c in Counter(placed.values()).items() if c > 1]


def groups(placed: dict[str, str], zones: dict[str, str]) -> list[str]:
    counts = Counter(zones[n] for n in placed.values())
    return [f"the group in {len(counts)} zones: {dict(counts)}"] if len(counts) > 1 else []


def skew(placed: dict[str, str], zones: dict[str, str]) -> list[str]:
    counts = Counter(zones[n] for n in placed.values())
    spread = max(counts.values()) - min(counts.get(z, 0) for z in set(zones.values()))
    return [f"zones {dict(counts)}: skew {spread}"] if spread > 1 else []


CASES = {
    "required anti-affinity": Case(ANTI_AFFINITY, 1, NODES, shared_nodes),
    "maxSkew 1 across 3 zones": Case(SPREAD, 3, PODS, skew),
    "host ports": Case(HOST_PORT, 1, NODES, shared_nodes),
    "required pod affinity, one group across 3 zones": Case(AFFINITY, 3, PODS, groups),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_two_replicas_break_no_constraint(tmp_path: Path, case: Case) -> None:
    async for _, client, _ in running_cluster(tmp_path, "rep", replicas=2):
        nodes = [zoned(i, case.zones) for i in range(NODES)]
        zones = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE] for n in nodes}
        for n in nodes:
            await client.publish("node", n)
        for i in range(PODS):
            await client.publish("pod", web(i, case.spec))

        def settled(client: Client = client) -> bool:
            bound = client.bindings()
            failed = {
                f"{e['involvedObject']['namespace']}/{e['involvedObject']['name']}"
                for e in client.events_with("FailedScheduling")
            }
            return len(bound) >= case.bound and len(bound) + len(failed - bound.keys()) == PODS

        await client.wait_for(settled, within=120)
        bindings = client.bindings()
        assert all(len(targets) == 1 for targets in bindings.values()), bindings
        placed = {name: targets[0] for name, targets in bindings.items()}
        assert case.violations(placed, zones) == []
        assert len(placed) == case.bound
