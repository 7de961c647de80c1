"""Queueing hints: may this cluster event make that rejected pod schedulable?

Upstream's ``isEventOfInterest`` and ``isPodWorthRequeuing`` over the
``QueueingHintMapPerProfile``: for each profile, the events each plugin registered
(``EnqueueExtensions.EventsToRegister``) and their hint functions. Only the plugins that
rejected the pod in its last attempt are asked; a Queue from one of its Pending plugins
means activeQ at once, from an Unschedulable plugin activeQ after backoff.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from contracts.k8s import Pod, namespaced_name
from services.framework.api.events import (
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
)
from services.queue.cluster_events import label

log = logging.getLogger("ksched.queue")


class QueueingStrategy(enum.IntEnum):
    """Upstream's ``queueingStrategy``, in increasing urgency."""

    QueueSkip = 0
    """Nothing that happened can help: the pod stays in (or goes to) unschedulablePods."""
    QueueAfterBackoff = 1
    """Worth another attempt once its backoff is over."""
    QueueImmediately = 2
    """A Pending plugin's wait is over: activeQ now, no backoff."""


@dataclass(frozen=True, slots=True)
class _Registration:
    event: ClusterEvent
    plugin: str
    hint: QueueingHintFn | None


Hints = Mapping[str, tuple[QueueingHintFn | None, ...]]
"""Plugin → the hint functions of its registrations that match one incoming event."""


class QueueingHintMap:
    def __init__(self, profiles: Mapping[str, Mapping[str, Sequence[ClusterEventWithHint]]]):
        """``profiles``: scheduler name → plugin → the events it registered (a plugin
        that registers nothing is given the wildcard event by the framework)."""
        self._registered: dict[str, tuple[_Registration, ...]] = {
            profile: tuple(
                _Registration(e.event, plugin, e.queueing_hint)
                for plugin, events in plugins.items()
                for e in events
            )
            for profile, plugins in profiles.items()
        }
        plugin_events: dict[str, list[ClusterEvent]] = {}
        for registrations in self._registered.values():
            for r in registrations:
                plugin_events.setdefault(r.plugin, []).append(r.event)
        self.plugin_events: Mapping[str, tuple[ClusterEvent, ...]] = {
            plugin: tuple(events) for plugin, events in plugin_events.items()
        }
        """Plugin → every event it registered in any profile (``pluginToEventsMap``)."""
        self._matching: dict[ClusterEvent, dict[str, Hints]] = {}
        self.on_hint: Callable[[str, str, str, float], None] | None = None
        """Told each hint function's ``(plugin, event, hint, seconds)``
        (``scheduler_queueing_hint_execution_duration_seconds``)."""

    def matching(self, event: ClusterEvent) -> Mapping[str, Hints]:
        """Profile → plugin → hint functions registered for ``event`` (memoized: the
        set of distinct incoming events is small)."""
        found = self._matching.get(event)
        if found is None:
            found = {}
            for profile, registrations in self._registered.items():
                hints: dict[str, list[QueueingHintFn | None]] = {}
                for r in registrations:
                    if r.event.matches(event):
                        hints.setdefault(r.plugin, []).append(r.hint)
                found[profile] = {plugin: tuple(fns) for plugin, fns in hints.items()}
            self._matching[event] = found
        return found

    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """``isEventOfInterest``: a wildcard event, or one some plugin registered."""
        return event.is_wildcard() or any(self.matching(event).values())

    def interested_plugins(self, event: ClusterEvent) -> frozenset[str]:
        """The plugins (of any profile) whose registrations match ``event``."""
        return frozenset(p for hints in self.matching(event).values() for p in hints)

    def strategy(
        self,
        pod: Pod,
        unschedulable: set[str],
        pending: set[str],
        event: ClusterEvent,
        old: object | None,
        new: object | None,
    ) -> QueueingStrategy:
        """``isPodWorthRequeuing`` for a pod its ``unschedulable`` and ``pending``
        plugins rejected. No rejector, or a wildcard event, means after backoff (a
        wildcard event carrying a Pod is for that pod only). A hint that raises counts
        as Queue, so that a bug never strands a pod."""
        if not unschedulable and not pending:
            return QueueingStrategy.QueueAfterBackoff
        if event.is_wildcard():
            if isinstance(new, Pod) and new.metadata.uid != pod.metadata.uid:
                return QueueingStrategy.QueueSkip
            return QueueingStrategy.QueueAfterBackoff
        hints = self.matching(event).get(pod.spec.scheduler_name)
        if hints is None:
            return QueueingStrategy.QueueAfterBackoff
        strategy = QueueingStrategy.QueueSkip
        for plugin in (*unschedulable, *pending) if pending else unschedulable:
            for fn in hints.get(plugin, ()):
                if not self._queue(fn, plugin, pod, event, old, new):
                    continue
                if plugin in pending:
                    return QueueingStrategy.QueueImmediately
                if not pending:
                    return QueueingStrategy.QueueAfterBackoff
                strategy = QueueingStrategy.QueueAfterBackoff
        return strategy

    def _queue(
        self,
        fn: QueueingHintFn | None,
        plugin: str,
        pod: Pod,
        event: ClusterEvent,
        old: object | None,
        new: object | None,
    ) -> bool:
        if fn is None:
            return True
        began = time.perf_counter()
        try:
            queue = fn(pod, old, new) == QueueingHint.Queue
        except Exception:
            self._timed(plugin, event, "Error", began)
            log.exception(
                "QueueingHintFn of %s failed for pod %s on %s; taking it as Queue",
                plugin,
                namespaced_name(pod.metadata),
                label(event),
            )
            return True
        self._timed(plugin, event, "Queue" if queue else "QueueSkip", began)
        return queue

    def _timed(self, plugin: str, event: ClusterEvent, hint: str, began: float) -> None:
        if self.on_hint is not None:
            self.on_hint(plugin, label(event), hint, time.perf_counter() - began)
