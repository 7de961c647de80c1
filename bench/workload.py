"""A workload ``ksched bench`` runs: its nodes, init pods, measured pods and churn.

Built by :mod:`bench.config` from a test case of ``ops/bench/workloads`` (upstream
scheduler_perf's shape). The templates are Kubernetes objects as YAML files; object ``i``
of a template is ``<generateName><i>`` (in its op's namespace for a namespaced kind),
with uid ``bench-<namespace>-<name>`` (``bench-<name>`` for a cluster-scoped one); node
``i`` is ``node-i`` (the default node template's ``generateName``) and carries
``kubernetes.io/hostname: node-i``, as a kubelet would set it. A node op with a fixed
``count`` (upstream's SchedulingDaemonset: one node named by its template's
``metadata.name``) adds its nodes to the ``--nodes`` ones, before them. Init pods
(upstream's ``initPods``, scheduled before the measurement starts) are created already
bound, pod ``i`` on node ``i mod nodes``, which is how the default scheduler spreads
identical pods over empty identical nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from bench.dra import DraSetup, fill_index
from bench.steady import Steady
from contracts.kinds import NAMESPACED

HOSTNAME: Final = "kubernetes.io/hostname"
POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"


@dataclass(frozen=True, slots=True)
class Template:
    """A node or pod template: the object, JSON-encoded once, and its name prefix
    (``metadata.generateName``)."""

    prefix: str
    encoded: bytes
    kind: str = "pod"
    """The routing-key kind of the template's objects (``pod``, ``node``, …)."""
    named: bool = False
    """The template has a ``metadata.name`` instead (one object, that name)."""

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Template:
        meta = dict(obj.get("metadata") or {})
        kind = str(obj.get("kind", "Pod")).lower()
        if "generateName" not in meta:
            return cls(str(meta.pop("name")), msgspec.json.encode(obj), kind, named=True)
        prefix = str(meta.pop("generateName"))
        return cls(prefix, msgspec.json.encode({**obj, "metadata": meta}), kind)

    def name(self, i: int) -> str:
        return self.prefix if self.named else f"{self.prefix}{i}"

    def instance(self, namespace: str, i: int) -> dict[str, Any]:
        """Object ``i`` of this template, with its uid, in ``namespace`` when its kind is
        namespaced."""
        name = self.name(i)
        obj = self.object(name)
        if self.kind in NAMESPACED:
            obj["metadata"]["namespace"] = namespace
            obj["metadata"]["uid"] = f"bench-{namespace}-{name}"
        else:
            obj["metadata"]["uid"] = f"bench-{name}"
        return obj

    def object(self, name: str) -> dict[str, Any]:
        """A fresh copy of the object, named ``name``, with ``metadata.labels`` present."""
        obj: dict[str, Any] = msgspec.json.decode(self.encoded)
        meta = obj["metadata"]
        meta["name"] = name
        meta["labels"] = meta.get("labels") or {}
        return obj

    def pod(self, namespace: str, i: int) -> dict[str, Any]:
        """Pod ``i`` of this template in ``namespace``, pending (upstream's ``{{.Index}}``
        expressions filled in)."""
        pod = self.instance(namespace, i)
        if b"{{" in self.encoded:
            pod = fill_index(pod, i)
        pod.setdefault("spec", {})
        return pod


@dataclass(frozen=True, slots=True)
class Churn:
    """Upstream's ``churn`` op: every ``interval`` seconds, for as long as the
    measurement runs, one step over ``templates`` (in ``namespace`` for the namespaced
    kinds). ``create``: an object of each template, for ``number`` steps (0: no end).
    ``recreate``: step ``k`` creates an object of each template in slot ``k mod
    number`` when the slot is empty, else deletes the one there (with ``number`` 1:
    created, deleted, created, …)."""

    templates: tuple[Template, ...]
    namespace: str
    interval: float
    mode: Literal["create", "recreate"] = "create"
    number: int = 0

    def object(self, template: int, i: int) -> dict[str, Any]:
        """Object ``i`` of template ``template`` (a pod pending, a node, a service…)."""
        chosen = self.templates[template]
        if chosen.kind == "pod":
            return chosen.pod(self.namespace, i)
        return chosen.instance(self.namespace, i)


@dataclass(frozen=True, slots=True)
class Gangs:
    """ksched's ``createPodGroups`` op: the measured pods in groups of ``min_member``
    (the template's ``spec.minMember``), pod ``i`` in group ``i // min_member``, each
    group a PodGroup from ``template`` created with the setup."""

    template: Template
    min_member: int
    native: bool = False
    """A native ``scheduling.k8s.io`` PodGroup (``minCount``, pods join by
    ``spec.schedulingGroup``) rather than scheduler-plugins' (``minMember``, a label)."""

    @property
    def kind(self) -> str:
        """The groups' routing kind."""
        return "schedulingpodgroup" if self.native else "podgroup"

    def join(self, pod: dict[str, Any], i: int) -> None:
        """Make ``pod`` a member of group ``i``."""
        if self.native:
            pod["spec"]["schedulingGroup"] = {"podGroupName": self.name(i)}
        else:
            pod["metadata"]["labels"][POD_GROUP_LABEL] = self.name(i)

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
        if self.native:
            gang = (
                obj.setdefault("spec", {}).setdefault("schedulingPolicy", {}).setdefault("gang", {})
            )
            gang["minCount"] = members
        else:
            obj.setdefault("spec", {})["minMember"] = members
        obj["metadata"]["namespace"] = namespace
        obj["metadata"]["uid"] = f"bench-{namespace}-{self.name(i)}"
        # Older groups first, as Coscheduling orders them: one second apart.
        obj["metadata"]["creationTimestamp"] = _timestamp(i)
        return obj


def _hostname(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` labelled ``kubernetes.io/hostname: <its name>`` (unless its template
    says otherwise), as a kubelet labels its node."""
    meta = node["metadata"]
    meta["labels"] = {HOSTNAME: meta["name"], **(meta.get("labels") or {})}
    return node


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
    fixed_nodes: tuple[tuple[Template, int], ...] = ()
    """The createNodes ops with a fixed ``count``: (template, count), created before the
    ``--nodes`` ones whatever ``--nodes`` is."""
    dra: DraSetup | None = None
    """The DRA ops (slices, classes, claims, templates; :mod:`bench.dra`)."""
    steady: Steady | None = None
    """The measured createPods op keeps a number of pods pending for a while
    (``steadyState``; :mod:`bench.steady`); the measured count is that number."""
    feature_gates: str = ""
    """The test case's ``featureGates`` as ``--feature-gates`` text ("": the defaults)."""

    def setup(
        self, nodes: int, init: int, pods: int
    ) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
        """The DRA setup objects (none without DRA ops) and the ``init`` init pods."""
        init_pods = [self.init(i, nodes) for i in range(init)]
        if self.dra is None:
            return [], init_pods
        names = [self.node_name(i) for i in range(nodes)]
        measured = [self.measured(i) for i in range(pods)]
        return self.dra.build(names, init_pods, measured, nodes / self.reference_nodes)

    def total_nodes(self, nodes: int) -> int:
        """Every node of a run with ``nodes`` nodes of the scaled op."""
        return nodes + sum(count for _, count in self.fixed_nodes)

    def all_nodes(self, nodes: int) -> list[dict[str, Any]]:
        """The fixed ops' nodes, then ``nodes`` nodes of the scaled op."""
        fixed = [
            _hostname(template.instance("", i))
            for template, count in self.fixed_nodes
            for i in range(count)
        ]
        return fixed + [self.node(i) for i in range(nodes)]

    def counts(
        self, nodes: int, init: int | None = None, measured: int | None = None
    ) -> tuple[int, int]:
        """Init and measured pods for ``nodes`` nodes: the given ones, else upstream's
        counts scaled from its ``performance`` workload's node count."""
        scale = nodes / self.reference_nodes
        if self.init_pod is None:
            init = 0
        if self.steady is not None and measured is None:
            measured = self.steady.in_flight
        return (
            init if init is not None else round(self.init_pods * scale),
            measured if measured is not None else max(1, round(self.measured_pods * scale)),
        )

    def node(self, i: int) -> dict[str, Any]:
        """Node ``i`` as ``kubectl get -o json`` would show it."""
        name = f"{self.node_template.prefix}{i}"
        node = _hostname(self.node_template.object(name))
        labels = node["metadata"]["labels"]
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
            self.gangs.join(pod, i // self.gangs.min_member)
        return pod

    @property
    def timed_to_binding(self) -> bool:
        """Whether a measured pod counts only once bound: gang members and preemptors
        fail first (PreFilter, a preemption) and bind later, a pod with DRA claims may
        wait for its claim first, and a steady state replaces bound pods."""
        spec = msgspec.json.decode(self.measured_pod.encoded).get("spec") or {}
        return (
            self.gangs is not None
            or self.dra is not None
            or self.steady is not None
            or bool(spec.get("priority"))
        )

    def groups(self, pods: int) -> list[dict[str, Any]]:
        """The PodGroups of ``pods`` measured pods (none without gangs)."""
        if self.gangs is None:
            return []
        gangs = self.gangs
        return [gangs.group(self.measured_namespace, i, pods) for i in range(gangs.count(pods))]

    def measured_key(self, i: int) -> str:
        """``namespace/name`` of measured pod ``i``."""
        return f"{self.measured_namespace}/{self.measured_pod.prefix}{i}"
