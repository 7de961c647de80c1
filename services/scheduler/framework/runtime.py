"""``Framework``: a profile's plugins, run in upstream's order for one pod.

:meth:`Framework.schedule_one` is the algorithm part of the scheduling cycle
(``schedulePod``): PreFilter → Filter → (no node: FitError) → PreScore → Score →
NormalizeScore → weighted sum → the best node, ties broken by the framework's seeded
``random.Random``. It is pure and synchronous: it reads the snapshot and changes
nothing, so the service, the embedded simulator and benchmarks all call it directly.
Assuming the pod, Reserve and Permit are the caller's next steps.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from contracts.k8s import Pod
from services.scheduler.framework import filtering, scoring
from services.scheduler.framework.diagnosis import NO_NODES_AVAILABLE, Diagnosis, FitError
from services.scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from services.scheduler.framework.interface import (
    CycleState,
    EnqueueExtensions,
    ExtensionPoint,
    FilterPlugin,
    Handle,
    Plugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from services.scheduler.framework.listers import Listers
from services.scheduler.framework.nodeinfo import Int64Array, NodeTable
from services.scheduler.framework.profile import Profile, resolve_plugins
from services.scheduler.framework.registry import Registry, join_path
from services.scheduler.framework.snapshot import Snapshot
from services.scheduler.framework.status import SUCCESS, Code, Status, StatusError, as_status
from services.scheduler.framework.types import PodInfo

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

P = ExtensionPoint


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """What one run of the algorithm decided for a pod.

    - ``node`` set, status Success: the pod fits ``node`` (the caller assumes it).
    - ``fit_error`` set, status Unschedulable: no node fits; ``message`` is upstream's
      FailedScheduling text, ``unschedulable_plugins`` the plugins that rejected.
    - status UnschedulableAndUnresolvable without a FitError: there are no nodes.
    - status Error: a plugin failed; ``message`` says which and why.
    """

    pod: PodInfo
    state: CycleState
    node: str | None = None
    status: Status = SUCCESS
    fit_error: FitError | None = None
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    scores: Mapping[str, Int64Array] = field(default_factory=dict)
    """Per Score plugin, normalized scores of the feasible nodes (only when explaining)."""

    @property
    def message(self) -> str:
        return str(self.fit_error) if self.fit_error is not None else self.status.message()

    @property
    def unschedulable_plugins(self) -> frozenset[str]:
        if self.fit_error is None:
            return frozenset()
        return frozenset(self.fit_error.diagnosis.unschedulable_plugins)


class Framework:
    """The plugins of one profile, ready to run. Raises ConfigError when the profile
    is invalid (unknown plugins, bad args, no queue sort or bind plugin)."""

    def __init__(
        self,
        profile: Profile,
        registry: Registry | None = None,
        *,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
        path: str = "",
        listers: Listers | None = None,
    ) -> None:
        """``listers``: the snapshot's (``Snapshot.listers``), for plugins that read
        namespaces, volumes or claims; an empty set when None."""
        if registry is None:
            from services.scheduler.plugins import in_tree_registry

            registry = in_tree_registry()
        resolved = resolve_plugins(profile, registry, path)
        handle = Handle(profile.scheduler_name, listers or Listers())
        self.profile = profile
        self.rng = rng or random.Random()
        self.tracer = tracer
        self.plugins: dict[str, Plugin] = {}
        for name in resolved.needed:
            entry = registry[name]
            args = profile.plugin_args.get(name)
            if args is None:
                args = entry.decode_args(None, join_path(path, f"pluginConfig[{name}]"))
            self.plugins[name] = entry.factory(args, handle)
        self.score_weights = dict(resolved.score_weights)
        self._points = resolved.points
        self.queue_sort = cast(QueueSortPlugin, self._at(P.QueueSort)[0])
        self.pre_filter_plugins = cast(list[PreFilterPlugin], self._at(P.PreFilter))
        self.filter_plugins = cast(list[FilterPlugin], self._at(P.Filter))
        self.pre_score_plugins = cast(list[PreScorePlugin], self._at(P.PreScore))
        self.score_plugins = cast(list[ScorePlugin], self._at(P.Score))
        self.reserve_plugins = cast(list[ReservePlugin], self._at(P.Reserve))

    @property
    def profile_name(self) -> str:
        return self.profile.scheduler_name

    def _at(self, point: ExtensionPoint) -> list[Plugin]:
        return [self.plugins[name] for name in self._points[point]]

    def plugin_names(self, point: ExtensionPoint) -> tuple[str, ...]:
        return self._points[point]

    def events_to_register(self) -> dict[str, Sequence[ClusterEventWithHint]]:
        """Plugin name → the events that may make a pod it rejected schedulable, for the
        plugins that can reject (``fillEventToPluginMap``): a plugin that registers
        nothing is woken by every event."""
        rejecting = {*self._points[P.PreEnqueue], *self._points[P.PreFilter]}
        rejecting |= {*self._points[P.Filter], *self._points[P.Reserve], *self._points[P.Permit]}
        every = (ClusterEventWithHint(ClusterEvent(EventResource.WildCard, ActionType.All)),)
        registered: dict[str, Sequence[ClusterEventWithHint]] = {}
        for name in sorted(rejecting):
            plugin = self.plugins[name]
            if isinstance(plugin, EnqueueExtensions):
                registered[name] = plugin.events_to_register()
            else:
                registered[name] = every
        return registered

    def _span(self, name: str) -> Any:
        return nullcontext() if self.tracer is None else self.tracer.start_as_current_span(name)

    # -- the algorithm ----------------------------------------------------------

    def schedule_one(
        self,
        snapshot: Snapshot | NodeTable,
        pod: Pod | PodInfo,
        *,
        state: CycleState | None = None,
        nominated: filtering.NominatedPods | None = None,
        explain: bool = False,
    ) -> ScheduleResult:
        """Find the node for ``pod`` (``schedulePod``); see :class:`ScheduleResult`.
        ``nominated`` gives the pods nominated to a node, for the two-pass filter."""
        info = pod if isinstance(pod, PodInfo) else PodInfo.of(pod)
        nodes = snapshot.table() if isinstance(snapshot, Snapshot) else snapshot
        state = state if state is not None else CycleState()
        if nodes.num_nodes == 0:
            status = Status(Code.UnschedulableAndUnresolvable, (NO_NODES_AVAILABLE,))
            return ScheduleResult(info, state, status=status)
        try:
            return self._schedule(state, info, nodes, nominated, explain)
        except StatusError as err:
            return ScheduleResult(info, state, status=err.status)

    def _schedule(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        nominated: filtering.NominatedPods | None,
        explain: bool,
    ) -> ScheduleResult:
        diagnosis = Diagnosis()
        with self._span("PreFilter"):
            narrowed, status, plugins = filtering.run_pre_filter(
                self.pre_filter_plugins, state, pod, nodes
            )
        diagnosis.unschedulable_plugins = plugins
        if not status.is_success():
            if not status.is_rejected():
                return ScheduleResult(pod, state, status=status)
            diagnosis.pre_filter_msg = status.message()
            diagnosis.add_plugin_status(status)
            diagnosis.node_status = lambda _row: status
            diagnosis.all_unresolvable = status.code == Code.UnschedulableAndUnresolvable
            return self._unschedulable(pod, state, nodes, diagnosis)
        candidates, absent = self._candidates(nodes, narrowed.node_names, plugins)
        with self._span("Filter"):
            verdicts = filtering.run_filters(self.filter_plugins, state, pod, nodes, candidates)
            overrides: dict[int, Status] = {}
            if nominated is not None:
                rows = np.flatnonzero(candidates)
                overrides = filtering.nominated_pass(
                    self.filter_plugins, self.pre_filter_plugins, state, pod, nodes, rows, nominated
                )
                for row in overrides:
                    verdicts.passed[row] = False
        feasible = np.flatnonzero(verdicts.passed)
        evaluated = int(np.count_nonzero(candidates))
        if len(feasible) == 0:
            filtering.diagnose(verdicts, self.filter_plugins, overrides, absent, diagnosis)
            return self._unschedulable(pod, state, nodes, diagnosis)
        nominated_row = nodes.index.get(pod.pod.status.nominated_node_name or "")
        if nominated_row is not None and verdicts.passed[nominated_row]:
            feasible = np.array([nominated_row], dtype=np.intp)
        if len(feasible) == 1:
            node = nodes.names[int(feasible[0])]
            return ScheduleResult(pod, state, node, evaluated_nodes=evaluated, feasible_nodes=1)
        breakdown: dict[str, Int64Array] | None = {} if explain else None
        totals = self._prioritize(state, pod, nodes, feasible, breakdown)
        row = scoring.select_host(feasible, totals, self.rng)
        return ScheduleResult(
            pod,
            state,
            nodes.names[row],
            evaluated_nodes=evaluated,
            feasible_nodes=len(feasible),
            scores=breakdown or {},
        )

    def _candidates(
        self, nodes: NodeTable, allowed: frozenset[str] | None, plugins: set[str]
    ) -> tuple[np.ndarray[Any, np.dtype[np.bool_]], Status | None]:
        if allowed is None:
            return np.ones(nodes.num_nodes, dtype=np.bool_), None
        mask = np.zeros(nodes.num_nodes, dtype=np.bool_)
        rows = [nodes.index[name] for name in allowed if name in nodes.index]
        mask[rows] = True
        reason = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"
        return mask, Status(Code.UnschedulableAndUnresolvable, (reason,))

    def _prioritize(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        rows: np.ndarray[Any, np.dtype[np.intp]],
        breakdown: dict[str, Int64Array] | None,
    ) -> Int64Array:
        """``prioritizeNodes``: without Score plugins every node scores 1."""
        if not self.score_plugins:
            return np.ones(len(rows), dtype=np.int64)
        with self._span("PreScore"):
            scoring.run_pre_score(self.pre_score_plugins, state, pod, nodes, rows)
        with self._span("Score"):
            return scoring.run_score(
                self.score_plugins, self.score_weights, state, pod, nodes, rows, breakdown
            )

    def _unschedulable(
        self, pod: PodInfo, state: CycleState, nodes: NodeTable, diagnosis: Diagnosis
    ) -> ScheduleResult:
        # PostFilter (preemption) plugins come with the next issue: with none, upstream's
        # RunPostFilterPlugins returns Unschedulable with no message.
        error = FitError(pod.key, nodes.num_nodes, diagnosis)
        status = Status(Code.Unschedulable, (str(error),))
        return ScheduleResult(pod, state, status=status, fit_error=error)

    # -- after the algorithm ----------------------------------------------------

    def run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """``RunReservePluginsReserve``: the first failure, with its plugin."""
        for plugin in self.reserve_plugins:
            try:
                status = plugin.reserve(state, pod, node)
            except Exception as err:
                status = as_status(err)
            if not status.is_success():
                if not status.is_rejected():
                    reason = f'running Reserve plugin "{plugin.name}": {status.message()}'
                    status = Status(Code.Error, (reason,))
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """``RunReservePluginsUnreserve``: in reverse order."""
        for plugin in reversed(self.reserve_plugins):
            plugin.unreserve(state, pod, node)
