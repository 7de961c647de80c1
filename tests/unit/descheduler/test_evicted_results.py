"""``descheduler_pods_evicted_total{result}`` keeps to upstream's fixed values and counts
each eviction once: a pod whose eviction is still outstanding (published, the pod not
gone yet) is refused on the next cycle without a series of its own and without being
counted again. Two cycles of a DeschedulerService on the in-memory bus and store."""

from __future__ import annotations

import msgspec
import pytest

from contracts import topology
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.settings import DeschedulerSettings
from services.common.store import ProjectedEntry
from services.common.store.memory import MemoryStore
from services.descheduler.api import (
    BudgetError,
    EvictionError,
    NamespaceLimitError,
    NodeLimitError,
    TotalLimitError,
)
from services.descheduler.evictions import RESULTS, result_label
from services.descheduler.policy import load_policy
from services.descheduler.registry import in_tree_registry
from services.descheduler.service import DeschedulerService
from tests.unit.descheduler.support import NOW, build_node, build_pod, with_

POLICY = {
    "apiVersion": "descheduler/v1alpha2",
    "kind": "DeschedulerPolicy",
    "maxNoOfPodsToEvictPerNode": 2,
    "profiles": [
        {
            "name": "failed",
            "pluginConfig": [{"name": "RemoveFailedPods", "args": {"minPodLifetimeSeconds": 0}}],
            "plugins": {"deschedule": {"enabled": ["RemoveFailedPods"]}},
        }
    ],
}


def evicted_samples(service: DeschedulerService) -> dict[tuple[str, str], float]:
    """(result, node) → count, of every ``descheduler_pods_evicted_total`` series."""
    return {
        (sample.labels["result"], sample.labels["node"]): sample.value
        for family in service.metrics.registry.collect()
        if family.name == "descheduler_pods_evicted"
        for sample in family.samples
        if sample.name == "descheduler_pods_evicted_total"
    }


@pytest.fixture
async def service() -> DeschedulerService:
    store = MemoryStore()
    bus = MemoryBus()
    await bus.declare(topology.QUEUES)
    nodes = [build_node("n1"), build_node("n2")]
    pods = [with_(build_pod(f"web-{i}", node="n1"), status_phase="Failed") for i in range(3)]
    pods.append(with_(build_pod("db-0", node="n2"), status_phase="Failed"))
    entries = [
        ProjectedEntry(i + 1, "node", n.metadata.name, msgspec.json.encode(n))
        for i, n in enumerate(nodes)
    ]
    entries += [
        ProjectedEntry(
            len(entries) + i + 1,
            "pod",
            f"{p.metadata.namespace}/{p.metadata.name}",
            msgspec.json.encode(p),
        )
        for i, p in enumerate(pods)
    ]
    await store.apply(entries)
    registry = in_tree_registry()
    return DeschedulerService(
        bus,
        store,
        FakeClock(NOW),
        load_policy(POLICY, registry),
        registry,
        DeschedulerSettings(),
    )


async def test_outstanding_evictions_are_not_counted_again_and_results_stay_upstreams(
    service: DeschedulerService,
) -> None:
    first = await service.run_once()
    assert sorted(e.pod.metadata.name for e in first.evicted) == ["db-0", "web-0", "web-1"]
    counted = evicted_samples(service)
    assert counted == {
        ("success", "n1"): 2,
        ("success", "n2"): 1,
        ("maximum number of evicted pods per node reached", "n1"): 1,  # web-2
    }

    second = await service.run_once()  # the evicted pods are still there: outstanding
    assert second.evicted == []
    assert evicted_samples(service) == counted  # nothing counted twice
    assert {result for result, _ in evicted_samples(service)} <= set(RESULTS)


@pytest.mark.parametrize(
    ("error", "label"),
    [
        (TotalLimitError(), "maximum number of evicted pods per a descheduling cycle reached"),
        (NodeLimitError("n1"), "maximum number of evicted pods per node reached"),
        (NamespaceLimitError("dsns"), "maximum number of evicted pods per namespace reached"),
        (BudgetError("web-pdb"), "error"),  # the API server's 429: upstream counts "error"
        (EvictionError("pod dsns/ds-web-1 is already being evicted"), "error"),
    ],
)
def test_a_refusal_is_labelled_with_upstreams_result(error: EvictionError, label: str) -> None:
    assert result_label(error) == label
    assert label in RESULTS
