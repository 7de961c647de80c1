"""``Framework``: a profile's plugins, run in upstream's order for one pod.

:meth:`Framework.schedule_pod` is the algorithm part of the scheduling cycle
(``schedulePod``): PreFilter → Filter → (no node: FitError) → PreScore → Score →
NormalizeScore → weighted sum → the best node, ties broken by the framework's seeded
``random.Random``. It reads the snapshot and changes nothing in it (the one state it
keeps is the node sampling's start index, see framework.sampling), so the service,
the embedded simulator and benchmarks all call it directly. Assuming the pod, Reserve
and Permit are the caller's next steps. With ``explain=True`` the result also carries
an :class:`Explanation` (framework.explain). Permit and the binding cycle's points run
in runtime.binding, the measuring of each point in runtime.instrument.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray
from opentelemetry.trace import SpanKind

from contracts.k8s import Pod
from services.framework.api.diagnosis import NO_NODES_AVAILABLE, Diagnosis, FitError
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from services.framework.api.interface import (
    BindingState,
    BindPlugin,
    CycleState,
    EnqueueExtensions,
    ExplainsNode,
    ExtensionPoint,
    FilterPlugin,
    Handle,
    NoPods,
    NoWaitingPods,
    PermitPlugin,
    Plugin,
    PodLister,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ResourceFilter,
    ScorePlugin,
    WaitingPods,
)
from services.framework.api.listers import Listers
from services.framework.api.preemption import Preempting
from services.framework.api.registry import Registry, join_path
from services.framework.api.status import SUCCESS, Code, Status, StatusError, as_status
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.cache import Cache
from services.framework.cache.snapshot import Snapshot
from services.framework.runtime import binding, filtering, sampling, scoring
from services.framework.runtime.explain import Explanation, filter_verdicts, node_scores
from services.framework.runtime.instrument import PluginTimer, Recorder, Timed
from services.framework.runtime.profile import Profile, resolve_plugins
from services.framework.runtime.result import ScheduleResult
from services.framework.runtime.results import results_of

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

P = ExtensionPoint


def _always() -> bool:
    return True


class Framework:
    """The plugins of one profile, ready to run. Raises ConfigError when the profile
    is invalid (unknown plugins, bad args, no queue sort or bind plugin)."""

    def __init__(
        self,
        profile: Profile,
        registry: Registry,
        *,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
        traced: Callable[[], bool] | None = None,
        path: str = "",
        listers: Listers | None = None,
        waiting_pods: WaitingPods | None = None,
        pods: PodLister | None = None,
        now: Callable[[], float] | None = None,
        preempting: Preempting | None = None,
    ) -> None:
        """``listers``: the snapshot's (``Cache.listers``), for plugins that read
        namespaces, volumes or claims; an empty set when None. ``waiting_pods``: the
        pods waiting at Permit that the plugins' Handle shows and ``run_permit_plugins`` adds
        to (none: no pod can wait). ``pods``: the pods by group (Coscheduling);
        ``now``: the clock plugins keep time by (default: the wall clock);
        ``preempting``: the queue's running preemptions (DefaultPreemption's PreEnqueue).
        ``traced``: asked once per attempt whether ``tracer`` makes the extension
        points' spans (default: always); the scheduler passes ``telemetry.tracing``, so
        spans are made only while they go somewhere."""
        resolved = resolve_plugins(profile, registry, path)
        self.rng = rng or random.Random()
        handle = Handle(
            profile.scheduler_name,
            listers or Listers(),
            waiting_pods or NoWaitingPods(),
            pods or NoPods(),
            now or time.time,
            runner=self,
            rng=self.rng,
            preempting=preempting if preempting is not None else Preempting(),
        )
        self._cycle_nodes: Snapshot | None = None
        self._cycle_nominated: filtering.NominatedPods | None = None
        self._cycle_post_filter = True
        self.handle = handle
        """What the plugins were given (listers, waiting pods)."""
        self.profile = profile
        self.tracer = tracer
        self.traced: Callable[[], bool] = traced or _always
        self._traced_now = True
        """``traced()`` as asked at the start of this attempt (once per pod)."""
        self.recorder: Recorder | None = None
        """Where extension-point and plugin durations go (the scheduler's metrics);
        None: nothing is measured."""
        self._sampled = False
        self.plugins: dict[str, Plugin] = {}
        for name in resolved.needed:
            entry = registry[name]
            args = profile.plugin_args.get(name)
            if args is None:
                args = entry.decode_args(None, join_path(path, f"pluginConfig[{name}]"))
            self.plugins[name] = entry.factory(args, handle)
        self.score_weights = dict(resolved.score_weights)
        self.next_start_node_index = sampling.StartIndex()
        """Where the next sampled Filter search starts (per profile here; upstream
        keeps one per scheduler). Used only when ``percentageOfNodesToScore`` is set."""
        self._points = resolved.points
        self.queue_sort = cast(QueueSortPlugin, self._at(P.QueueSort)[0])
        self.pre_filter_plugins = cast(list[PreFilterPlugin], self._at(P.PreFilter))
        self.filter_plugins = cast(list[FilterPlugin], self._at(P.Filter))
        self.pre_score_plugins = cast(list[PreScorePlugin], self._at(P.PreScore))
        self.score_plugins = cast(list[ScorePlugin], self._at(P.Score))
        self.reserve_plugins = cast(list[ReservePlugin], self._at(P.Reserve))
        self.post_filter_plugins = cast(list[PostFilterPlugin], self._at(P.PostFilter))
        self.permit_plugins = cast(list[PermitPlugin], self._at(P.Permit))
        self.pre_bind_plugins = cast(list[PreBindPlugin], self._at(P.PreBind))
        self.bind_plugins = cast(list[BindPlugin], self._at(P.Bind))
        self.post_bind_plugins = cast(list[PostBindPlugin], self._at(P.PostBind))
        self._stateful = [p for p in self.plugins.values() if isinstance(p, BindingState)]
        self._resource_filters = [p for p in self.filter_plugins if isinstance(p, ResourceFilter)]

    @property
    def profile_name(self) -> str:
        return self.profile.scheduler_name

    def _at(self, point: ExtensionPoint) -> list[Plugin]:
        return [self.plugins[name] for name in self._points[point]]

    def plugin_names(self, point: ExtensionPoint) -> tuple[str, ...]:
        return self._points[point]

    def checked_resources(self, pod: PodInfo) -> frozenset[str]:
        """The resources of ``pod`` the enabled Filter plugins compare with what a node
        has left (``ResourceFilter``; ``pods`` for the pod count): what the store's
        reservation must re-check. Empty when no enabled filter checks any (for example
        NodeResourcesFit's filter disabled): the reservation then never vetoes, as
        upstream's AssumePod never does."""
        checked: frozenset[str] = frozenset()
        for plugin in self._resource_filters:
            checked |= plugin.checked_resources(pod)
        return checked

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
        span = (
            nullcontext()
            if self.tracer is None or not self._traced_now
            else self.tracer.start_as_current_span(name, kind=SpanKind.INTERNAL)
        )
        if self.recorder is None:
            return span
        return Timed(self.recorder, name, self.profile.scheduler_name, span)

    def _plugin_timer(self) -> PluginTimer | None:
        """Per-plugin durations for this attempt, if it is one of the sampled ones."""
        recorder = self.recorder
        if recorder is None:
            return None
        profile = self.profile.scheduler_name

        def timer(plugin: str, point: str, status: str, seconds: float, nodes: int) -> None:
            recorder.evaluated(plugin, point, profile, nodes)
            if self._sampled:
                recorder.plugin(plugin, point, status, seconds)

        return timer

    # -- the algorithm ----------------------------------------------------------

    def schedule_pod(
        self,
        snapshot: Cache | Snapshot,
        pod: Pod | PodInfo,
        *,
        state: CycleState | None = None,
        nominated: filtering.NominatedPods | None = None,
        explain: bool = False,
        post_filter: bool = True,
    ) -> ScheduleResult:
        """Find the node for ``pod`` (``schedulePod``); see :class:`ScheduleResult`.
        ``nominated`` gives the pods nominated to a node, for the two-pass filter.
        ``post_filter=False``: a pod that fits nowhere is not handed to PostFilter (the
        caller schedules it again, with PostFilter, once what is ahead of it is done)."""
        info = pod if isinstance(pod, PodInfo) else PodInfo.of(pod)
        nodes = snapshot.snapshot() if isinstance(snapshot, Cache) else snapshot
        state = state if state is not None else CycleState()
        if nodes.num_nodes == 0:
            status = Status(Code.UnschedulableAndUnresolvable, (NO_NODES_AVAILABLE,))
            return ScheduleResult(info, state, status=status)
        self._cycle_post_filter = post_filter
        try:
            return self._schedule(state, info, nodes, nominated, explain)
        except StatusError as err:
            return ScheduleResult(info, state, status=err.status)

    def _schedule(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Snapshot,
        nominated: filtering.NominatedPods | None,
        explain: bool,
    ) -> ScheduleResult:
        diagnosis = Diagnosis(num_nodes=nodes.num_nodes)
        if nominated is not None:
            nominated = nominated.remembered()
        self._cycle_nodes, self._cycle_nominated = nodes, nominated
        self._traced_now = self.tracer is not None and self.traced()
        state.explain = explain
        timer = self._plugin_timer()
        if timer is not None and self.recorder is not None:
            self._sampled = self.recorder.sample()
        with self._span("PreFilter") as point:
            narrowed, status, plugins = filtering.run_pre_filter_plugins(
                self.pre_filter_plugins, state, pod, nodes, timer
            )
            if isinstance(point, Timed):
                point.status = status.code.name
        diagnosis.unschedulable_plugins = plugins
        if not status.is_success():
            if not status.is_rejected():
                return ScheduleResult(pod, state, status=status)
            return self._pre_filter_rejected(pod, state, nodes, diagnosis, status, explain)
        candidates, absent = self._candidates(nodes, narrowed.node_names, plugins)
        with self._span("Filter"):
            verdicts = filtering.run_filter_plugins(
                self.filter_plugins, state, pod, nodes, candidates, timer
            )
            overrides: dict[int, Status] = {}
            if nominated is not None:
                # A node passes only if it passes both with and without the nominated
                # pods: the pass with them runs first where the filters alone pass.
                failing = candidates & ~verdicts.passed
                rows = np.flatnonzero(candidates & verdicts.passed)
                overrides = self._nominated_failures(state, pod, nodes, rows)
                for row in overrides:
                    verdicts.passed[row] = False
        found = self._find(pod, nodes, candidates, verdicts.passed)
        feasible, evaluated = found.feasible, len(found.processed)
        if nominated is not None and (explain or len(feasible) == 0):
            # The statuses of the other nodes are shown: where the pass with the
            # nominated pods fails, it gives the status (upstream runs it first).
            overrides.update(self._nominated_failures(state, pod, nodes, np.flatnonzero(failing)))
        explanation = None
        if explain:
            shown = found.processed.tolist()
            if absent is not None:
                shown += np.flatnonzero(~candidates).tolist()
            statuses = filtering.node_statuses(verdicts, self.filter_plugins, overrides, absent)
            rejected = filter_verdicts(nodes.names, shown, statuses, " ".join(sorted(plugins)))
            filters = tuple(
                p.name for p in self.filter_plugins if p.name not in state.skip_filter_plugins
            )
            explanation = Explanation(evaluated, len(feasible), filters, rejected, {})
        if len(feasible) == 0:
            filtering.diagnose(verdicts, self.filter_plugins, overrides, absent, diagnosis)
            return self._unschedulable(pod, state, nodes, diagnosis, explanation)
        if len(feasible) == 1:
            node = nodes.names[int(feasible[0])]
            explanation = self._with_node_details(explanation, state, pod, node)
            return ScheduleResult(
                pod, state, node, evaluated_nodes=evaluated, feasible_nodes=1,
                explanation=explanation,
            )  # fmt: skip
        breakdown: dict[str, Int64Array] | None = {} if explain else None
        totals = self._prioritize(state, pod, nodes, feasible, breakdown)
        row = scoring.select_host(feasible, totals, self.rng)
        if explanation is not None and breakdown is not None:
            scored = node_scores(
                nodes.names, feasible.tolist(), breakdown, self.score_weights, totals
            )
            explanation = replace(explanation, score=scored)
        explanation = self._with_node_details(explanation, state, pod, nodes.names[row])
        return ScheduleResult(
            pod,
            state,
            nodes.names[row],
            evaluated_nodes=evaluated,
            feasible_nodes=len(feasible),
            scores=breakdown or {},
            explanation=explanation,
        )

    def _with_node_details(
        self, explanation: Explanation | None, state: CycleState, pod: PodInfo, node: str
    ) -> Explanation | None:
        """An explained attempt's plugins' details for the node chosen (ExplainsNode)."""
        if explanation is None:
            return None
        details = {}
        for name, plugin in self.plugins.items():
            if isinstance(plugin, ExplainsNode):
                said = plugin.explain_node(state, pod, node)
                if said:
                    details[name] = said
        return replace(explanation, node_details=details) if details else explanation

    def _pre_filter_rejected(
        self,
        pod: PodInfo,
        state: CycleState,
        nodes: Snapshot,
        diagnosis: Diagnosis,
        status: Status,
        explain: bool,
    ) -> ScheduleResult:
        """PreFilter rejected the pod: every node has that status (no node evaluated)."""
        diagnosis.pre_filter_msg = status.message()
        diagnosis.add_plugin_status(status)
        diagnosis.node_status = lambda _row: status
        diagnosis.all_unresolvable = status.code == Code.UnschedulableAndUnresolvable
        explanation = None
        if explain:
            every = filter_verdicts(nodes.names, range(nodes.num_nodes), diagnosis.node_status)
            explanation = Explanation(0, 0, (), every, {})
        return self._unschedulable(pod, state, nodes, diagnosis, explanation)

    def _find(
        self,
        pod: PodInfo,
        nodes: Snapshot,
        candidates: NDArray[np.bool_],
        passed: NDArray[np.bool_],
    ) -> sampling.Sample:
        """The feasible nodes to score and the nodes processed to find them: the
        pod's nominated node alone if it fits (``evaluateNominatedNode``), else every
        candidate unless the profile sets ``percentageOfNodesToScore`` (see sampling)."""
        nominated = nodes.index.get(pod.pod.status.nominated_node_name or "")
        if nominated is not None and passed[nominated]:
            only = np.array([nominated], dtype=np.intp)
            return sampling.Sample(only, only)
        rows = np.flatnonzero(candidates)
        percentage = self.profile.percentage_of_nodes_to_score
        if percentage is None:
            return sampling.Sample(np.flatnonzero(passed), rows)
        # Without Score plugins any feasible node will do (``hasScoring``).
        k = sampling.num_feasible_nodes_to_find(percentage, len(rows)) if self.score_plugins else 1
        found = sampling.first_feasible(rows, passed, self.next_start_node_index.value, k)
        self.next_start_node_index.advance(len(found.processed), nodes.num_nodes)
        return found

    def _candidates(
        self, nodes: Snapshot, allowed: frozenset[str] | None, plugins: set[str]
    ) -> tuple[NDArray[np.bool_], Status | None]:
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
        nodes: Snapshot,
        rows: np.ndarray[Any, np.dtype[np.intp]],
        breakdown: dict[str, Int64Array] | None,
    ) -> Int64Array:
        """``prioritizeNodes``: without Score plugins every node scores 1."""
        if not self.score_plugins:
            return np.ones(len(rows), dtype=np.int64)
        timer = self._plugin_timer()
        with self._span("PreScore"):
            scoring.run_pre_score_plugins(self.pre_score_plugins, state, pod, nodes, rows, timer)
        with self._span("Score"):
            return scoring.run_score_plugins(
                self.score_plugins, self.score_weights, state, pod, nodes, rows, breakdown, timer
            )

    def _unschedulable(
        self,
        pod: PodInfo,
        state: CycleState,
        nodes: Snapshot,
        diagnosis: Diagnosis,
        explanation: Explanation | None = None,
    ) -> ScheduleResult:
        result: PostFilterResult | None = None
        if self.post_filter_plugins and self._cycle_post_filter:
            with self._span("PostFilter") as point:
                result, status = self.run_post_filter_plugins(state, pod, diagnosis)
                if isinstance(point, Timed):
                    point.status = status.code.name
            diagnosis.post_filter_msg = status.message()
        error = FitError(pod.key, nodes.num_nodes, diagnosis)
        status = Status(Code.Unschedulable, (str(error),))
        if explanation is not None and result is not None and result.explanation is not None:
            explanation = replace(explanation, preemption=result.explanation)
        return ScheduleResult(
            pod, state, status=status, fit_error=error, explanation=explanation,
            post_filter=result,
        )  # fmt: skip

    # -- after the algorithm ----------------------------------------------------

    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """``RunReservePluginsReserve``: the first failure, with its plugin."""
        return binding.run_reserve_plugins(self.reserve_plugins, state, pod, node)

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """``RunReservePluginsUnreserve``: in reverse order."""
        for plugin in reversed(self.reserve_plugins):
            plugin.unreserve(state, pod, node)

    def run_post_filter_plugins(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """``RunPostFilterPlugins``: the first Success or UnschedulableAndUnresolvable
        ends it; an error is an Error status; else Unschedulable with every plugin's
        reasons, blaming the first plugin, and the last result that nominates."""
        reasons: list[str] = []
        rejector = ""
        kept: PostFilterResult | None = None
        recorded = results_of(state)
        for plugin in self.post_filter_plugins:
            try:
                result, status = plugin.post_filter(state, pod, diagnosis)
            except Exception as err:
                result, status = None, as_status(err)
            if recorded is not None:
                recorded.post_filtered(plugin.name, result, status)
            if status.is_success():
                return result, status
            if status.code == Code.UnschedulableAndUnresolvable:
                return result, status.with_plugin(plugin.name)
            if not status.is_rejected():
                return None, Status(Code.Error, status.reasons, plugin.name)
            if result is not None and result.nominated_node_name is not None:
                kept = result
            reasons.extend(status.reasons)
            rejector = rejector or plugin.name
        return kept, Status(Code.Unschedulable, tuple(reasons), rejector)

    # -- FrameworkRunner: what PostFilter plugins may ask of the cycle -------------

    def run_pre_filter_plugins(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Snapshot,
        nominated: filtering.NominatedPods | None = None,
    ) -> Status:
        """``RunPreFilterPlugins`` outside a whole cycle: ``nodes`` becomes the cycle's
        snapshot (what PostFilter plugins and ``filter_many`` see) and ``state`` holds
        the PreFilter plugins' state, as upstream's tests and nodeFit checks use it."""
        self._cycle_nodes, self._cycle_nominated = nodes, nominated
        return filtering.run_pre_filter_plugins(self.pre_filter_plugins, state, pod, nodes)[1]

    def cycle_nodes(self) -> Snapshot:
        if self._cycle_nodes is None:
            raise StatusError("no scheduling cycle is running")
        return self._cycle_nodes

    def nominated_pods_for(self, node: str) -> Sequence[PodInfo]:
        nominated = self._cycle_nominated
        return () if nominated is None else nominated.pods_for(node)

    def filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, view: Snapshot) -> Status:
        """``RunFilterPluginsWithNominatedPods`` on the one node of ``view``."""
        passed, status = self.filter_many(state, pod, view)
        return SUCCESS if passed[0] else status(0)

    def filter_many(
        self, state: CycleState, pod: PodInfo, view: Snapshot
    ) -> tuple[NDArray[np.bool_], Callable[[int], Status]]:
        """``RunFilterPluginsWithNominatedPods`` on every node of ``view`` at once."""
        return filtering.filter_with_nominated(
            self.filter_plugins, self.pre_filter_plugins, state, pod, view, self._cycle_nominated
        )

    def fits_many(
        self, state: CycleState, pod: PodInfo, view: Snapshot, rows: Sequence[int]
    ) -> NDArray[np.bool_]:
        """Which of ``rows`` pass ``RunFilterPluginsWithNominatedPods``, without statuses."""
        return filtering.fits_with_nominated(
            self.filter_plugins, self.pre_filter_plugins, state, pod, view, rows,
            self._cycle_nominated,
        )  # fmt: skip

    def _nominated_failures(
        self, state: CycleState, pod: PodInfo, view: Snapshot, rows: NDArray[np.intp]
    ) -> dict[int, Status]:
        """The rows of ``rows`` that fail with the cycle's nominated pods added."""
        nominated = self._cycle_nominated
        if nominated is None:
            return {}
        return filtering.nominated_pass(
            self.filter_plugins, self.pre_filter_plugins, state, pod, view, rows, nominated
        )

    def extensions_active(self, state: CycleState) -> bool:
        return filtering.extensions_active(self.pre_filter_plugins, state)

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: str) -> Status:
        return filtering.run_extension(self.pre_filter_plugins, state, pod, to_add, node, add=True)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: str) -> Status:
        return filtering.run_extension(
            self.pre_filter_plugins, state, pod, to_remove, node, add=False
        )

    def run_permit_plugins(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """``RunPermitPlugins`` (see runtime.binding); a pod asked to wait joins the
        Handle's waiting pods."""
        return binding.run_permit_plugins(
            self.permit_plugins, self.handle.waiting_pods, state, pod, node
        )

    async def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return await binding.run_pre_bind_plugins(self.pre_bind_plugins, state, pod, node)

    async def run_bind_plugins(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return await binding.run_bind_plugins(self.bind_plugins, state, pod, node)

    def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node: str) -> None:
        binding.run_post_bind_plugins(self.post_bind_plugins, state, pod, node)

    def binding_state(self, state: CycleState) -> dict[str, bytes]:
        return binding.binding_state(self._stateful, state)

    def restore_binding_state(self, state: CycleState, data: Mapping[str, bytes]) -> None:
        binding.restore_binding_state(self._stateful, state, data)


def rejection_message(pod: PodInfo, node: str, status: Status) -> str:
    """The FailedScheduling message of a pod rejected after the algorithm chose
    ``node`` (Reserve, Permit, WaitOnPermit): upstream wraps the status in a FitError
    of one node, ``0/1 nodes are available: 1 <reason>.``"""
    diagnosis = Diagnosis()
    for reason in status.reasons or ("",):
        diagnosis.reason_counts[reason] += 1
    diagnosis.add_plugin_status(status)
    return str(FitError(pod.key, 1, diagnosis))
