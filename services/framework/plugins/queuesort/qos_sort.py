"""QOSSort: PrioritySort with the pod's QoS class as the first tie-breaker.

Higher ``spec.priority`` first; among equals Guaranteed before Burstable before
BestEffort; then the pod queued earlier (scheduler-plugins' ``qos`` QueueSort, the
example of the Scheduling Framework articles). The QoS class is ``GetPodQOS``
(:mod:`services.common.k8s.qos`).
"""

from __future__ import annotations

from typing import Final

from services.common.k8s.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, get_pod_qos
from services.framework.api.interface import Handle, QueueSortPlugin
from services.framework.api.registry import PluginEntry
from services.framework.api.types import QueuedPodInfo

NAME: Final = "QOSSort"
_RANK: Final = {BEST_EFFORT: 1, BURSTABLE: 2, GUARANTEED: 3}


class QOSSort(QueueSortPlugin):
    name: Final = NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.sort_key(a) < self.sort_key(b)

    def sort_key(self, info: QueuedPodInfo) -> tuple[int, int, float]:
        rank = _RANK.get(get_pod_qos(info.pod_info.pod), 0)
        return (-info.pod_info.priority, -rank, info.timestamp)


def new(args: None, handle: Handle) -> QOSSort:
    return QOSSort()


ENTRY: Final = PluginEntry(NAME, QOSSort, new)
