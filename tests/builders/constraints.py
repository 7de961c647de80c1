"""Pods with the hard constraints another pod's placement can break, and nodes with
the labels they read: required pod (anti-)affinity, ``DoNotSchedule`` spread, host
ports, ReadWriteOncePod claims.

    anti_affine("a")                      # at most one app=web per hostname
    spread("b", key=ZONE)                 # app=web within maxSkew 1 across zones
    grouped("c", node_name="n1")          # app=web together in one zone, only on n1
    ported("d")                           # hostPort 8080
    rwop("e")                             # the ReadWriteOncePod claim "data"
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from contracts.k8s import (
    Affinity,
    LabelSelector,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    TopologySpreadConstraint,
)
from tests.builders import container, host_port, make_node, make_pod
from tests.builders.volumes import make_pv, make_pvc

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
WEB = {"app": "web"}


def zoned_node(
    name: str,
    zone: str = "z1",
    *,
    tainted: bool = False,
    allocatable: Mapping[str, str | int] | None = None,
) -> Node:
    """A node labelled with its hostname and ``zone``; ``tainted``: NoSchedule for
    pods without a toleration (counted by spread, never chosen)."""
    labels = {HOSTNAME: name, ZONE: zone}
    taints = [("dedicated", "other", "NoSchedule")] if tainted else []
    return make_node(name, labels=labels, taints=taints, allocatable=allocatable)


def with_spec(pod: Pod, **fields: object) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, **fields))


def _term(labels: Mapping[str, str], key: str) -> PodAffinityTerm:
    return PodAffinityTerm(
        label_selector=LabelSelector(match_labels=dict(labels)), topology_key=key
    )


def anti_affine(
    name: str, *, key: str = HOSTNAME, labels: Mapping[str, str] = WEB, node_name: str | None = None
) -> Pod:
    """Labelled ``labels``, with required anti-affinity to them on ``key``."""
    anti = PodAffinity(required_during_scheduling_ignored_during_execution=[_term(labels, key)])
    return make_pod(
        name, labels=labels, affinity=Affinity(pod_anti_affinity=anti), node_name=node_name
    )


def spread(
    name: str,
    node_name: str | None = None,
    *,
    key: str = ZONE,
    labels: Mapping[str, str] = WEB,
    max_skew: int = 1,
    min_domains: int | None = None,
) -> Pod:
    """Labelled ``labels``, spread over ``key`` within ``max_skew`` (DoNotSchedule)."""
    constraint = TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable="DoNotSchedule",
        label_selector=LabelSelector(match_labels=dict(labels)),
        min_domains=min_domains,
    )
    pod = make_pod(name, labels=labels, node_name=node_name)
    return with_spec(pod, topology_spread_constraints=[constraint])


def grouped(
    name: str,
    node_name: str | None = None,
    *,
    key: str = ZONE,
    labels: Mapping[str, str] = WEB,
    only_on: str | None = None,
) -> Pod:
    """Required affinity to its own group (``labels``, which it matches itself) in
    one ``key`` domain; ``only_on``: a node selector on that hostname."""
    affinity = PodAffinity(required_during_scheduling_ignored_during_execution=[_term(labels, key)])
    return make_pod(
        name,
        labels=labels,
        affinity=Affinity(pod_affinity=affinity),
        node_selector={HOSTNAME: only_on} if only_on else None,
        node_name=node_name,
    )


def ported(name: str, node_name: str | None = None, port: int = 8080) -> Pod:
    """Asks for ``port`` on its node (``hostPort``)."""
    return make_pod(
        name, requests=[container({"cpu": "100m"}, ports=[host_port(port)])], node_name=node_name
    )


def rwop(name: str, node_name: str | None = None, claim: str = "data") -> Pod:
    """Uses the ReadWriteOncePod claim ``claim`` (see :func:`rwop_objects`)."""
    return make_pod(name, claims=[claim], node_name=node_name)


def rwop_objects(claim: str = "data") -> dict[str, list[object]]:
    """The bound ReadWriteOncePod claim ``claim`` and its volume, by lister kind."""
    return {
        "persistentvolumeclaim": [
            make_pvc(
                claim, access_modes=["ReadWriteOncePod"], volume_name=f"pv-{claim}", bound=True
            )
        ],
        "persistentvolume": [
            make_pv(f"pv-{claim}", access_modes=["ReadWriteOncePod"], claim=("default", claim))
        ],
    }
