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
from typing import Any, Final

import msgspec

HOSTNAME: Final = "kubernetes.io/hostname"


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
        """Measured pod ``i``, pending."""
        return self.measured_pod.pod(self.measured_namespace, i)

    def measured_key(self, i: int) -> str:
        """``namespace/name`` of measured pod ``i``."""
        return f"{self.measured_namespace}/{self.measured_pod.prefix}{i}"
