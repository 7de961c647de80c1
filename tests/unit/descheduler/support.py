"""Builders for the ports of the descheduler's test tables: ``test.BuildTestNode`` /
``test.BuildTestPod`` as upstream's ``test`` package builds them, and one plugin run
on an evictor (``frameworktesting.InitFrameworkHandle``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from contracts.k8s import (
    Node,
    NodeCondition,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodDisruptionBudget,
    Taint,
)
from services.descheduler.api import ClusterView
from services.descheduler.evictions import Limits, PodEvictor
from services.descheduler.nodefit import SchedulerFit
from services.descheduler.plugins.defaultevictor import DefaultEvictor, DefaultEvictorArgs
from services.descheduler.profile import PluginHandle, ProfileEvictor
from tests.builders import make_node, make_pod

NOW = 1_700_000_000.0
"""The tests' ``metav1.Now()``."""
STAMP = "2023-11-14T22:13:20Z"
"""NOW as RFC 3339."""


def build_node(
    name: str,
    millicpu: int = 2000,
    memory: int = 3000,
    pods: int = 10,
    *,
    unschedulable: bool = False,
    labels: dict[str, str] | None = None,
    taints: Sequence[Taint] = (),
    ready: bool = True,
    extended: Mapping[str, int] | None = None,
) -> Node:
    """``test.BuildTestNode(name, millicpu, memory, pods)``; ``extended``: extended
    resources and their amounts (``test.SetNodeExtendedResource``)."""
    extra = {resource: str(amount) for resource, amount in (extended or {}).items()}
    node = make_node(
        name,
        allocatable={"cpu": f"{millicpu}m", "memory": str(memory), "pods": pods, **extra},
        labels=labels or {},
        unschedulable=unschedulable,
    )
    status = msgspec.structs.replace(
        node.status,
        conditions=[NodeCondition(type="Ready", status="True" if ready else "False")],
    )
    spec = msgspec.structs.replace(node.spec, taints=list(taints))
    return msgspec.structs.replace(node, status=status, spec=spec)


RS_OWNER = [OwnerReference(kind="ReplicaSet", api_version="v1", name="replicaset-1")]
NORMAL = [OwnerReference(kind="Pod", api_version="v1", name="pod-owner", uid="owner")]
"""``test.GetNormalPodOwnerRefList``."""
DS = [OwnerReference(kind="DaemonSet", api_version="v1", name="ds")]
"""A DaemonSet owner (``test.GetDaemonSetOwnerRefList``, named)."""


def build_pod(
    name: str,
    millicpu: int = 1,
    memory: int = 1,
    node: str | None = None,
    *,
    owners: Sequence[OwnerReference] = RS_OWNER,
    created: str = STAMP,
    **changes: Any,
) -> Pod:
    """``test.BuildTestPod(name, cpu, memory, node)`` with ``GetReplicaSetOwnerRefList``
    owners and a creation time of NOW; ``changes``: ``status=``, ``spec=`` fields or
    ``metadata=`` replacements via :func:`with_`."""
    pod = make_pod(name, requests={"cpu": f"{millicpu}m", "memory": str(memory)}, node_name=node)
    meta = msgspec.structs.replace(
        pod.metadata, owner_references=list(owners), creation_timestamp=created
    )
    pod = msgspec.structs.replace(pod, metadata=meta)
    return with_(pod, **changes) if changes else pod


def owned_pod(
    name: str, node: str = "n1", owners: Sequence[OwnerReference] = NORMAL, **changes: Any
) -> Pod:
    """``test.BuildTestPod(name, 100, 0, node)`` with the normal owner (``owners``) and
    ``changes`` as :func:`with_` takes them: most plugin tables' pod."""
    return build_pod(name, 100, 0, node, owners=owners, **changes)


def with_(pod: Pod, **changes: Any) -> Pod:
    """Replace fields: ``status_phase="Failed"`` → status.phase; ``meta_annotations``;
    ``spec_tolerations``…"""
    status, spec, meta = pod.status, pod.spec, pod.metadata
    for field, value in changes.items():
        part, _, name = field.partition("_")
        if part == "status":
            status = msgspec.structs.replace(status, **{name: value})
        elif part == "spec":
            spec = msgspec.structs.replace(spec, **{name: value})
        elif part == "meta":
            meta = msgspec.structs.replace(meta, **{name: value})
        else:
            raise TypeError(field)
    return msgspec.structs.replace(pod, status=status, spec=spec, metadata=meta)


def run_plugin(
    new: Callable[[Any, Any], Any],
    args: Any,
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    *,
    evictor_args: DefaultEvictorArgs | None = None,
    limits: Limits | None = None,
    pdbs: Sequence[PodDisruptionBudget] = (),
    now: float = NOW,
    balance: bool = False,
    errors: list[str | None] | None = None,
    **view: Any,
) -> PodEvictor:
    """Build the plugin on a handle whose evictor is DefaultEvictor (``evictor_args``)
    and run it over every node: the evictor, with ``evicted`` in order; the plugin's
    error (or None) is appended to ``errors``."""
    cluster = ClusterView(list(nodes), list(pods), now, pdbs=list(pdbs), **view)
    evictor = PodEvictor(limits or Limits(), pdbs=list(pdbs))
    handle = PluginHandle(ProfileEvictor("test", evictor), cluster, SchedulerFit(cluster))
    default = DefaultEvictor(evictor_args or DefaultEvictorArgs(), handle)
    handle.evictor.wire([default], [default])
    plugin = new(args, handle)
    error = getattr(plugin, "balance" if balance else "deschedule")(list(nodes))
    if errors is not None:
        errors.append(error)
    return evictor


def evicted_names(evictor: PodEvictor) -> list[str]:
    return [e.pod.metadata.name for e in evictor.evicted]


def meta(name: str, namespace: str = "default") -> ObjectMeta:
    return ObjectMeta(name=name, namespace=namespace)
