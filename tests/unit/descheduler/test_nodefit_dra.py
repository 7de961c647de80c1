"""nodeFit sees DRA: the scheduler's DynamicResources filter judges where an evicted pod
could go, so a pod whose claim cannot be allocated (or is allocated) elsewhere does not
fit there."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import pytest

from contracts.k8s import Node, Pod
from services.descheduler.api import ClusterView
from services.descheduler.nodefit import SchedulerFit
from tests.unit.framework.plugins.dra.plugin_support import (
    POD_UID,
    allocation,
    claim,
    device_class,
    pod_with_claim_name,
    resource_slice,
    worker,
)

A, B = worker("worker-a"), worker("worker-b")


def on(pod: Pod, node: str) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))


@dataclass(frozen=True)
class Case:
    dra: list[object]
    fits_b: bool
    nodes: list[Node] = field(default_factory=lambda: [A, B])


CASES = {
    "the claim is allocated on worker-a: worker-b does not fit": Case(
        [device_class(), resource_slice("worker-a"), resource_slice("worker-b"),
         claim(allocation=allocation(node="worker-a"), reserved_for=[POD_UID])],
        False,
    ),
    "an unallocated claim, a free device on worker-b: it fits": Case(
        [device_class(), resource_slice("worker-a"), resource_slice("worker-b"), claim()],
        True,
    ),
    "an unallocated claim, no device on worker-b: it does not fit": Case(
        [device_class(), resource_slice("worker-a"), claim()], False
    ),
    "the claim does not exist: nothing fits": Case(
        [device_class(), resource_slice("worker-a"), resource_slice("worker-b")], False
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_node_fit_runs_the_dynamic_resources_filter(case: Case) -> None:
    pod = on(pod_with_claim_name(), "worker-a")
    cluster = ClusterView(case.nodes, [pod], now=0.0, dra=case.dra)
    assert SchedulerFit(cluster)(pod, [B]) is case.fits_b
