"""A workload ``ksched bench`` runs: its nodes, init pods, measured pods and churn.

Built by :mod:`bench.config` from a test case of ``ops/bench/workloads`` (upstream
scheduler_perf's shape). The templates are Kubernetes objects as YAML files; pod ``i`` of
a template is ``<generateName><i>`` in its op's namespace, with uid
``bench-<namespace>-<name>``; node ``i`` is ``node-i`` (the default node template's
``generateName``) and carries ``kubernetes.io/hostname: node-i``, as a kubelet would set
it. Init pods (upstream's ``initPods``, scheduled before the measurement starts) are
created already bound, pod ``i`` on node ``i mod nodes``, which is how the default
scheduler spreads identical pods over empty identical nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec

HOSTNAME: Final = "kubernetes.io/hostname"
POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"


@dataclass(frozen=True, slots=True)
class Template:
    """A node or pod template: the object, JSON-encoded once, and its name prefix
    (``metadata.generateName``)."""

    prefix: str
    encoded: bytes

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Template:
        meta = dict(obj.get("metadata") or {})
        prefix = str(meta.pop("generateName"))
        return cls(prefix, msgspec.json.encode({**obj, "metadata": meta}))

    def object(self, name: str) -> dict[str, Any]:
        """A fresh copy of the object, named ``name``, with ``metadata.labels`` present."""
        obj: dict[str, Any] = msgspec.json.decode(self.encoded)
        meta = obj["metadata"]
        meta["name"] = name
        meta["labels"] = meta.get("labels") or {}
        return obj

    def pod(self, namespace: str, i: int) -> dict[str, Any]:
        """Pod ``i`` of this template in ``namespace``, pending."""
        name = f"{self.prefix}{i}"
        pod = self.object(name)
        pod["metadata"]["namespace"] = namespace
        pod["metadata"]["uid"] = f"bench-{namespace}-{name}"
        pod.setdefault("spec", {})
        return pod


@dataclass(frozen=True, slots=True)
class Churn:
    """Upstream's ``churn`` op in ``create`` mode: a pod from ``template`` every
    ``interval`` seconds in ``namespace``, for as long as the measurement runs."""

    template: Template
    namespace: str
    interval: float

    def pod(self, i: int) -> dict[str, Any]:
        """Churn pod ``i``, pending."""
        return self.template.pod(self.namespace, i)


@dataclass(frozen=True, slots=True)
class Gangs:
    """ksched's ``createPodGroups`` op: the measured pods in groups of ``min_member``
    (the template's ``spec.minMember``), pod ``i`` in group ``i // min_member``, each
    group a PodGroup from ``template`` created with the setup."""

    template: Template
    min_member: int

    def count(self, pods: int) -> int:
        """Groups for ``pods`` measured pods (the last one may be short of members)."""
        return -(-pods // self.min_member)

    def name(self, i: int) -> str:
        return f"{self.template.prefix}{i}"

    def group(self, namespace: str, i: int, pods: int) -> dict[str, Any]:
        """PodGroup ``i`` of ``pods`` measured pods; the last one asks for the members
        it has when ``pods`` is not a multiple of ``min_member``."""
        obj = self.template.object(self.name(i))
        members = min(self.min_member, pods - i * self.min_member)
        obj.setdefault("spec", {})["minMember"] = members
        obj["metadata"]["namespace"] = namespace
        obj["metadata"]["uid"] = f"bench-{namespace}-{self.name(i)}"
        # Older groups first, as Coscheduling orders them: one second apart.
        obj["metadata"]["creationTimestamp"] = _timestamp(i)
        return obj


def _timestamp(i: int) -> str:
    hours, rest = divmod(i, 3600)
    return f"2024-01-{1 + hours // 24:02d}T{hours % 24:02d}:{rest // 60:02d}:{rest % 60:02d}Z"


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    node_template: Template
    init_pod: Template | None
    """None: the test case creates no init pods."""
    measured_pod: Template
    init_namespace: str
    measured_namespace: str
    reference_nodes: int
    """Nodes of upstream's ``performance`` workload, which the counts below go with."""
    init_pods: int
    measured_pods: int
    node_label: tuple[str, tuple[str, ...]] | None = None
    """``labelNodePrepareStrategy``: the key and the values dealt round-robin."""
    churn: Churn | None = None
    """Pods created during the measurement (None: none)."""
    gangs: Gangs | None = None
    """The measured pods' PodGroups (None: the pods belong to no group)."""
    scheduler_config: Path | None = None
    """The test case's KubeSchedulerConfiguration (``schedulerConfigPath``; None:
    upstream's default profile)."""

    def counts(
        self, nodes: int, init: int | None = None, measured: int | None = None
    ) -> tuple[int, int]:
        """Init and measured pods for ``nodes`` nodes: the given ones, else upstream's
        counts scaled from its ``performance`` workload's node count."""
        scale = nodes / self.reference_nodes
        if self.init_pod is None:
            init = 0
        return (
            init if init is not None else round(self.init_pods * scale),
            measured if measured is not None else max(1, round(self.measured_pods * scale)),
        )

    def node(self, i: int) -> dict[str, Any]:
        """Node ``i`` as ``kubectl get -o json`` would show it."""
        name = f"{self.node_template.prefix}{i}"
        node = self.node_template.object(name)
        labels = node["metadata"]["labels"]
        labels[HOSTNAME] = name
        if self.node_label is not None:
            key, values = self.node_label
            labels[key] = values[i % len(values)]
        return node

    def node_name(self, i: int) -> str:
        return f"{self.node_template.prefix}{i}"

    def init(self, i: int, nodes: int) -> dict[str, Any]:
        """Init pod ``i``, bound to node ``i mod nodes``."""
        assert self.init_pod is not None, f"{self.name} creates no init pods"
        pod = self.init_pod.pod(self.init_namespace, i)
        pod["spec"]["nodeName"] = self.node_name(i % nodes)
        return pod

    def measured(self, i: int) -> dict[str, Any]:
        """Measured pod ``i``, pending (in group ``i // minMember`` with gangs)."""
        pod = self.measured_pod.pod(self.measured_namespace, i)
        if self.gangs is not None:
            pod["metadata"]["labels"][POD_GROUP_LABEL] = self.gangs.name(i // self.gangs.min_member)
        return pod

    @property
    def timed_to_binding(self) -> bool:
        """Whether a measured pod counts only once bound: gang members and preemptors
        fail first (PreFilter, a preemption) and bind later."""
        spec = msgspec.json.decode(self.measured_pod.encoded).get("spec") or {}
        return self.gangs is not None or bool(spec.get("priority"))

    def groups(self, pods: int) -> list[dict[str, Any]]:
        """The PodGroups of ``pods`` measured pods (none without gangs)."""
        if self.gangs is None:
            return []
        gangs = self.gangs
        return [gangs.group(self.measured_namespace, i, pods) for i in range(gangs.count(pods))]

    def measured_key(self, i: int) -> str:
        """``namespace/name`` of measured pod ``i``."""
        return f"{self.measured_namespace}/{self.measured_pod.prefix}{i}"
