"""The scheduling framework: extension points, CycleState, Status, the columnar
Snapshot and the runtime that runs a profile's plugins (upstream's
``pkg/scheduler/framework``)."""

from services.scheduler.framework.diagnosis import Diagnosis, FitError
from services.scheduler.framework.interface import CycleState, ExtensionPoint, FilterResult
from services.scheduler.framework.nodeinfo import NodeInfo, NodeTable
from services.scheduler.framework.runtime import Framework, ScheduleResult
from services.scheduler.framework.snapshot import Snapshot
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import PodInfo, QueuedPodInfo

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
