"""PreFilter and Filter over the whole node table (``findNodesThatFitPod``).

Filter plugins run in profile order over every candidate node at once; a node's status
is that of the first plugin that rejects it, as upstream's per-node loop decides. With
nominated pods (preemption), a node that has nominated pods of equal or higher priority
is filtered twice, as ``RunFilterPluginsWithNominatedPods`` does: first as if those pods
ran there (its status, if it fails, is that pass's), then as it is; it must pass both.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from services.framework.api.diagnosis import Diagnosis
from services.framework.api.interface import (
    CycleState,
    FilterPlugin,
    FilterResult,
    PreFilterPlugin,
    PreFilterResult,
)
from services.framework.api.status import SUCCESS, Code, Status, StatusError, as_status
from services.framework.api.types import PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.runtime.results import results_of


@dataclass(frozen=True, slots=True)
class NominatedPods:
    """The pods nominated to nodes (``PodNominator``): ``nodes`` names the nodes that have
    any, so the first filter pass visits only those; ``pods_for(node)`` gives them
    (``NominatedPodsForNode``), as of the moment it is called."""

    nodes: Collection[str]
    pods_for: Callable[[str], Sequence[PodInfo]]

    @classmethod
    def of(cls, by_node: Mapping[str, Sequence[PodInfo]]) -> NominatedPods:
        """Fixed pods per node."""
        return cls(tuple(by_node), lambda name: by_node.get(name, ()))

    def remembered(self) -> NominatedPods:
        """These nominated pods with each node's asked for once, for one scheduling
        cycle (nothing it does changes them; the preemption's dry run and the FitError
        ask for the same nodes many times)."""
        return NominatedPods(self.nodes, functools.cache(self.pods_for))


@dataclass(slots=True)
class Verdicts:
    """Per node: passed, and if not, which plugin (index) and which of its codes."""

    passed: NDArray[np.bool_]
    rejected_by: NDArray[np.int16]
    codes: NDArray[np.int64]
    results: list[FilterResult | None] = field(default_factory=list)


def run_pre_filter_plugins(
    plugins: Sequence[PreFilterPlugin],
    state: CycleState,
    pod: PodInfo,
    nodes: Snapshot,
    timer: Callable[[str, str, str, float, int], None] | None = None,
) -> tuple[PreFilterResult, Status, set[str]]:
    """``RunPreFilterPlugins``: the merged PreFilterResult, the status, and the plugins
    that narrowed the nodes. ``timer``: told each plugin's status and duration."""
    result = PreFilterResult()
    returned = SUCCESS
    narrowing: list[str] = []
    recorded = results_of(state)
    for plugin in plugins:
        began = time.perf_counter() if timer is not None else 0.0
        try:
            narrowed, status = plugin.pre_filter(state, pod, nodes)
        except Exception as err:
            status, narrowed = as_status(err), None
        if timer is not None:
            timer(plugin.name, "PreFilter", status.code.name, time.perf_counter() - began, 1)
        if recorded is not None:
            recorded.pre_filtered(plugin.name, status, narrowed)
        if status.is_skip():
            state.skip_filter_plugins.add(plugin.name)
            continue
        if not status.is_success():
            status = status.with_plugin(plugin.name)
            if status.code == Code.UnschedulableAndUnresolvable:
                return result, status, set()
            if status.code == Code.Unschedulable:
                returned = status
                continue
            reason = f'running PreFilter plugin "{plugin.name}": {status.message()}'
            return result, Status(Code.Error, (reason,), plugin.name), set()
        if narrowed is not None and not narrowed.all_nodes():
            narrowing.append(plugin.name)
        result = result.merge(narrowed)
        if result.node_names is not None and not result.node_names:
            msg = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowing)}] simultaneously"
            if len(narrowing) == 1:
                msg = f"node(s) didn't satisfy plugin {narrowing[0]}"
            return result, Status(Code.UnschedulableAndUnresolvable, (msg,)), set(narrowing)
    return result, returned, set(narrowing)


def run_filter_plugins(
    plugins: Sequence[FilterPlugin],
    state: CycleState,
    pod: PodInfo,
    nodes: Snapshot,
    candidates: NDArray[np.bool_],
    timer: Callable[[str, str, str, float, int], None] | None = None,
) -> Verdicts:
    """Every filter over every node; only nodes in ``candidates`` can pass. Raises
    StatusError when a plugin fails internally. ``timer``: told each plugin's duration
    and how many nodes it evaluated (those still passing when it ran)."""
    n = nodes.num_nodes
    verdicts = Verdicts(candidates.copy(), np.full(n, -1, np.int16), np.zeros(n, np.int64))
    for index, plugin in enumerate(plugins):
        if plugin.name in state.skip_filter_plugins or not verdicts.passed.any():
            verdicts.results.append(None)
            continue
        began = time.perf_counter() if timer is not None else 0.0
        try:
            result = plugin.filter_all(state, pod, nodes)
        except Exception as err:
            reason = f'running "{plugin.name}" filter plugin: {as_status(err).message()}'
            raise StatusError(reason) from err
        if timer is not None:
            evaluated = int(np.count_nonzero(verdicts.passed))
            timer(plugin.name, "Filter", "Success", time.perf_counter() - began, evaluated)
        verdicts.results.append(result)
        newly = verdicts.passed & ~result.passed
        if newly.any():
            verdicts.rejected_by[newly] = index
            verdicts.codes[newly] = result.codes[newly]
            verdicts.passed &= result.passed
    return verdicts


def status_of(verdicts: Verdicts, plugins: Sequence[FilterPlugin], row: int) -> Status | None:
    index = int(verdicts.rejected_by[row])
    result = verdicts.results[index] if index >= 0 else None
    if result is None:
        return None
    return result.describe(int(verdicts.codes[row])).with_plugin(plugins[index].name)


def shared_statuses(
    verdicts: Verdicts, plugins: Sequence[FilterPlugin]
) -> Callable[[int], Status | None]:
    """:func:`status_of` for many rows of one run: statuses are immutable and depend
    only on the rejecting plugin and its code, so rows that share both share one (a
    dry run or a nominated pass over thousands of nodes asks for every row's)."""
    shared: dict[tuple[int, int], Status | None] = {}

    def of(row: int) -> Status | None:
        key = (int(verdicts.rejected_by[row]), int(verdicts.codes[row]))
        if key not in shared:
            shared[key] = status_of(verdicts, plugins, row)
        return shared[key]

    return of


def extensions_active(pre_filters: Sequence[PreFilterPlugin], state: CycleState) -> bool:
    """Whether a PreFilter AddPod/RemovePod extension would update ``state`` (else
    adding or removing pods changes only the nodes' own columns)."""
    return any(
        p.name not in state.skip_filter_plugins and p.pre_filter_extensions() is not None
        for p in pre_filters
    )


def nominated_pass(
    plugins: Sequence[FilterPlugin],
    pre_filters: Sequence[PreFilterPlugin],
    state: CycleState,
    pod: PodInfo,
    nodes: Snapshot,
    rows: NDArray[np.intp],
    nominated: NominatedPods,
) -> dict[int, Status]:
    """The first pass for candidate ``rows`` that have nominated pods of priority ≥ the
    pod's: row → rejecting Status for the rows that fail with those pods added."""
    failed: dict[int, Status] = {}
    candidate = np.zeros(nodes.num_nodes, dtype=np.bool_)
    candidate[rows] = True
    visit = sorted(r for n in nominated.nodes if (r := nodes.index.get(n)) is not None)

    def counted(row: int) -> list[PodInfo]:
        """The pods nominated to the row's node that count against ``pod``."""
        return [
            p
            for p in nominated.pods_for(nodes.names[row])
            if p.priority >= pod.priority and p.uid != pod.uid
        ]

    if not extensions_active(pre_filters, state):
        # No PreFilter state to update per pod: every visited node at once.
        added_by_row: dict[int, list[PodInfo]] = {}
        for row in visit:
            if candidate[row] and (added := counted(row)):
                added_by_row[row] = added
        if not added_by_row:
            return failed
        chosen = list(added_by_row)
        view = nodes.with_pods(chosen, added_by_row)
        verdicts = run_filter_plugins(plugins, state, pod, view, np.ones(len(chosen), np.bool_))
        rejected = shared_statuses(verdicts, plugins)
        for i in np.flatnonzero(~verdicts.passed).tolist():
            rejection = rejected(i)
            if rejection is not None:
                failed[chosen[i]] = rejection
        return failed
    for row in visit:
        added = counted(row) if candidate[row] else []
        if not added:
            continue
        name = nodes.names[row]
        with_pods = state.clone()
        for other in added:
            for pre in pre_filters:
                extensions = pre.pre_filter_extensions()
                if extensions is None or pre.name in with_pods.skip_filter_plugins:
                    continue
                status = extensions.add_pod(with_pods, pod, other, name)
                if not status.is_success():
                    raise StatusError(status.message())
        view = nodes.with_pods([row], {row: added})
        verdicts = run_filter_plugins(plugins, with_pods, pod, view, np.ones(1, np.bool_))
        rejection = status_of(verdicts, plugins, 0)
        if rejection is not None:
            failed[row] = rejection
    return failed


def diagnose(
    verdicts: Verdicts,
    plugins: Sequence[FilterPlugin],
    overrides: dict[int, Status],
    absent: Status | None,
    diagnosis: Diagnosis,
) -> Diagnosis:
    """Fill ``diagnosis`` with every node's status and the reason histogram. Nodes the
    PreFilterResult excluded (not candidates, not rejected by a filter) get ``absent``."""
    counts: Counter[str] = Counter()
    unresolvable = True
    rejected = ~verdicts.passed
    for row in overrides:
        rejected[row] = False
    for index, result in enumerate(verdicts.results):
        mask = rejected & (verdicts.rejected_by == index)
        if result is None or not mask.any():
            continue
        codes, numbers = np.unique(verdicts.codes[mask], return_counts=True)
        for code, number in zip(codes.tolist(), numbers.tolist(), strict=True):
            status = result.describe(code).with_plugin(plugins[index].name)
            counts.update(dict.fromkeys(status.reasons, number))
            diagnosis.add_plugin_status(status)
            unresolvable &= status.code == Code.UnschedulableAndUnresolvable
    for status in overrides.values():
        counts.update(status.reasons)
        diagnosis.add_plugin_status(status)
        unresolvable &= status.code == Code.UnschedulableAndUnresolvable
    outside = int(np.count_nonzero(rejected & (verdicts.rejected_by < 0)))
    if absent is not None and outside:
        counts.update(dict.fromkeys(absent.reasons, outside))
    diagnosis.reason_counts = counts
    diagnosis.all_unresolvable = unresolvable
    diagnosis.num_nodes = len(verdicts.passed)
    diagnosis.node_status = node_statuses(verdicts, plugins, overrides, absent)
    diagnosis.rows_with = lambda code: rows_with_code(verdicts, plugins, overrides, absent, code)
    return diagnosis


def rows_with_code(
    verdicts: Verdicts,
    plugins: Sequence[FilterPlugin],
    overrides: dict[int, Status],
    absent: Status | None,
    code: Code,
) -> list[int]:
    """``NodesForStatusCode``: the rows whose status (as :func:`node_statuses` gives it)
    has ``code``, in row order, computed per (plugin, reason code) rather than per row."""
    rejected = ~verdicts.passed
    for row in overrides:
        rejected[row] = False
    chosen = np.zeros(len(rejected), dtype=np.bool_)
    for index, result in enumerate(verdicts.results):
        mask = rejected & (verdicts.rejected_by == index)
        if result is None or not mask.any():
            continue
        for value in np.unique(verdicts.codes[mask]).tolist():
            if result.describe(value).code == code:
                chosen |= mask & (verdicts.codes == value)
    if absent is not None and absent.code == code:
        chosen |= rejected & (verdicts.rejected_by < 0)
    for row, status in overrides.items():
        chosen[row] = status.code == code
    return np.flatnonzero(chosen).tolist()


def node_statuses(
    verdicts: Verdicts,
    plugins: Sequence[FilterPlugin],
    overrides: dict[int, Status],
    absent: Status | None,
) -> Callable[[int], Status | None]:
    """Row → the Status that rejected that node (None if it passed): the nominated
    pass's if it failed there, else the first rejecting filter's, else ``absent`` for
    nodes the PreFilterResult excluded."""

    def node_status(row: int) -> Status | None:
        if row in overrides:
            return overrides[row]
        if verdicts.passed[row]:
            return None
        return status_of(verdicts, plugins, row) or absent

    return node_status


def filter_with_nominated(
    plugins: Sequence[FilterPlugin],
    pre_filters: Sequence[PreFilterPlugin],
    state: CycleState,
    pod: PodInfo,
    view: Snapshot,
    nominated: NominatedPods | None,
) -> tuple[NDArray[np.bool_], Callable[[int], Status]]:
    """``RunFilterPluginsWithNominatedPods`` on every node of ``view`` at once: which
    pass, and the status of a row that does not."""
    n = view.num_nodes
    failed: dict[int, Status] = {}
    if nominated is not None:
        every = np.arange(n, dtype=np.intp)
        failed = nominated_pass(plugins, pre_filters, state, pod, view, every, nominated)
    verdicts = run_filter_plugins(plugins, state, pod, view, np.ones(n, dtype=np.bool_))
    passed = verdicts.passed
    for row in failed:
        passed[row] = False
    rejected = shared_statuses(verdicts, plugins)

    def status(row: int) -> Status:
        if row in failed:
            return failed[row]
        return rejected(row) or SUCCESS

    return passed, status


def fits_with_nominated(
    plugins: Sequence[FilterPlugin],
    pre_filters: Sequence[PreFilterPlugin],
    state: CycleState,
    pod: PodInfo,
    view: Snapshot,
    rows: Sequence[int],
    nominated: NominatedPods | None,
) -> NDArray[np.bool_]:
    """Which of ``rows`` pass ``RunFilterPluginsWithNominatedPods`` (the others do not),
    without statuses: a node passes only if it passes both with and without the
    nominated pods, so the pass with them runs only where the filters alone pass."""
    asked = np.zeros(view.num_nodes, dtype=np.bool_)
    asked[np.asarray(rows, dtype=np.intp)] = True
    passed = run_filter_plugins(plugins, state, pod, view, asked).passed  # only asked rows pass
    if nominated is not None:
        alone = np.flatnonzero(passed)
        for row in nominated_pass(plugins, pre_filters, state, pod, view, alone, nominated):
            passed[row] = False
    return passed


def run_extension(
    pre_filters: Sequence[PreFilterPlugin],
    state: CycleState,
    pod: PodInfo,
    other: PodInfo,
    node: str,
    *,
    add: bool,
) -> Status:
    """``RunPreFilterExtensionAddPod`` / ``RemovePod``: each PreFilter plugin with
    extensions that is not skipped updates its state; the first failure is an Error
    naming the plugin."""
    for plugin in pre_filters:
        extensions = plugin.pre_filter_extensions()
        if extensions is None or plugin.name in state.skip_filter_plugins:
            continue
        try:
            if add:
                status = extensions.add_pod(state, pod, other, node)
            else:
                status = extensions.remove_pod(state, pod, other, node)
        except Exception as err:
            status = as_status(err)
        if not status.is_success():
            verb = "AddPod" if add else "RemovePod"
            reason = f'running {verb} on PreFilter plugin "{plugin.name}": {status.message()}'
            return Status(Code.Error, (reason,), plugin.name)
    return SUCCESS
