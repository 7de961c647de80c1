"""PodTopologySpread: the extension points, wired to filtering and scoring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from contracts.k8s import Pod
from services.common.k8s.labels import SelectorError
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
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
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from services.framework.api.listers import Listers
from services.framework.api.status import SKIP, SUCCESS, Code, Status
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.podtopologyspread import filtering, scoring
from services.framework.plugins.podtopologyspread.args import (
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
)
from services.framework.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    NAME,
    SCHEDULE_ANYWAY,
    Constraint,
    pod_constraints,
)
from services.framework.plugins.podtopologyspread.hints import Hints
from services.framework.plugins.podtopologyspread.podindex import PodIndex

_POD_EVENTS: Final = ActionType.Add | ActionType.UpdatePodLabel | ActionType.UpdatePodToleration
_NODE_EVENTS: Final = ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint


class PodTopologySpread(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions
):
    name: Final = NAME

    def __init__(self, args: PodTopologySpreadArgs, listers: Listers | None = None) -> None:
        self.listers = listers if listers is not None else Listers()
        """Services and controllers, for the default constraints' selector."""
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = args.constraints()
        self._pods = PodIndex()
        self._hints = Hints(self.hard_constraints)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Pods added, relabelled, given tolerations or deleted; nodes added, deleted,
        relabelled or retainted (with queueing hints, as upstream)."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.Pod, _POD_EVENTS | ActionType.Delete),
                self._hints.after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.Node, _NODE_EVENTS | ActionType.Delete),
                self._hints.after_node_change,
            ),
        )

    def hard_constraints(self, pod: Pod) -> list[Constraint]:
        """``getConstraints``: the DoNotSchedule constraints. Raises SelectorError."""
        return pod_constraints(pod, DO_NOT_SCHEDULE, self.default_constraints, self.listers)

    # -- PreFilter / Filter -----------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        try:
            constraints = self.hard_constraints(pod.pod)
        except SelectorError as err:
            where = (
                "setting default"
                if not pod.pod.spec.topology_spread_constraints
                else "obtaining pod's"
            )
            return None, Status(
                Code.Error,
                (f"get constraints from pod: {where} hard topology spread constraints: {err}",),
            )
        if not constraints:
            return None, SKIP
        built = filtering.pre_filter_state(pod, constraints, nodes, self._pods)
        state.write(filtering.PRE_FILTER_STATE_KEY, built)
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: str) -> Status:
        filtering.update_with_pod(filtering.read_state(state), pod, to_add, node, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: str) -> Status:
        filtering.update_with_pod(filtering.read_state(state), pod, to_remove, node, -1)
        return SUCCESS

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        return filtering.filter_nodes(filtering.read_state(state), pod, nodes)

    # -- PreScore / Score -------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Status:
        if nodes.num_nodes == 0:
            return SKIP
        own = bool(pod.pod.spec.topology_spread_constraints)
        try:
            constraints = pod_constraints(
                pod.pod, SCHEDULE_ANYWAY, self.default_constraints, self.listers
            )
        except SelectorError as err:
            where = "obtaining pod's" if own else "setting default"
            reason = f"calculating preScoreState: {where} soft topology spread constraints: {err}"
            return Status(Code.Error, (reason,))
        if not constraints:
            return SKIP
        require_all_keys = own or not self.system_defaulted
        built = scoring.pre_score_state(pod, constraints, nodes, rows, require_all_keys, self._pods)
        state.write(scoring.PRE_SCORE_STATE_KEY, built)
        return SUCCESS

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        return scoring.score(scoring.read_state(state))

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Int64Array) -> Int64Array:
        return scoring.normalize(scoring.read_state(state), scores)


def new(args: PodTopologySpreadArgs | None, handle: Handle) -> PodTopologySpread:
    return PodTopologySpread(args or PodTopologySpreadArgs().defaulted(), handle.listers)
