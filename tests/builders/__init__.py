"""``make_pod`` / ``make_node``: test objects in a line, as upstream's ``st.MakePod()``.

Quantities are given as Kubernetes strings (or numbers) exactly as in a manifest::

    make_pod("web", requests={"cpu": "500m"})                 # one container
    make_pod(requests=[{"cpu": "1"}, {"cpu": "2"}])            # two containers
    make_pod(init=[sidecar({"cpu": "1"}), {"cpu": "2"}])      # a sidecar, then an init
    make_pod(containers=1)                                     # one container, no requests
    make_node("n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})
    manifest(make_node("n1"), make_pod("web"))                 # a file for ksched simulate

Like upstream's builder, a pod has no container unless asked for one. Storage objects are
built by :mod:`tests.builders.volumes`, Services and controllers by
:mod:`tests.builders.workloads`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from contracts.k8s import (
    DEFAULT_SCHEDULER_NAME,
    Affinity,
    Container,
    ContainerImage,
    ContainerPort,
    Node,
    NodeSpec,
    NodeStatus,
    ObjectMeta,
    Pod,
    PodSchedulingGate,
    PodSpec,
    PodStatus,
    Quantity,
    ResourceRequirements,
    Taint,
    Toleration,
    Volume,
)
from tests.builders.volumes import claim_volume

Requests = Mapping[str, Quantity]
TERMINATING = "2024-01-01T00:00:00Z"
"""The deletion timestamp of a ``make_pod(terminating=True)`` pod."""
ContainerSpec = Requests | Container


def container(
    requests: Requests | None = None,
    *,
    limits: Requests | None = None,
    name: str = "",
    restart_policy: str | None = None,
    image: str | None = None,
    ports: Sequence[ContainerPort] = (),
) -> Container:
    return Container(
        name=name,
        image=image,
        resources=ResourceRequirements(requests=dict(requests or {}), limits=dict(limits or {})),
        ports=list(ports),
        restart_policy=restart_policy,
    )


def host_port(port: int, protocol: str = "TCP", host_ip: str = "") -> ContainerPort:
    """A container port published on the node (``hostPort``)."""
    return ContainerPort(
        container_port=port, host_port=port, protocol=protocol, host_ip=host_ip or None
    )


def sidecar(requests: Requests | None = None, *, name: str = "") -> Container:
    """A restartable init container (``restartPolicy: Always``)."""
    return container(requests, name=name, restart_policy="Always")


def _containers(specs: Sequence[ContainerSpec], prefix: str) -> list[Container]:
    out = []
    for i, spec in enumerate(specs):
        c = spec if isinstance(spec, Container) else container(spec)
        out.append(c if c.name else msgspec.structs.replace(c, name=f"{prefix}{i}"))
    return out


def make_pod(
    name: str = "pod",
    namespace: str = "default",
    *,
    uid: str | None = None,
    resource_version: str | None = None,
    requests: Requests | Sequence[ContainerSpec] | None = None,
    containers: int = 0,
    init: Sequence[ContainerSpec] = (),
    overhead: Requests | None = None,
    priority: int | None = None,
    priority_class_name: str | None = None,
    preemption_policy: str | None = None,
    node_name: str | None = None,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    labels: Mapping[str, str] | None = None,
    phase: str | None = None,
    nominated_node_name: str | None = None,
    deletion_timestamp: str | None = None,
    terminating: bool = False,
    volumes: Sequence[Volume] = (),
    claims: Sequence[str] = (),
    tolerations: Sequence[Toleration] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Affinity | None = None,
    scheduling_gates: Sequence[str] = (),
    qos_class: str | None = None,
) -> Pod:
    """A pod. ``requests``: one container's requests, or one entry per container;
    ``containers=n`` adds n containers without requests; ``claims``: a volume per named
    PVC after ``volumes`` (upstream's ``.PVC(name)``); ``terminating``: a deletion
    timestamp (:data:`TERMINATING`) unless one is given (upstream's ``.Terminating()``).
    ``uid`` defaults to ``<namespace>-<name>-uid``."""
    specs: list[ContainerSpec]
    if requests is None:
        specs = []
    elif isinstance(requests, Mapping):
        specs = [requests]
    else:
        specs = list(requests)
    specs += [{} for _ in range(containers)]
    return Pod(
        metadata=ObjectMeta(
            name=name,
            namespace=namespace,
            uid=uid if uid is not None else f"{namespace}-{name}-uid",
            labels=dict(labels or {}),
            resource_version=resource_version,
            deletion_timestamp=deletion_timestamp or (TERMINATING if terminating else None),
        ),
        spec=PodSpec(
            node_name=node_name,
            scheduler_name=scheduler_name,
            priority=priority,
            priority_class_name=priority_class_name,
            preemption_policy=preemption_policy,
            containers=_containers(specs, "c"),
            init_containers=_containers(init, "i"),
            overhead=dict(overhead or {}),
            volumes=[*volumes, *(claim_volume(c) for c in claims)],
            tolerations=list(tolerations),
            node_selector=dict(node_selector or {}),
            affinity=affinity,
            scheduling_gates=[PodSchedulingGate(name=g) for g in scheduling_gates],
        ),
        status=PodStatus(phase=phase, nominated_node_name=nominated_node_name, qos_class=qos_class),
    )


def make_node(
    name: str = "node",
    *,
    allocatable: Mapping[str, Quantity] | None = None,
    capacity: Mapping[str, Quantity] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint | tuple[str, str, str]] = (),
    unschedulable: bool = False,
    images: Sequence[tuple[Sequence[str], int]] = (),
) -> Node:
    """A node. ``allocatable`` defaults to ``capacity`` (and both to 4 cpu, 32Gi, 110
    pods when neither is given); ``taints`` as Taint or ``(key, value, effect)``;
    ``images`` as ``(names, sizeBytes)`` for ``status.images``."""
    if allocatable is None and capacity is None:
        allocatable = {"cpu": "4", "memory": "32Gi", "pods": 110}
    alloc = dict(allocatable if allocatable is not None else capacity or {})
    return Node(
        metadata=ObjectMeta(name=name, uid=f"{name}-uid", labels=dict(labels or {})),
        spec=NodeSpec(
            unschedulable=unschedulable,
            taints=[
                t if isinstance(t, Taint) else Taint(key=t[0], value=t[1], effect=t[2])
                for t in taints
            ],
        ),
        status=NodeStatus(
            capacity=dict(capacity if capacity is not None else alloc),
            allocatable=alloc,
            images=[ContainerImage(names=list(n), size_bytes=size) for n, size in images],
        ),
    )


def manifest(*documents: object) -> str:
    """A cluster file as ``ksched simulate`` reads it: each built object as a JSON
    document (a string as written), ``---`` between them."""
    texts = [d if isinstance(d, str) else msgspec.json.encode(d).decode() for d in documents]
    return "\n---\n".join(t.strip() for t in texts) + "\n"
