"""PrioritySort: higher ``spec.priority`` first, then the pod queued earlier."""

from __future__ import annotations

from typing import Final

from services.framework.api.interface import Handle, QueueSortPlugin
from services.framework.api.registry import PluginEntry
from services.framework.api.types import QueuedPodInfo

NAME: Final = "PrioritySort"


class PrioritySort(QueueSortPlugin):
    name: Final = NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod_info.priority, b.pod_info.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self, info: QueuedPodInfo) -> tuple[int, float]:
        return (-info.pod_info.priority, info.timestamp)


def new(args: None, handle: Handle) -> PrioritySort:
    return PrioritySort()


ENTRY: Final = PluginEntry(NAME, PrioritySort, new)
