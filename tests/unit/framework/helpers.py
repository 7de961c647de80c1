"""Shared helpers for the scheduler's unit tests."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from contracts.k8s import Node, Pod
from services.framework.api.interface import CycleState, Rows
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache


def snapshot_of(nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> Cache:
    """A snapshot with ``nodes`` and the (bound) ``pods``, as upstream's NewSnapshot."""
    snapshot = Cache()
    for node in nodes:
        snapshot.add_node(node)
    for pod in pods:
        snapshot.add_pod(pod)
    return snapshot


def all_rows(snapshot: Cache) -> Rows:
    return np.arange(snapshot.num_nodes, dtype=np.intp)


def pod_info(pod: Pod) -> PodInfo:
    return PodInfo.of(pod)


def fresh_state() -> CycleState:
    return CycleState()
