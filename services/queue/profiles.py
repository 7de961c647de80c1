"""What the queue needs of a scheduling profile: its QueueSort, PreEnqueue plugins and
the events its plugins registered (upstream hands the same to ``NewSchedulingQueue``:
the less function, ``preEnqueuePluginMap`` and ``queueingHintMap``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from contracts.k8s import DEFAULT_SCHEDULER_NAME
from services.framework.api.events import ClusterEvent, ClusterEventWithHint
from services.framework.api.interface import ExtensionPoint, PreEnqueuePlugin, QueueSortPlugin
from services.framework.api.listers import Listers
from services.framework.api.preemption import Preempting
from services.framework.api.status import Status, as_status
from services.framework.config import default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework
from services.queue.types import QueueEntry


@dataclass(frozen=True, slots=True)
class QueueProfile:
    scheduler_name: str
    queue_sort: QueueSortPlugin
    pre_enqueue: tuple[PreEnqueuePlugin, ...]
    """In the order the profile runs them."""
    events: Mapping[str, Sequence[ClusterEventWithHint]]
    """Plugin → the events that may make a pod it rejected schedulable (every plugin
    that can reject: PreEnqueue, PreFilter, Filter, Reserve, Permit)."""
    listers: Listers = field(default_factory=Listers)
    """What the profile's plugins read (Coscheduling's QueueSort: PodGroups); the queue
    keeps it current from the log."""

    def run_pre_enqueue_plugins(
        self, info: QueueEntry, plugin_events: Mapping[str, tuple[ClusterEvent, ...]]
    ) -> None:
        """``runPreEnqueuePlugins``: the gating plugin first, then the others in
        order; the first that does not return Success gates the pod (its name, the
        events that may ungate it — ``plugin_events`` — and its message go on ``info``)."""
        plugins = self.pre_enqueue
        if info.gating_plugin:
            plugins = tuple(sorted(plugins, key=lambda p: p.name != info.gating_plugin))
        for plugin in plugins:
            try:
                status: Status = plugin.pre_enqueue(info.pod_info)
            except Exception as err:
                status = as_status(err)
            if not status.is_success():
                info.unschedulable_plugins.add(plugin.name)
                info.gating_plugin = plugin.name
                info.gating_plugin_events = plugin_events.get(plugin.name, ())
                info.message = status.message()
                return
        info.gating_plugin = ""

    @classmethod
    def of(cls, framework: Framework) -> QueueProfile:
        plugins = framework.plugins
        names = framework.plugin_names(ExtensionPoint.PreEnqueue)
        return cls(
            scheduler_name=framework.profile_name,
            queue_sort=framework.queue_sort,
            pre_enqueue=tuple(cast(PreEnqueuePlugin, plugins[name]) for name in names),
            events=framework.events_to_register(),
            listers=framework.handle.listers,
        )

    @classmethod
    def default(
        cls,
        scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        *,
        now: Callable[[], float] | None = None,
        preempting: Preempting | None = None,
    ) -> QueueProfile:
        """Upstream's default plugins under ``scheduler_name`` (``now`` and
        ``preempting``: the queue's clock and running preemptions, for the plugins'
        PreEnqueue)."""
        framework = Framework(
            default_profile(scheduler_name), in_tree_registry(), now=now, preempting=preempting
        )
        return cls.of(framework)
