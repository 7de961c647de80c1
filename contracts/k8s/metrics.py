"""``metrics.k8s.io/v1beta1`` NodeMetrics and PodMetrics, as metrics-server serves them:
the actual usage the descheduler's utilization plugins read with ``metricsUtilization``."""

from __future__ import annotations

from contracts.k8s.base import ObjectMeta, Quantity, Wire


class NodeMetrics(Wire, kw_only=True, frozen=True, tag_field="kind", tag="NodeMetrics"):
    api_version: str = "metrics.k8s.io/v1beta1"
    metadata: ObjectMeta = ObjectMeta()
    timestamp: str | None = None
    window: str | None = None
    usage: dict[str, Quantity] = {}


class ContainerMetrics(Wire, kw_only=True, frozen=True):
    name: str = ""
    usage: dict[str, Quantity] = {}


class PodMetrics(Wire, kw_only=True, frozen=True, tag_field="kind", tag="PodMetrics"):
    api_version: str = "metrics.k8s.io/v1beta1"
    metadata: ObjectMeta = ObjectMeta()
    timestamp: str | None = None
    window: str | None = None
    containers: list[ContainerMetrics] = []


__all__ = ["ContainerMetrics", "NodeMetrics", "PodMetrics"]
