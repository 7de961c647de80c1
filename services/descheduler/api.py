"""The descheduler framework's types (descheduler ``pkg/framework/types``): the cluster
a cycle sees, the evictor plugins ask, the plugin interfaces and the eviction errors
whose kind each plugin reacts to.

The cluster is a read-only view for one cycle (:class:`ClusterView`): Ready nodes,
pods by node in a stable order (file / log order), and the objects the evictor and the
plugins look up (namespaces, PDBs, claims, priority classes). ``now`` is the cycle's
clock, injected, so age-based plugins are testable and ``deschedule --now`` works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from contracts.k8s import (
    Namespace,
    Node,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodMetrics,
    PriorityClass,
)


class EvictionError(Exception):
    """An eviction the evictor refused; ``str()`` is upstream's message."""


class NodeLimitError(EvictionError):
    def __init__(self, node: str) -> None:
        self.node = node
        super().__init__("maximum number of evicted pods per node reached")


class NamespaceLimitError(EvictionError):
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        super().__init__("maximum number of evicted pods per namespace reached")


class TotalLimitError(EvictionError):
    def __init__(self) -> None:
        super().__init__("maximum number of evicted pods per a descheduling cycle reached")


class BudgetError(EvictionError):
    """The pod's PodDisruptionBudget allows no more disruptions (the API server's 429
    ``Cannot evict pod as it would violate the pod's disruption budget.``)."""

    def __init__(self, budget: str) -> None:
        self.budget = budget
        super().__init__(
            f'Cannot evict pod as it would violate the pod\'s disruption budget "{budget}".'
        )


@dataclass(frozen=True, slots=True)
class EvictOptions:
    """``evictions.EvictOptions``: who asks, for the Eviction, its Event and metrics."""

    plugin: str
    profile: str = ""
    reason: str = ""


class Evictor(Protocol):
    """What plugins get from their Handle (``frameworktypes.Evictor``)."""

    def filter(self, pod: Pod) -> bool:
        """Every Filter of the profile's evictor plugins (DefaultEvictor)."""
        ...

    def pre_eviction_filter(self, pod: Pod) -> bool:
        """Every PreEvictionFilter (nodeFit, namespace labels), right before evicting."""
        ...

    def evict(self, pod: Pod, options: EvictOptions) -> None:
        """Evict within the limits, or raise an :class:`EvictionError`."""
        ...


@dataclass(frozen=True, slots=True)
class PrometheusUsage:
    """One Prometheus query's answer: each node's usage in percent, or why there is
    none (upstream's message)."""

    nodes: Mapping[str, int] = field(default_factory=dict)
    error: str = ""


@dataclass
class ClusterView:
    """The cluster one cycle sees. ``nodes``: every node (the cycle takes the Ready
    ones matching the policy's nodeSelector); ``pods``: every pod, in a stable order."""

    nodes: Sequence[Node]
    pods: Sequence[Pod]
    now: float
    namespaces: Mapping[str, Namespace] = field(default_factory=dict)
    pdbs: Sequence[PodDisruptionBudget] = ()
    claims: Mapping[tuple[str, str], PersistentVolumeClaim] = field(default_factory=dict)
    priority_classes: Mapping[str, PriorityClass] = field(default_factory=dict)
    node_usage: Mapping[str, Mapping[str, int]] | None = None
    """Each node's collected actual usage (cpu millicores, memory bytes), from its
    NodeMetrics (metricsUtilization); see :mod:`services.descheduler.usage`. None:
    the policy runs no metrics collector."""
    pod_metrics: Mapping[tuple[str, str], PodMetrics] = field(default_factory=dict)
    """PodMetrics by (namespace, name)."""
    dra: Sequence[object] = ()
    """DRA's DeviceClasses, ResourceSlices and ResourceClaims: nodeFit runs the
    scheduler's DynamicResources filter, so a pod whose claim cannot be allocated on
    another node does not fit there."""
    prometheus: Mapping[str, PrometheusUsage] | None = None
    """Each Prometheus query the policy's plugins name → its answer, asked once before
    the cycle (:mod:`services.descheduler.prometheus`). None: no Prometheus client
    (no ``Prometheus`` metrics provider, or no token for it)."""

    def __post_init__(self) -> None:
        self._by_node: dict[str, list[Pod]] = {}
        self._by_owner: dict[str, int] = {}
        for pod in self.pods:
            if pod.spec.node_name:
                self._by_node.setdefault(pod.spec.node_name, []).append(pod)
            for owner in pod.metadata.owner_references:
                self._by_owner[owner.uid] = self._by_owner.get(owner.uid, 0) + 1

    def pods_on(self, node: str, keep: Callable[[Pod], bool] | None = None) -> list[Pod]:
        """``ListAllPodsOnANode``: the pods assigned to ``node`` that ``keep`` keeps."""
        pods = self._by_node.get(node, [])
        return [p for p in pods if keep is None or keep(p)]

    def active_pods_on(self, node: str, keep: Callable[[Pod], bool] | None = None) -> list[Pod]:
        """``ListPodsOnANode``: as :meth:`pods_on`, without Succeeded and Failed pods."""
        return self.pods_on(
            node,
            lambda p: p.status.phase not in ("Succeeded", "Failed") and (keep is None or keep(p)),
        )

    def pods_of_owner(self, uid: str) -> int:
        """How many pods name ``uid`` among their owners (minReplicas)."""
        return self._by_owner.get(uid, 0)

    def with_nodes(self, nodes: Iterable[Node]) -> ClusterView:
        return ClusterView(
            list(nodes),
            self.pods,
            self.now,
            self.namespaces,
            self.pdbs,
            self.claims,
            self.priority_classes,
            self.node_usage,
            self.pod_metrics,
            self.dra,
            self.prometheus,
        )


class Handle(Protocol):
    """What a plugin is built with (``frameworktypes.Handle``)."""

    @property
    def evictor(self) -> Evictor: ...

    @property
    def cluster(self) -> ClusterView: ...

    def fits_other_node(self, pod: Pod, nodes: Sequence[Node]) -> bool:
        """``nodeutil.PodFitsAnyOtherNode``, answered by the scheduler's own filters."""
        ...

    def fits_any_node(self, pod: Pod, nodes: Sequence[Node]) -> bool:
        """``nodeutil.PodFitsAnyNode`` (its own node included), by the scheduler's
        own filters."""
        ...


class Plugin(Protocol):
    @property
    def name(self) -> str: ...


@runtime_checkable
class DeschedulePlugin(Plugin, Protocol):
    def deschedule(self, nodes: Sequence[Node]) -> str | None:
        """Evict what this plugin finds; an error message, or None."""
        ...


@runtime_checkable
class BalancePlugin(Plugin, Protocol):
    def balance(self, nodes: Sequence[Node]) -> str | None: ...


@runtime_checkable
class EvictorPlugin(Plugin, Protocol):
    def filter(self, pod: Pod) -> bool: ...

    def pre_eviction_filter(self, pod: Pod) -> bool: ...


@runtime_checkable
class ExplainingEvictorPlugin(EvictorPlugin, Protocol):
    """An evictor plugin that can say why it refuses a pod, in upstream's words, so
    every refusal is visible (``ksched deschedule`` lists them)."""

    def reasons(self, pod: Pod) -> list[str]:
        """Why Filter refuses ``pod``; empty: Filter passes it."""
        ...

    def pre_eviction_reasons(self, pod: Pod) -> list[str]:
        """Why PreEvictionFilter refuses ``pod``; empty: it passes."""
        ...


PluginFactory = Callable[[Any, Handle], Any]


@dataclass(frozen=True, slots=True)
class PluginEntry:
    """A descheduler plugin, as each plugin module declares it (``ENTRY``): its args
    Struct (with ``defaulted``/``validate``) and factory; its extension points are
    read off the class it builds, which subclasses the Protocols of those points
    (DeschedulePlugin, BalancePlugin, EvictorPlugin)."""

    name: str
    args_type: type[Any] | None
    factory: PluginFactory
    cls: type[Any]

    def points(self) -> set[str]:
        points = set()
        if hasattr(self.cls, "deschedule"):
            points.add("deschedule")
        if hasattr(self.cls, "balance"):
            points.add("balance")
        if hasattr(self.cls, "filter") and hasattr(self.cls, "pre_eviction_filter"):
            points |= {"filter", "preEvictionFilter"}
        return points


Registry = Mapping[str, PluginEntry]
"""Plugin name → its entry (upstream's ``pluginregistry.Registry``)."""


__all__ = [
    "BalancePlugin",
    "BudgetError",
    "ClusterView",
    "DeschedulePlugin",
    "EvictOptions",
    "EvictionError",
    "Evictor",
    "EvictorPlugin",
    "ExplainingEvictorPlugin",
    "Handle",
    "NamespaceLimitError",
    "NodeLimitError",
    "Plugin",
    "PluginEntry",
    "PluginFactory",
    "PrometheusUsage",
    "Registry",
    "TotalLimitError",
]
