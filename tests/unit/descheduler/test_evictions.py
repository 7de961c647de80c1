"""The cycle's evictor: upstream's limits in upstream's order with its messages, the
evictions still outstanding, PodDisruptionBudgets; and the cycle: every profile's
Deschedule plugins before any Balance plugin, one evictor for all, skipped with fewer
than two Ready nodes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from contracts.k8s import (
    LabelSelector,
    Node,
    ObjectMeta,
    Pod,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)
from services.descheduler.api import (
    BudgetError,
    ClusterView,
    EvictionError,
    EvictOptions,
    NamespaceLimitError,
    NodeLimitError,
    PluginEntry,
    TotalLimitError,
)
from services.descheduler.evictions import Limits, PodEvictor
from services.descheduler.policy import load_policy
from services.descheduler.profile import ProfileEvictor, run_cycle
from services.descheduler.registry import in_tree_registry
from tests.unit.descheduler.support import NOW, build_node, build_pod, with_

OPTIONS = EvictOptions("Test")


def pods(n: int, node: str = "n1", namespace: str = "default", **labels: str) -> list[Pod]:
    return [
        with_(
            build_pod(f"{node}-{namespace}-{i}", node=node),
            meta_namespace=namespace,
            meta_uid=f"{node}-{namespace}-{i}",
            meta_labels=dict(labels),
        )
        for i in range(n)
    ]


def outcome(evictor: PodEvictor, candidates: Sequence[Pod]) -> list[str]:
    """Each pod's outcome: "evicted" or the error's message."""
    results = []
    for pod in candidates:
        try:
            evictor.evict(pod, OPTIONS)
            results.append("evicted")
        except EvictionError as error:
            results.append(str(error))
    return results


NODE = "maximum number of evicted pods per node reached"
NAMESPACE = "maximum number of evicted pods per namespace reached"
TOTAL = "maximum number of evicted pods per a descheduling cycle reached"


@pytest.mark.parametrize(
    ("limits", "candidates", "expected"),
    [
        (Limits(per_node=2), pods(3), ["evicted", "evicted", NODE]),
        (Limits(per_namespace=1), pods(1) + pods(1, "n2"), ["evicted", NAMESPACE]),
        (Limits(total=2), pods(2) + pods(1, "n2"), ["evicted", "evicted", TOTAL]),
        # The total limit is checked before the node limit, the node's before the namespace's.
        (Limits(per_node=1, total=1), pods(2), ["evicted", TOTAL]),
        (Limits(per_node=1, per_namespace=1), pods(2), ["evicted", NODE]),
        (Limits(), pods(3), ["evicted"] * 3),
    ],
)
def test_limits(limits: Limits, candidates: list[Pod], expected: list[str]) -> None:
    assert outcome(PodEvictor(limits), candidates) == expected


def test_the_error_kinds_plugins_react_to() -> None:
    evictor = PodEvictor(Limits(per_node=0, per_namespace=0, total=0))
    with pytest.raises(TotalLimitError):
        evictor.evict(pods(1)[0], OPTIONS)
    evictor = PodEvictor(Limits(per_node=0, per_namespace=0))
    with pytest.raises(NodeLimitError):
        evictor.evict(pods(1)[0], OPTIONS)
    evictor = PodEvictor(Limits(per_namespace=0))
    with pytest.raises(NamespaceLimitError):
        evictor.evict(pods(1)[0], OPTIONS)


def test_outstanding_evictions_count_and_are_never_repeated() -> None:
    [gone, other] = pods(2)
    evictor = PodEvictor(Limits(per_node=2), outstanding=[gone])
    assert outcome(evictor, [gone, other, *pods(1, "n1", "x")]) == [
        "pod default/n1-default-0 is already being evicted",
        "evicted",
        NODE,
    ]


def budget(allowed: int, disrupted: Sequence[str] = ()) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        metadata=ObjectMeta(name="web", namespace="default"),
        spec=PodDisruptionBudgetSpec(selector=LabelSelector(match_labels={"app": "web"})),
        status=PodDisruptionBudgetStatus(
            disruptions_allowed=allowed, disrupted_pods=dict.fromkeys(disrupted, "x")
        ),
    )


def test_a_budget_is_never_overspent() -> None:
    web = pods(3, app="web")
    refused = 'Cannot evict pod as it would violate the pod\'s disruption budget "web".'
    assert outcome(PodEvictor(pdbs=[budget(2)]), web) == ["evicted", "evicted", refused]
    # An outstanding eviction of a covered pod already spent one.
    assert outcome(PodEvictor(pdbs=[budget(2)], outstanding=web[:1]), web[1:]) == [
        "evicted",
        refused,
    ]
    with pytest.raises(BudgetError):
        PodEvictor(pdbs=[budget(0)]).evict(web[0], OPTIONS)


class Recorder:
    """A plugin at both points that records when it ran and evicts one pod."""

    log: list[str] = []

    def __init__(self, args: object, handle: object) -> None:
        self.handle = handle

    @property
    def name(self) -> str:
        return "Recorder"

    def deschedule(self, nodes: Sequence[Node]) -> str | None:
        Recorder.log.append(f"deschedule:{self.handle.evictor.profile}")  # type: ignore[attr-defined]
        return None

    def balance(self, nodes: Sequence[Node]) -> str | None:
        Recorder.log.append(f"balance:{self.handle.evictor.profile}")  # type: ignore[attr-defined]
        return "boom" if self.handle.evictor.profile == "b" else None  # type: ignore[attr-defined]


def test_every_profiles_deschedule_runs_before_any_balance() -> None:
    registry = {**in_tree_registry(), "Recorder": PluginEntry("Recorder", None, Recorder, Recorder)}
    both = {"deschedule": {"enabled": ["Recorder"]}, "balance": {"enabled": ["Recorder"]}}
    policy = load_policy(
        {
            "apiVersion": "descheduler/v1alpha2",
            "kind": "DeschedulerPolicy",
            "profiles": [{"name": "a", "plugins": both}, {"name": "b", "plugins": both}],
        },
        registry,
    )
    Recorder.log = []
    cluster = ClusterView([build_node("n1"), build_node("n2")], [], NOW)
    _, result = run_cycle(policy, registry, cluster, lambda pod, nodes: True)
    assert Recorder.log == ["deschedule:a", "deschedule:b", "balance:a", "balance:b"]
    assert result.errors == ['profile "b": plugin "Recorder" finished with error: boom']


@pytest.mark.parametrize(
    "nodes",
    [[build_node("n1")], [build_node("n1"), build_node("n2", ready=False)]],
    ids=["one node", "one Ready node"],
)
def test_a_cycle_needs_two_ready_nodes(nodes: list[Node]) -> None:
    policy = load_policy(
        {
            "apiVersion": "descheduler/v1alpha2",
            "kind": "DeschedulerPolicy",
            "profiles": [
                {"name": "p", "plugins": {"deschedule": {"enabled": ["RemoveFailedPods"]}}}
            ],
        },
        in_tree_registry(),
    )
    failed = [
        with_(
            build_pod("f", node="n1"),
            status_phase="Failed",
            meta_creation_timestamp="2020-01-01T00:00:00Z",
        )
    ]
    cluster = ClusterView(nodes, failed, NOW)
    evictor, result = run_cycle(policy, in_tree_registry(), cluster, lambda pod, nodes: True)
    assert evictor.evicted == []
    assert result.skipped == "Skipping descheduling cycle: requires >=2 nodes, found 1"


class _Silent:
    """An evictor plugin that refuses without saying why (out-of-tree plugins may)."""

    name = "Custom"

    def __init__(self, passes_filter: bool) -> None:
        self.passes_filter = passes_filter

    def filter(self, pod: Pod) -> bool:
        return self.passes_filter

    def pre_eviction_filter(self, pod: Pod) -> bool:
        return False


@pytest.mark.parametrize(
    ("passes_filter", "expected"),
    [(False, ["refused by Custom (filter)"]), (True, ["refused by Custom (preEvictionFilter)"])],
)
def test_a_plugin_that_gives_no_reason_is_named_as_the_reason(
    passes_filter: bool, expected: list[str]
) -> None:
    evictor = PodEvictor()
    profile = ProfileEvictor("p", evictor)
    plugin = _Silent(passes_filter)
    profile.wire([plugin], [plugin])
    pod = build_pod("a", node="n1")
    assert not (profile.filter(pod) and profile.pre_eviction_filter(pod))
    assert [(r.node, r.reasons) for r in evictor.not_evicted] == [("n1", expected)]
