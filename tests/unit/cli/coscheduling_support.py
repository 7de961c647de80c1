"""Builders for scheduler-plugins' Coscheduling integration scenarios
(test/integration/coscheduling_test.go at 903da7d) as ``ksched simulate`` cluster
files: nodes, ``scheduling.x-k8s.io/v1alpha1`` PodGroups as upstream's ``util.MakePG``
makes them, pods as its ``st.MakePod()...Label(PodGroupLabel, ...)`` chains, and the
profile the test builds from the default one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.cli.simulate import load_cluster, simulate
from services.framework.config import Profile, load_config

NS = "integration-test"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
# test/integration/utils.go: lowPriority, midPriority, highPriority = 0, 100, 1000
MID_PRIORITY = 100
HIGH_PRIORITY = 1000


def node(name: str, **allocatable: str) -> str:
    """st.MakeNode().Name(name).Label("node", name) with Status.Allocatable (and
    Capacity) set to ``allocatable`` plus ``pods: 32``, as upstream sets them."""
    resources = ", ".join(f"{k}: '{v}'" for k, v in {**allocatable, "pods": "32"}.items())
    return (
        f"kind: Node\nmetadata: {{name: {name}, labels: {{node: {name}}}}}\n"
        f"status: {{allocatable: {{{resources}}}, capacity: {{{resources}}}}}\n"
    )


def pod_group(name: str, min_member: int, min_memory: str | None = None) -> str:
    """util.MakePG(name, ns, min, nil, minResource): scheduleTimeoutSeconds 10, and
    ``minResources: {memory: min_memory}`` when given."""
    spec = f"minMember: {min_member}, scheduleTimeoutSeconds: 10"
    if min_memory is not None:
        spec += f", minResources: {{memory: '{min_memory}'}}"
    return (
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
        f"metadata: {{name: {name}, namespace: {NS}}}\nspec: {{{spec}}}\n"
    )


def pod(
    name: str,
    group: str | None,
    *,
    priority: int = MID_PRIORITY,
    node_name: str = "",
    phase: str = "",
    **requests: str,
) -> str:
    """st.MakePod().Namespace(ns).Name(name).Req(requests).Priority(priority)
    [.Label(PodGroupLabel, group)].ZeroTerminationGracePeriod() [.Node(..).Phase(..)]."""
    labels = f", labels: {{{GROUP_LABEL}: {group}}}" if group else ""
    reqs = ", ".join(f"{k}: '{v}'" for k, v in requests.items())
    spec = [
        f"priority: {priority}",
        "terminationGracePeriodSeconds: 0",
        f"containers: [{{name: con0, image: pause, resources: {{requests: {{{reqs}}}}}}}]",
    ]
    if node_name:
        spec.append(f"nodeName: {node_name}")
    status = f"\nstatus: {{phase: {phase}}}" if phase else ""
    return (
        f"kind: Pod\nmetadata: {{name: {name}, namespace: {NS}{labels}}}\n"
        f"spec: {{{', '.join(spec)}}}{status}\n"
    )


def upstream_profiles(**args: int) -> list[Profile]:
    """The test's profile: the default plugins, QueueSort replaced by Coscheduling, and
    Coscheduling appended at PreFilter, PostFilter and Permit (not Reserve), with
    CoschedulingArgs ``args`` (e.g. permitWaitingTimeSeconds=3)."""
    coscheduling = {"enabled": [{"name": "Coscheduling"}]}
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "queueSort": {**coscheduling, "disabled": [{"name": "*"}]},
                    "preFilter": coscheduling,
                    "postFilter": coscheduling,
                    "permit": coscheduling,
                },
                "pluginConfig": [{"name": "Coscheduling", "args": args}],
            }
        ],
    }
    return list(load_config(config).profiles)


async def bound_pods(docs: Sequence[str], profiles: Sequence[Profile]) -> set[str]:
    """Simulate the cluster made of ``docs`` (nodes, groups, pods; every pending pod is
    queued in file order) and return the names of the pods the run binds."""
    text = "---\n".join(docs)
    records = await simulate(load_cluster(text, "coscheduling.yaml"), seed=0, profiles=profiles)
    return {r.pod.split("/")[1] for r in records if r.kind == "Binding"}
