"""LowNodeUtilization and HighNodeUtilization (descheduler ``nodeutilization``), Balance
plugins, on the pods' requests.

Usage is each node's requests as a percentage of its allocatable (cpu in millicores,
``pods`` counting the pods). LowNodeUtilization: nodes under every ``thresholds``
value (and schedulable) are underutilized, nodes over any ``targetThresholds`` value
are overutilized; with ``useDeviationThresholds`` both are taken around the average
usage (clamped to 0-100). Pods of the overutilized nodes (most used first) are evicted,
lowest priority first, while the node stays over its target and the underutilized
nodes have room left below their target. HighNodeUtilization empties the nodes under
``thresholds`` (least used first) into the others while they have room.

LowNodeUtilization's ``metricsUtilization`` reads actual usage instead: metrics-server's
NodeMetrics and PodMetrics, or a Prometheus query whose answer (each node's
``MetricResource`` in percent, :mod:`services.descheduler.prometheus`) the cycle
holds. Prometheus says nothing of a pod's usage, so, as upstream, each overutilized
node gives up one pod (up to ``evictionLimits.node`` with that limit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Self

import msgspec

from contracts.k8s import Node, Pod, Taint
from services.common.k8s.taints import taint_key, tolerations_of, tolerations_tolerate
from services.common.resources import (
    CPU,
    MEMORY,
    PODS,
    ResourceError,
    node_allocatable,
    pod_requests,
    resource_amounts,
)
from services.descheduler.api import BalancePlugin, Handle, PluginEntry
from services.descheduler.plugins.base import Outcome, evict
from services.descheduler.podutil import Namespaces, sort_by_priority_low_to_high
from services.framework.api.registry import ConfigError, join_path

LOW: Final = "LowNodeUtilization"
HIGH: Final = "HighNodeUtilization"
METRIC_RESOURCE: Final = "MetricResource"
BASIC: Final = (CPU, MEMORY, PODS)

Thresholds = dict[str, float]


class Prometheus(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    query: str = ""


class MetricsUtilization(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    metrics_server: bool = False
    source: str = ""
    prometheus: Prometheus | None = None


class EvictionLimits(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    node: int | None = None


def _check_thresholds(thresholds: Thresholds, path: str, name: str) -> None:
    """``validateThresholds``."""
    if not thresholds:
        raise ConfigError(path, f"{name} config is not valid: no resource threshold is configured")
    for resource, percent in thresholds.items():
        if not 0 <= percent <= 100:
            raise ConfigError(
                join_path(path, resource),
                f"{name} config is not valid: {resource} threshold not in [0, 100] range",
            )


def _check_namespaces(namespaces: Namespaces | None, path: str) -> None:
    if namespaces is not None and namespaces.include:
        raise ConfigError(
            join_path(path, "evictableNamespaces"),
            "only Exclude namespaces can be set, inclusion is not supported",
        )


class LowNodeUtilizationArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    use_deviation_thresholds: bool = False
    thresholds: Thresholds = {}
    target_thresholds: Thresholds = {}
    number_of_nodes: int = 0
    metrics_utilization: MetricsUtilization | None = None
    evictable_namespaces: Namespaces | None = None
    eviction_limits: EvictionLimits | None = None

    def defaulted(self) -> Self:
        return self

    def validate(self, path: str) -> None:
        """``ValidateLowNodeUtilizationArgs`` (its first error)."""
        _check_namespaces(self.evictable_namespaces, path)
        _check_thresholds(self.thresholds, join_path(path, "thresholds"), "thresholds")
        _check_thresholds(
            self.target_thresholds, join_path(path, "targetThresholds"), "targetThresholds"
        )
        if set(self.thresholds) != set(self.target_thresholds):
            raise ConfigError(
                path, "thresholds and targetThresholds configured different resources"
            )
        for resource, value in self.thresholds.items():
            if value > self.target_thresholds[resource] and not self.use_deviation_thresholds:
                raise ConfigError(
                    join_path(path, f"thresholds.{resource}"),
                    f"thresholds' {resource} percentage is greater than targetThresholds'",
                )
        metrics = self.metrics_utilization
        if metrics is not None:
            where = join_path(path, "metricsUtilization")
            if metrics.source == "KubernetesMetrics" and metrics.metrics_server:
                raise ConfigError(
                    where,
                    'it is not allowed to set both "KubernetesMetrics" source and metricsServer',
                )
            if metrics.source == "KubernetesMetrics" and metrics.prometheus is not None:
                raise ConfigError(
                    where,
                    "prometheus configuration is not allowed to set when source is set to "
                    '"KubernetesMetrics"',
                )
            if metrics.source == "Prometheus" and (
                metrics.prometheus is None or not metrics.prometheus.query
            ):
                raise ConfigError(
                    where, 'prometheus query is required when metrics source is set to "Prometheus"'
                )
            if metrics.source == "Prometheus":
                self._check_metric_resource(path)

    def _check_metric_resource(self, path: str) -> None:
        """``validatePrometheusMetricsUtilization``: a query measures one thing."""
        for field_name, thresholds in (
            ("thresholds", self.thresholds),
            ("targetThresholds", self.target_thresholds),
        ):
            if list(thresholds) != [METRIC_RESOURCE]:
                raise ConfigError(
                    join_path(path, field_name),
                    f'{field_name} are expected to specify a single instance of "{METRIC_RESOURCE}"'
                    f" resource, got [{' '.join(thresholds)}] instead",
                )


class HighNodeUtilizationArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    thresholds: Thresholds = {}
    number_of_nodes: int = 0
    eviction_modes: list[str] = []
    evictable_namespaces: Namespaces | None = None

    def defaulted(self) -> Self:
        return self

    def validate(self, path: str) -> None:
        _check_namespaces(self.evictable_namespaces, path)
        _check_thresholds(self.thresholds, join_path(path, "thresholds"), "thresholds")
        for mode in self.eviction_modes:
            if mode != "OnlyThresholdingResources":
                raise ConfigError(
                    join_path(path, "evictionModes"),
                    f'invalid eviction mode "{mode}"',
                )


@dataclass
class NodeUsage:
    node: Node
    usage: dict[str, int]
    """Requested, per resource (cpu in millicores, ``pods`` the pod count)."""
    pods: list[Pod]
    percent: Thresholds = field(default_factory=dict)
    available: dict[str, int] = field(default_factory=dict)
    """Capacity capped at the node's upper threshold (``capNodeCapacitiesToThreshold``)."""


def requests_of(pod: Pod) -> Mapping[str, int]:
    try:
        return pod_requests(pod)
    except ResourceError:
        return {}


def capacity(node: Node) -> dict[str, int]:
    try:
        found = node_allocatable(node)
    except ResourceError:
        found = {}
    return {**found, METRIC_RESOURCE: 100}


class UsageError(Exception):
    """The actual usage of a node or pod is missing (upstream's usage client errors)."""


def actual_node_usages(
    handle: Handle, nodes: Sequence[Node], resources: Sequence[str]
) -> list[NodeUsage]:
    """``actualUsageClient.sync``: each node's collected usage (cpu and memory only,
    as upstream's collector), ``pods`` counting its active pods. Raises UsageError."""
    out = []
    metrics = handle.cluster.node_usage or {}
    for node in nodes:
        name = node.metadata.name
        pods = handle.cluster.active_pods_on(name)
        found = metrics.get(name)
        if found is None:
            raise UsageError(f'unable to find node "{name}" in the collected metrics')
        collected = dict(found)
        collected[PODS] = len(pods)
        usage = {}
        for resource in resources:
            if resource not in collected:
                raise UsageError(
                    f'unable to find "{resource}" resource for collected "{name}" node metric'
                )
            usage[resource] = collected[resource]
        out.append(NodeUsage(node, usage, pods))
    return out


def prometheus_node_usages(handle: Handle, nodes: Sequence[Node], query: str) -> list[NodeUsage]:
    """``prometheusUsageClient.sync``: each node's ``MetricResource`` from the query's
    answer. Raises UsageError."""
    answer = (handle.cluster.prometheus or {}).get(query)
    if answer is None or answer.error:
        raise UsageError(answer.error if answer is not None else "query not collected")
    out = []
    for node in nodes:
        name = node.metadata.name
        if name not in answer.nodes:
            raise UsageError(f"unable to find metric entry for {name}")
        usage = {METRIC_RESOURCE: answer.nodes[name]}
        out.append(NodeUsage(node, usage, handle.cluster.active_pods_on(name)))
    return out


def actual_pod_usage(handle: Handle, pod: Pod, resources: Sequence[str]) -> dict[str, int] | None:
    """``actualUsageClient.podUsage``: the sum of its containers' PodMetrics usage; None
    when it has none (upstream skips the pod)."""
    key = (pod.metadata.namespace or "default", pod.metadata.name)
    found = handle.cluster.pod_metrics.get(key)
    if found is None:
        return None
    total = dict.fromkeys((r for r in resources if r != PODS), 0)
    for container in found.containers:
        try:
            usage = resource_amounts(container.usage, "usage")
        except ResourceError:
            return None
        for resource in total:
            if resource not in container.usage:
                return None
            total[resource] += usage.get(resource, 0)
    return total


def node_usages(handle: Handle, nodes: Sequence[Node], resources: Sequence[str]) -> list[NodeUsage]:
    """``requestedUsageClient.sync``: each node's active pods and their requests."""
    out = []
    for node in nodes:
        pods = handle.cluster.active_pods_on(node.metadata.name)
        usage = dict.fromkeys(resources, 0)
        usage[PODS] = len(pods) if PODS in usage else 0
        for pod in pods:
            requested = requests_of(pod)
            for name in resources:
                if name != PODS:
                    usage[name] += requested.get(name, 0)
        out.append(NodeUsage(node, usage, pods))
    return out


def percentages(usage: Mapping[str, int], total: Mapping[str, int]) -> Thresholds:
    """``ResourceUsageToResourceThreshold``."""
    out: Thresholds = {}
    for name, used in usage.items():
        if name not in total:
            continue
        cap = total[name]
        out[name] = used / cap * 100 if cap > 0 else 0.0
    return out


def cap_to(node: Node, thresholds: Thresholds, resources: Sequence[str]) -> dict[str, int]:
    """``capNodeCapacitiesToThreshold``."""
    total = capacity(node)
    out = {}
    for name in resources:
        if name not in total:
            out[name] = 0
        elif name not in thresholds:
            out[name] = total[name]
        else:
            out[name] = int(thresholds[name] * 0.01 * total[name])
    return out


def below(usage: Thresholds, threshold: Thresholds) -> bool:
    return all(not threshold[name] < usage.get(name, 0.0) for name in threshold)


def above(usage: Thresholds, threshold: Thresholds) -> bool:
    return any(threshold[name] < usage.get(name, 0.0) for name in threshold)


def clamp(values: Thresholds) -> Thresholds:
    return {k: min(100.0, max(0.0, v)) for k, v in values.items()}


def total_usage(node: NodeUsage) -> int:
    """``sortNodesByUsage``'s key: the sum of the usage (cpu in millicores)."""
    return sum(node.usage.values())


def tolerates_some(pod: Pod, taints_of: Mapping[str, Sequence[Taint]]) -> bool:
    """``utils.PodToleratesTaints``: the pod tolerates every taint of one of the nodes."""
    tolerations = tolerations_of(pod.spec.tolerations)
    for taints in taints_of.values():
        if len(pod.spec.tolerations) >= len(taints) and all(
            tolerations_tolerate(tolerations, taint_key(t)) for t in taints
        ):
            return True
    return False


ContinueCheck = Callable[[NodeUsage, dict[str, int]], bool]


def evict_from(
    handle: Handle,
    plugin: str,
    sources: Sequence[NodeUsage],
    destinations: Sequence[NodeUsage],
    resources: Sequence[str],
    keep: Callable[[Pod], bool],
    go_on: ContinueCheck,
    excluded: frozenset[str],
    node_limit: int | None,
    pod_usage: Callable[[Pod], Mapping[str, int] | None] | None = requests_of,
) -> None:
    """``evictPodsFromSourceNodes``; ``pod_usage``: the requests, or the actual usage
    (None: unknown, the pod is skipped); no ``pod_usage`` at all (Prometheus): each
    node gives up one pod, or up to ``node_limit``, its usage left as it was."""
    available = dict.fromkeys(resources, 0)
    for dest in destinations:
        for name in resources:
            available[name] += dest.available.get(name, 0) - dest.usage.get(name, 0)
    taints_of = {d.node.metadata.name: list(d.node.spec.taints) for d in destinations}
    evictor = handle.evictor
    for source in sources:
        removable = [p for p in source.pods if keep(p)]
        if not removable:
            continue
        sort_by_priority_low_to_high(removable)
        if not go_on(source, available):
            continue
        evicted = 0
        for pod in removable:
            if node_limit is not None and evicted >= node_limit:
                break
            if not tolerates_some(pod, taints_of):
                continue
            if (pod.metadata.namespace or "default") in excluded:
                continue
            if not evictor.pre_eviction_filter(pod):
                continue
            usage = pod_usage(pod) if pod_usage is not None else {}
            if usage is None:
                continue
            outcome = evict(handle, pod, plugin)
            if outcome is Outcome.NODE_LIMIT:
                break
            if outcome is Outcome.TOTAL_LIMIT:
                return
            if outcome is Outcome.FAILED:
                continue
            if pod_usage is None and node_limit is None:
                break
            evicted += 1
            if pod_usage is None:
                continue
            for name in available:
                amount = 1 if name == PODS else usage.get(name, 0)
                source.usage[name] = source.usage.get(name, 0) - amount
                available[name] -= amount
            if not go_on(source, available):
                break


def prometheus_query(args: LowNodeUtilizationArgs) -> str:
    """The query when the args read Prometheus, else ""."""
    metrics = args.metrics_utilization
    if metrics is None or metrics.source != "Prometheus" or metrics.prometheus is None:
        return ""
    return metrics.prometheus.query


def _resources(thresholds: Thresholds) -> list[str]:
    return list(dict.fromkeys([*thresholds, *BASIC]))


class LowNodeUtilization(BalancePlugin):
    name: Final = LOW

    def __init__(self, args: LowNodeUtilizationArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.prometheus = prometheus_query(args)
        self.resources = list(args.thresholds) if self.prometheus else _resources(args.thresholds)
        self.classified: dict[str, str] = {}
        """Node → ``underutilized``, ``overutilized`` or ``appropriately utilized``
        (for the deschedule table)."""
        self.usage_percent: dict[str, Thresholds] = {}

    def balance(self, nodes: Sequence[Node]) -> str | None:
        args = self.args
        metrics = args.metrics_utilization
        actual = metrics is not None and (
            metrics.metrics_server or metrics.source == "KubernetesMetrics"
        )
        if actual and self.handle.cluster.node_usage is None:
            return "error initializing usage client: metrics client not initialized"
        if self.prometheus and self.handle.cluster.prometheus is None:
            return "error initializing usage client: prometheus client not initialized"
        if metrics is not None and not actual and not self.prometheus:
            empty = "unrecognized metrics source" if metrics.source else "metrics source is empty"
            return f"error initializing usage client: {empty}"
        try:
            if self.prometheus:
                usages = prometheus_node_usages(self.handle, nodes, self.prometheus)
            elif actual:
                usages = actual_node_usages(self.handle, nodes, self.resources)
            else:
                usages = node_usages(self.handle, nodes, self.resources)
        except UsageError as error:
            return f"error getting node usage: {error}"
        for u in usages:
            u.percent = percentages(u.usage, capacity(u.node))
            self.usage_percent[u.node.metadata.name] = u.percent
        low_t, high_t = dict(args.thresholds), dict(args.target_thresholds)
        if args.use_deviation_thresholds:
            names = list(args.thresholds)
            average = (
                {n: sum(u.percent.get(n, 0.0) for u in usages) / len(usages) for n in names}
                if usages
                else {}
            )
            low_t = clamp({n: average[n] - args.thresholds[n] for n in names})
            high_t = clamp({n: average[n] + args.target_thresholds[n] for n in names})
        lows, highs = [], []
        for u in usages:
            name = u.node.metadata.name
            if not u.node.spec.unschedulable and below(u.percent, low_t):
                lows.append(u)
                self.classified[name] = "underutilized"
            elif above(u.percent, high_t):
                highs.append(u)
                self.classified[name] = "overutilized"
            else:
                self.classified[name] = "appropriately utilized"
            u.available = cap_to(u.node, high_t, self.resources)
        if not lows or len(lows) <= args.number_of_nodes or len(lows) == len(nodes) or not highs:
            return None

        def go_on(source: NodeUsage, available: dict[str, int]) -> bool:
            over = any(source.available.get(n, 0) < v for n, v in source.usage.items())
            return over and all(v > 0 for v in available.values())

        highs.sort(key=total_usage, reverse=True)
        excluded = (
            frozenset(args.evictable_namespaces.exclude)
            if args.evictable_namespaces
            else frozenset()
        )
        limit = args.eviction_limits.node if args.eviction_limits else None
        evict_from(
            self.handle,
            LOW,
            highs,
            lows,
            self.resources,
            self.handle.evictor.filter,
            go_on,
            excluded,
            limit,
            None
            if self.prometheus
            else (lambda pod: actual_pod_usage(self.handle, pod, self.resources))
            if actual
            else requests_of,
        )
        return None


class HighNodeUtilization(BalancePlugin):
    name: Final = HIGH

    def __init__(self, args: HighNodeUtilizationArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.resources = _resources(args.thresholds)
        self.classified: dict[str, str] = {}
        self.usage_percent: dict[str, Thresholds] = {}
        restrict = "OnlyThresholdingResources" in args.eviction_modes
        names = list(args.thresholds)

        def keep(pod: Pod) -> bool:
            if not handle.evictor.filter(pod):
                return False
            if restrict:
                requested = requests_of(pod)
                return any(requested.get(n, 0) > 0 for n in names)
            return True

        self.keep = keep

    def balance(self, nodes: Sequence[Node]) -> str | None:
        args = self.args
        usages = node_usages(self.handle, nodes, self.resources)
        high_t = dict.fromkeys(args.thresholds, 100.0)
        lows, others = [], []
        for u in usages:
            u.percent = percentages(u.usage, capacity(u.node))
            self.usage_percent[u.node.metadata.name] = u.percent
            name = u.node.metadata.name
            if below(u.percent, args.thresholds):
                lows.append(u)
                self.classified[name] = "underutilized"
            elif not u.node.spec.unschedulable:
                others.append(u)
                self.classified[name] = "overutilized"
            u.available = cap_to(u.node, high_t, self.resources)
        if not lows or len(lows) <= args.number_of_nodes or len(lows) == len(nodes) or not others:
            return None

        def go_on(_source: NodeUsage, available: dict[str, int]) -> bool:
            return all(v > 0 for v in available.values())

        lows.sort(key=total_usage)
        excluded = (
            frozenset(args.evictable_namespaces.exclude)
            if args.evictable_namespaces
            else frozenset()
        )
        evict_from(
            self.handle, HIGH, lows, others, self.resources, self.keep, go_on, excluded, None
        )
        return None


def new_low(args: LowNodeUtilizationArgs | None, handle: Handle) -> LowNodeUtilization:
    return LowNodeUtilization(args or LowNodeUtilizationArgs(), handle)


def new_high(args: HighNodeUtilizationArgs | None, handle: Handle) -> HighNodeUtilization:
    return HighNodeUtilization(args or HighNodeUtilizationArgs(), handle)


LOW_ENTRY: Final = PluginEntry(LOW, LowNodeUtilizationArgs, new_low, LowNodeUtilization)
HIGH_ENTRY: Final = PluginEntry(HIGH, HighNodeUtilizationArgs, new_high, HighNodeUtilization)
