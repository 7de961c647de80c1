"""Services and controllers in a line, as upstream's tests build them::

make_service("s1", {"foo": ""})                        # selects pods labelled foo=""
make_replica_set("rs1", exists("foo"))                 # apps/v1, a LabelSelector
make_replication_controller("rc1", {"app": "web"})     # v1, key=value pairs
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts.k8s import LabelSelector, ObjectMeta, workloads


def _meta(name: str, namespace: str, uid: str | None) -> ObjectMeta:
    return ObjectMeta(name=name, namespace=namespace, uid=uid or f"{namespace}-{name}-uid")


def make_service(
    name: str,
    selector: Mapping[str, str] | None,
    namespace: str = "default",
    *,
    uid: str | None = None,
) -> workloads.Service:
    chosen = None if selector is None else dict(selector)
    return workloads.Service(
        metadata=_meta(name, namespace, uid), spec=workloads.ServiceSpec(selector=chosen)
    )


def make_replication_controller(
    name: str, selector: Mapping[str, str] | None, namespace: str = "default"
) -> workloads.ReplicationController:
    chosen = None if selector is None else dict(selector)
    return workloads.ReplicationController(
        metadata=_meta(name, namespace, None),
        spec=workloads.ReplicationControllerSpec(selector=chosen),
    )


def make_replica_set(
    name: str, selector: LabelSelector | None, namespace: str = "default"
) -> workloads.ReplicaSet:
    return workloads.ReplicaSet(
        metadata=_meta(name, namespace, None), spec=workloads.ReplicaSetSpec(selector=selector)
    )


def make_stateful_set(
    name: str, selector: LabelSelector | None, namespace: str = "default"
) -> workloads.StatefulSet:
    return workloads.StatefulSet(
        metadata=_meta(name, namespace, None), spec=workloads.StatefulSetSpec(selector=selector)
    )
