"""Builders the topology-spread tests share (upstream's ``getDefaultTopologyConstraints``
and the zoned nodes of TestTopologySpreadConstraint)."""

from __future__ import annotations

from typing import Any

from contracts.k8s import LabelSelector, Node, OwnerReference, TopologySpreadConstraint
from tests.unit.descheduler.support import build_node

RS = [OwnerReference(kind="ReplicaSet", api_version="v1", name="replicaset-1")]
FOO = {"foo": "bar"}


def spread(max_skew: int, action: str = "DoNotSchedule") -> list[TopologySpreadConstraint]:
    """``getDefaultTopologyConstraints``."""
    return [
        TopologySpreadConstraint(
            max_skew=max_skew,
            topology_key="zone",
            when_unsatisfiable=action,
            label_selector=LabelSelector(match_labels=FOO),
        )
    ]


def zone(name: str, value: str, cpu: int = 2000, **kw: Any) -> Node:
    return build_node(name, cpu, 3000, 10, labels={"zone": value}, **kw)
