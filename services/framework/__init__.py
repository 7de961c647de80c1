"""The scheduling framework: extension points, CycleState, Status, the columnar
Snapshot and the runtime that runs a profile's plugins (upstream's
``pkg/scheduler/framework``)."""

from services.framework.diagnosis import Diagnosis, FitError
from services.framework.interface import CycleState, ExtensionPoint, FilterResult
from services.framework.nodeinfo import NodeInfo, NodeTable
from services.framework.runtime import Framework, ScheduleResult
from services.framework.snapshot import Snapshot
from services.framework.status import Code, Status
from services.framework.types import PodInfo, QueuedPodInfo

__all__ = [
    "Code",
    "CycleState",
    "Diagnosis",
    "ExtensionPoint",
    "FilterResult",
    "FitError",
    "Framework",
    "NodeInfo",
    "NodeTable",
    "PodInfo",
    "QueuedPodInfo",
    "ScheduleResult",
    "Snapshot",
    "Status",
]
