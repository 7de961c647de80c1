"""NodeResourcesFit: does the node have room for the pod, and how full would it be.

Filter: a node fails with "Too many pods" when it already runs ``allocatable.pods``
pods, and with "Insufficient <resource>" for every resource the pod requests (amount
> 0, ignoring ``ignoredResources`` / ``ignoredResourceGroups`` extended resources) that
exceeds ``allocatable - requested``. All reasons of a node are kept. An extended
resource a DeviceClass serves (DRAExtendedResource) is not checked on a node whose
allocatable does not have it: DynamicResources allocates devices for it there
(``ShouldDelegateResourceToDRA``); nor is it among the resources the store re-checks
(:meth:`Fit.checked_resources`), which are the same for every node.

Score: the configured strategy (LeastAllocated by default, MostAllocated, or
RequestedToCapacityRatio) over the configured resources, on non-zero requests.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

import numpy as np

from contracts.k8s import Pod
from services.common import features
from services.common.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    is_extended_resource_name,
)
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from services.framework.api.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    FilterResult,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ResourceFilter,
    Rows,
    ScorePlugin,
)
from services.framework.api.listers import Listers
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Code, Status, StatusError
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.snapshot import PODS_COL, Snapshot
from services.framework.plugins.noderesources import fit_hints
from services.framework.plugins.noderesources.args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
)
from services.framework.plugins.noderesources.least_allocated import least_requested_score
from services.framework.plugins.noderesources.most_allocated import most_requested_score
from services.framework.plugins.noderesources.requested_to_capacity_ratio import (
    RequestedToCapacityRatioScorer,
    scaled_shape,
)
from services.framework.plugins.noderesources.resource_allocation import (
    NodeScorer,
    ResourceAllocationScorer,
    ResourceScorer,
)

NAME: Final = "NodeResourcesFit"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
TOO_MANY_PODS: Final = "Too many pods"
_STRATEGIES: dict[str, ResourceScorer] = {
    LEAST_ALLOCATED: least_requested_score,
    MOST_ALLOCATED: most_requested_score,
}
_MAX_CHECKED = 62  # reason bits per node: bit 0 is "Too many pods"


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    """The requests Filter checks: positive, not ignored, in reason order."""

    resources: tuple[str, ...]
    amounts: tuple[int, ...]
    dra: frozenset[str] = frozenset()
    """Those a DeviceClass serves: not checked where the node's allocatable lacks them."""

    def clone(self) -> _PreFilterState:
        return self


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]

    def clone(self) -> _PreScoreState:
        return self


@lru_cache(maxsize=4096)
def _status(resources: tuple[str, ...], code: int) -> Status:
    reasons = [TOO_MANY_PODS] if code & 1 else []
    reasons += [f"Insufficient {r}" for i, r in enumerate(resources, 1) if code >> i & 1]
    return Status(Code.Unschedulable, tuple(reasons))


def _reason_order(resource: str) -> tuple[int, str]:
    builtin = (CPU, MEMORY, EPHEMERAL_STORAGE)
    return (builtin.index(resource), "") if resource in builtin else (3, resource)


class Fit(
    PreFilterPlugin, FilterPlugin, ResourceFilter, PreScorePlugin, ScorePlugin, EnqueueExtensions
):
    name: Final = NAME

    def __init__(self, args: NodeResourcesFitArgs, listers: Listers | None = None) -> None:
        self._listers = listers
        """The DeviceClasses (DRAExtendedResource); None: no resource is backed by DRA."""
        self._ignored = frozenset(args.ignored_resources)
        self._ignored_groups = frozenset(args.ignored_resource_groups)
        strategy = args.defaulted().scoring_strategy
        assert strategy is not None  # defaulted() always sets one
        self.scorer: NodeScorer
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            ratio = strategy.requested_to_capacity_ratio
            if ratio is None:
                raise ValueError("RequestedToCapacityRatio needs requestedToCapacityRatio.shape")
            shape = scaled_shape(ratio.shape)
            self.scorer = RequestedToCapacityRatioScorer(strategy.resources, shape)
        else:
            self.scorer = ResourceAllocationScorer(
                name=strategy.type, resources=strategy.resources, scorer=_STRATEGIES[strategy.type]
            )

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Pods going away (or shrinking) free room; nodes added or growing add room."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.Pod, ActionType.Delete | ActionType.UpdatePodScaleDown),
                fit_hints.after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeAllocatable),
                self.is_schedulable_after_node_change,
            ),
        )

    def is_schedulable_after_node_change(
        self, pod: Pod, old: object | None, new: object | None
    ) -> QueueingHint:
        """``isSchedulableAfterNodeChange``, leaving to DynamicResources what a
        DeviceClass serves and the node does not offer."""
        backed: Container[str] = ()
        if self._listers is not None and features.enabled("DRAExtendedResource"):
            backed = self._listers.device_class_resolver()
        return fit_hints.after_node_change(pod, old, new, backed)

    def ignores(self, resource: str) -> bool:
        """Whether Filter skips ``resource`` (an ignored extended resource or group)."""
        if not is_extended_resource_name(resource):
            return False
        return resource in self._ignored or resource.split("/", 1)[0] in self._ignored_groups

    def checked_resources(self, pod: PodInfo) -> frozenset[str]:
        """What Filter checks for ``pod`` (``ResourceFilter``): the pod count and every
        positive request it does not ignore, but those a DeviceClass may serve."""
        checked = self._checked(pod)
        return frozenset((PODS, *checked)) - self._backed_by_dra(checked)

    def _backed_by_dra(self, resources: Sequence[str]) -> frozenset[str]:
        """The ``resources`` a DeviceClass serves (empty, cheaply, without any)."""
        if self._listers is None or not features.enabled("DRAExtendedResource"):
            return frozenset()
        mapping = self._listers.device_class_resolver()
        if not mapping:
            return frozenset()
        return frozenset(r for r in resources if r in mapping)

    def _checked(self, pod: PodInfo) -> list[str]:
        return [r for r, amount in pod.requests.items() if amount > 0 and not self.ignores(r)]

    # -- PreFilter / Filter ---------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        checked = sorted(self._checked(pod), key=_reason_order)
        amounts = tuple(pod.requests[r] for r in checked)
        dra = self._backed_by_dra(checked)
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(tuple(checked), amounts, dra))
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        request = state.read(PRE_FILTER_STATE_KEY, _PreFilterState)
        if len(request.resources) > _MAX_CHECKED:
            raise StatusError(f"pod requests more than {_MAX_CHECKED} resources")
        allocatable, requested = nodes.allocatable, nodes.requested
        codes = (requested[:, PODS_COL] >= allocatable[:, PODS_COL]).astype(np.int64)
        for bit, (resource, amount) in enumerate(
            zip(request.resources, request.amounts, strict=True), 1
        ):
            col = nodes.resources.get(resource)
            if col is None:  # no node has it: allocatable 0 everywhere
                if resource not in request.dra:
                    codes |= 1 << bit
                continue
            short = amount > allocatable[:, col] - requested[:, col]
            if resource in request.dra:
                short &= allocatable[:, col] > 0
            codes |= short.astype(np.int64) << bit
        resources = request.resources
        return FilterResult(codes == 0, codes, lambda code: _status(resources, code))

    # -- PreScore / Score -------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Status:
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(self.scorer.pod_requests(pod)))
        return SUCCESS

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        try:
            requests = state.read(PRE_SCORE_STATE_KEY, _PreScoreState).pod_requests
        except StatusError:
            requests = self.scorer.pod_requests(pod)
        return self.scorer.score(nodes, rows, requests)


def new(args: NodeResourcesFitArgs | None, handle: Handle) -> Fit:
    return Fit(args or NodeResourcesFitArgs().defaulted(), handle.listers)


ENTRY: Final = PluginEntry(NAME, Fit, new, NodeResourcesFitArgs)
