"""Builders for the queue tests: a queue on upstream's default profile driven by a
FakeClock, and a pod that is parked after failing on given plugins."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import msgspec

from contracts.events import ENTRY_FOR_KIND, EventType, LogEntry
from contracts.k8s import Pod
from contracts.kinds import kind_of
from services.common.clock import FakeClock
from services.framework.config import PluginRef, PluginSet, Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.queue.profiles import QueueProfile
from services.queue.scheduling_queue import SchedulingQueue
from services.queue.types import QueueEntry, SubQueue

START = 1_700_000_000.0


DEFAULT = QueueProfile.default()


def qos_profile() -> QueueProfile:
    """The default profile with QOSSort instead of PrioritySort."""
    plugins = default_profile().plugins
    sort = PluginSet(enabled=(PluginRef("QOSSort"),), disabled=(PluginRef("*"),))
    return QueueProfile.of(
        Framework(Profile(plugins=replace(plugins, queue_sort=sort)), in_tree_registry())
    )


def make_queue(
    clock: FakeClock | None = None,
    *,
    profiles: Iterable[QueueProfile] = (DEFAULT,),
    pop_from_backoff: bool = True,
) -> tuple[SchedulingQueue, FakeClock]:
    clock = clock or FakeClock(START)
    return SchedulingQueue(list(profiles), clock, pop_from_backoff=pop_from_backoff), clock


def add(queue: SchedulingQueue, *pods: Pod, order: int = 0) -> None:
    for i, pod in enumerate(pods):
        queue.add(pod, priority=pod.spec.priority or 0, order=order + i)


def names(infos: Iterable[QueueEntry]) -> list[str]:
    return [i.pod.metadata.name for i in infos]


def park(queue: SchedulingQueue, pod: Pod, *plugins: str) -> QueueEntry:
    """Add ``pod``, pop it, and fail it on ``plugins``: it is parked."""
    add(queue, pod)
    popped = queue.pop(len(queue))
    for other in popped:
        if other.uid != pod.metadata.uid:
            queue.retry(other.uid)
    assert (
        queue.add_unschedulable_if_not_present(pod.metadata.uid, plugins) is SubQueue.UNSCHEDULABLE
    )
    info = queue.get(pod.metadata.uid)
    assert info is not None
    return info


def where(queue: SchedulingQueue, pod: Pod) -> SubQueue | None:
    info = queue.get(pod.metadata.uid)
    return info.where if info is not None else None


_seq = itertools.count(1)


def logged(obj: Any, type_: EventType = "ADDED") -> LogEntry:
    """``obj`` as the informer's next log entry."""
    return ENTRY_FOR_KIND[kind_of(obj)](seq=next(_seq), type=type_, object=obj)


def with_(obj: Any, **changes: Any) -> Any:
    """``obj`` with ``path__field=value`` changes (``metadata__labels={...}``)."""
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        chain = [obj]
        for name in parents:
            chain.append(getattr(chain[-1], name))
        new = msgspec.structs.replace(chain[-1], **{leaf: value})
        for parent, name in zip(reversed(chain[:-1]), reversed(parents), strict=True):
            new = msgspec.structs.replace(parent, **{name: new})
        obj = new
    return obj
