"""Shared helpers for the volume plugins' tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from contracts.k8s import Node, Pod, Quantity
from services.framework.api.interface import CycleState, FilterResult
from services.framework.api.listers import Listers
from services.framework.api.status import Status
from services.framework.api.types import PodInfo
from services.framework.cache.snapshot import Snapshot
from tests.builders import make_node
from tests.builders.volumes import HOSTNAME
from tests.unit.framework.helpers import snapshot_of


def listers_of(*objects: object) -> Listers:
    listers = Listers()
    for obj in objects:
        listers.put(obj)
    return listers


def table_of(nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> Snapshot:
    return snapshot_of(nodes, pods).snapshot()


def host(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    extra: Mapping[str, int] | None = None,
) -> Node:
    """A node labelled with its hostname, as kubelet labels it; ``extra`` allocatable
    (``attachable-volumes-csi-<driver>`` limits) beside the defaults."""
    allocatable: dict[str, Quantity] = {"cpu": "4", "memory": "32Gi", "pods": 110, **(extra or {})}
    return make_node(name, labels={HOSTNAME: name, **(labels or {})}, allocatable=allocatable)


def statuses(result: FilterResult) -> list[Status | None]:
    """Per row: None if the node passes, else its Status."""
    return [
        None if ok else result.describe(int(code))
        for ok, code in zip(result.passed.tolist(), result.codes.tolist(), strict=True)
    ]


def run_pre_filter(plugin: object, pod: Pod, nodes: Snapshot) -> tuple[CycleState, object]:
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo.of(pod), nodes)  # type: ignore[attr-defined]
    return state, status
