"""Upstream's Workload/PodGroup integration scenarios (test/integration/scheduler,
``TestPodGroupScheduling``) as ``ksched simulate`` cases, with GenericWorkload and
GangScheduling on: one node of 4 CPU, gang pods of 1 CPU each, a PodGroup ``pg`` of
``minCount`` 3 (or basic). Upstream runs each as steps against a live scheduler;
simulate takes the cluster at one moment, so each case is the state its steps end in
(the blocker already bound) and checks where the pods go or why they wait."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from services.cli.simulate import load_cluster, simulate
from services.common import features
from services.framework.config import load_config

NS = "gang-scheduling"
NODE = "kind: Node\nmetadata: {name: node}\nstatus: {allocatable: {cpu: '4', pods: '110'}}\n"
MIN_COUNT_MESSAGE = "waiting for minCount pods from a gang to appear in scheduling queue"


@pytest.fixture(autouse=True)
def _gates() -> Iterator[None]:
    features.install(features.parse("GenericWorkload=true,GangScheduling=true"))
    yield
    features.install(features.DEFAULTS)


def pod_group(name: str = "pg", min_count: int | None = 3) -> str:
    policy = "{basic: {}}" if min_count is None else f"{{gang: {{minCount: {min_count}}}}}"
    return (
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\n"
        f"metadata: {{name: {name}, namespace: {NS}}}\n"
        f"spec: {{schedulingPolicy: {policy}}}\n"
    )


def pod(
    name: str,
    group: str | None = "pg",
    *,
    cpu: str = "1",
    priority: int = 100,
    node: str = "",
    labels: str = "",
) -> str:
    spec = [
        f"priority: {priority}",
        f"containers: [{{name: c, resources: {{requests: {{cpu: '{cpu}'}}}}}}]",
    ]
    if group:
        spec.append(f"schedulingGroup: {{podGroupName: {group}}}")
    if node:
        spec.append(f"nodeName: {node}")
    return f"kind: Pod\nmetadata: {{name: {name}, namespace: {NS}}}\nspec: {{{', '.join(spec)}}}\n"


def cluster(*docs: str) -> str:
    return "---\n".join((NODE, *docs))


GANG = [pod(f"p{i}") for i in (1, 2, 3)]


@dataclass(frozen=True)
class Case:
    text: str
    bound: frozenset[str]
    """The pods the run binds (a blocker is bound already)."""
    unschedulable: frozenset[str] = frozenset()
    held_back: tuple[tuple[str, str], ...] = ()
    """(pod, PreEnqueue message) for pods that never got past PreEnqueue."""


CASES = {
    "gang schedules when workload and resources are available": Case(
        cluster(pod_group(), *GANG), frozenset({"p1", "p2", "p3"})
    ),
    "gang waits for quorum to start": Case(
        cluster(pod_group(), *GANG[:2]),
        frozenset(),
        held_back=(("p1", MIN_COUNT_MESSAGE), ("p2", MIN_COUNT_MESSAGE)),
    ),
    "gang waits for its pod group": Case(
        cluster(*GANG),
        frozenset(),
        held_back=tuple(
            (f"p{i}", 'waiting for pod\'s pod group "pg" to appear in scheduling queue')
            for i in (1, 2, 3)
        ),
    ),
    "gang waits for resources (Permit timeout due to resource blocker)": Case(
        cluster(pod("blocker", None, cpu="2", node="node"), pod_group(), *GANG),
        frozenset(),
        unschedulable=frozenset({"p1", "p2", "p3"}),
    ),
    "minCount is scheduled, but one pod from a gang remains unschedulable": Case(
        cluster(pod("small-blocker", None, node="node"), pod_group(), *GANG, pod("p4")),
        frozenset({"p1", "p2", "p3"}),
        unschedulable=frozenset({"p4"}),
    ),
    "two gangs competing for the same resources shouldn't deadlock": Case(
        cluster(
            pod_group(),
            pod_group("other-pg"),
            *(p for i in (1, 2, 3) for p in (pod(f"p{i}"), pod(f"other-p{i}", "other-pg"))),
        ),
        frozenset({"p1", "p2", "p3"}),
        unschedulable=frozenset({"other-p1", "other-p2", "other-p3"}),
    ),
    "gang schedules with preemption": Case(
        cluster(
            pod("low-priority-blocker", None, cpu="2", priority=10, node="node"),
            pod_group(),
            *GANG,
            pod("p4"),
        ),
        frozenset({"p1", "p2", "p3", "p4"}),
    ),
    "basic group schedules without gang enforcement": Case(
        cluster(pod_group(min_count=None), pod("p1")),
        frozenset({"p1"}),
    ),
    "basic group schedules with preemption": Case(
        cluster(
            pod("low-priority-blocker", None, cpu="2", priority=10, node="node"),
            pod_group(min_count=None),
            *GANG,
            pod("p4"),
        ),
        frozenset({"p1", "p2", "p3", "p4"}),
    ),
    "basic group: part of it waits for resources": Case(
        cluster(pod("blocker", None, cpu="2", node="node"), pod_group(min_count=None), *GANG),
        frozenset({"p1", "p2"}),
        unschedulable=frozenset({"p3"}),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_workload_scenario(case: Case) -> None:
    records = await simulate(load_cluster(case.text, "gang.yaml"), seed=0)
    bound = {r.pod.split("/")[1] for r in records if r.kind == "Binding"}
    assert bound == case.bound
    failed = {r.pod.split("/")[1] for r in records if r.kind == "FailedScheduling"}
    assert failed - bound == case.unschedulable
    held = tuple(
        (r.pod.split("/")[1], r.message) for r in records if r.kind == "NotReadyForScheduling"
    )
    assert held == case.held_back


async def test_coscheduling_and_gang_scheduling_together_on_different_pods() -> None:
    """One profile with Coscheduling (scheduler-plugins' PodGroup, by label) and
    GangScheduling (the native PodGroup): each gang binds whole, a gang short of its
    members binds nothing."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "*"}],
                    },
                },
            }
        ],
    }
    plugins_group = (
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
        f"metadata: {{name: cos, namespace: {NS}}}\nspec: {{minMember: 2}}\n"
    )
    labelled = [pod(f"c{i}", None, labels="scheduling.x-k8s.io/pod-group: cos") for i in (1, 2)]
    text = cluster(
        plugins_group,
        pod_group(min_count=2),
        pod_group("short", min_count=3),
        *labelled,
        pod("n1"),
        pod("n2"),
        pod("s1", "short"),
    )
    profiles = load_config(config).profiles
    assert "GangScheduling" in [p.name for p in profiles[0].plugins.multi_point.enabled]
    records = await simulate(load_cluster(text, "mixed.yaml"), seed=0, profiles=profiles)
    bound = {r.pod.split("/")[1] for r in records if r.kind == "Binding"}
    assert bound == {"c1", "c2", "n1", "n2"}
    held = {r.pod.split("/")[1]: r.plugin for r in records if r.kind == "NotReadyForScheduling"}
    assert held == {"s1": "GangScheduling"}
