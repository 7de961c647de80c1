"""core/v1 Node and Namespace."""

from __future__ import annotations

import msgspec

from contracts.k8s.base import ObjectMeta, Quantity, Wire


class Taint(Wire, kw_only=True, frozen=True):
    key: str
    value: str | None = None
    effect: str
    time_added: str | None = None


class NodeSpec(Wire, kw_only=True, frozen=True):
    unschedulable: bool = False
    taints: list[Taint] = []
    pod_cidr: str | None = msgspec.field(default=None, name="podCIDR")
    provider_id: str | None = msgspec.field(default=None, name="providerID")


class NodeCondition(Wire, kw_only=True, frozen=True):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None


class ContainerImage(Wire, kw_only=True, frozen=True):
    names: list[str] = []
    size_bytes: int = 0


class NodeStatus(Wire, kw_only=True, frozen=True):
    capacity: dict[str, Quantity] = {}
    allocatable: dict[str, Quantity] = {}
    conditions: list[NodeCondition] = []
    images: list[ContainerImage] = []


class Node(Wire, kw_only=True, frozen=True, tag_field="kind", tag="Node"):
    api_version: str = "v1"
    metadata: ObjectMeta = ObjectMeta()
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


class Namespace(Wire, kw_only=True, frozen=True, tag_field="kind", tag="Namespace"):
    api_version: str = "v1"
    metadata: ObjectMeta = ObjectMeta()
