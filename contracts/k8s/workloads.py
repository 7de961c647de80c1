"""The objects whose selectors give a pod its default spread: core/v1 Service and
ReplicationController, apps/v1 ReplicaSet and StatefulSet (upstream's
``helper.DefaultSelector``). Only what the scheduler reads is typed; the rest of each
object (pod templates, ports, status) is ignored on the wire."""

from __future__ import annotations

from contracts.k8s.base import LabelSelector, ObjectMeta, Wire


class ServiceSpec(Wire, kw_only=True, frozen=True):
    selector: dict[str, str] | None = None
    """Label ``key: value`` pairs; unset selects no pod, ``{}`` selects every pod."""
    type: str | None = None


class Service(Wire, kw_only=True, frozen=True, tag_field="kind", tag="Service"):
    api_version: str = "v1"
    metadata: ObjectMeta = ObjectMeta()
    spec: ServiceSpec = ServiceSpec()


class ReplicationControllerSpec(Wire, kw_only=True, frozen=True):
    replicas: int | None = None
    selector: dict[str, str] | None = None
    """Label ``key: value`` pairs (a ReplicationController has no label expressions)."""


class ReplicationController(
    Wire, kw_only=True, frozen=True, tag_field="kind", tag="ReplicationController"
):
    api_version: str = "v1"
    metadata: ObjectMeta = ObjectMeta()
    spec: ReplicationControllerSpec = ReplicationControllerSpec()


class ReplicaSetSpec(Wire, kw_only=True, frozen=True):
    replicas: int | None = None
    selector: LabelSelector | None = None


class ReplicaSet(Wire, kw_only=True, frozen=True, tag_field="kind", tag="ReplicaSet"):
    api_version: str = "apps/v1"
    metadata: ObjectMeta = ObjectMeta()
    spec: ReplicaSetSpec = ReplicaSetSpec()


class StatefulSetSpec(ReplicaSetSpec, kw_only=True, frozen=True):
    """A ReplicaSet's replicas and selector, and the governing Service's name."""

    service_name: str | None = None


class StatefulSet(Wire, kw_only=True, frozen=True, tag_field="kind", tag="StatefulSet"):
    api_version: str = "apps/v1"
    metadata: ObjectMeta = ObjectMeta()
    spec: StatefulSetSpec = StatefulSetSpec()
