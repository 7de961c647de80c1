"""Issue 27's scenario: 1, 2 and 3 scheduler replicas (one informer, queue and binder)
on 30 nodes in three zones, and three sets of 60 pods published at once: required
anti-affinity on the hostname, host port 8080, and a DoNotSchedule spread over the
zones. Whatever the replicas, the final state the store holds has 30, 30 and 60 pods
bound and no violated hard constraint (services.framework.verify).

Before the fix (a refused reservation's touches still counted by the later ones of
its call), 2 replicas bound 33-34 anti-affine pods with 3-4 doubled nodes and as many
host-port pods; 3 replicas the same or worse."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from services.common.store.redis import RedisStore
from services.framework.verify import store_violations
from tests.integration.harness import Client, node, pod, quiet, running_cluster, until_true

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
NODES, PER_SET = 30, 60
EXPECTED = {"spread": 30, "port": 30, "zoned": 60}
"""Pods bound per set: one per node, one per node, all (20 per zone)."""


def zoned_node(i: int) -> dict[str, Any]:
    n = node(f"n{i}", cpu="16")
    n["metadata"]["labels"][ZONE] = "abc"[i * 3 // NODES]
    return n


def selector(app: str) -> dict[str, Any]:
    return {"matchLabels": {"app": app}}


def anti_affine(i: int) -> dict[str, Any]:
    p = pod(f"spread-{i}")
    p["metadata"]["labels"] = {"app": "spread"}
    term = {"labelSelector": selector("spread"), "topologyKey": HOSTNAME}
    p["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    return p


def host_port(i: int) -> dict[str, Any]:
    p = pod(f"port-{i}")
    p["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    return p


def zone_spread(i: int) -> dict[str, Any]:
    p = pod(f"zoned-{i}")
    p["metadata"]["labels"] = {"app": "zoned"}
    p["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector("zoned"),
        }
    ]
    return p


def accounted(client: Client) -> bool:
    """Every pod is bound or was found unschedulable."""
    failed = {
        f"{e['involvedObject']['namespace']}/{e['involvedObject']['name']}"
        for e in client.events_with("FailedScheduling")
    }
    return len(client.bindings().keys() | failed) == 3 * PER_SET


@pytest.mark.parametrize("replicas", [1, 2, 3])
async def test_replicas_keep_every_hard_constraint(tmp_path: Path, replicas: int) -> None:
    async for _, client, store in running_cluster(tmp_path, "rc", replicas=replicas, binders=1):
        for i in range(NODES):
            await client.publish("node", zoned_node(i))

        async def projected(store: RedisStore = store) -> bool:
            return len(await store.objects("node")) == NODES

        await until_true(projected, within=120)
        pods = [make(i) for i in range(PER_SET) for make in (anti_affine, host_port, zone_spread)]
        await asyncio.gather(*(client.publish("pod", p) for p in pods))  # all at once
        await client.wait_for(lambda c=client: accounted(c), within=600)
        await quiet(store, within=300)

        bindings = client.bindings()
        assert {k: v for k, v in bindings.items() if len(v) > 1} == {}, "bound twice"
        found = await store_violations(store)
        bound = Counter(name.split("/")[1].split("-")[0] for name in bindings)
        doubled = Counter(v.pod.split("/")[1].split("-")[0] for v in found)
        # bound per set, violating pods per set, then each violation
        assert (dict(bound), dict(doubled)) == (EXPECTED, {}), [str(v) for v in found]
