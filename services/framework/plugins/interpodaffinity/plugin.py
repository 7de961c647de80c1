"""InterPodAffinity: place pods next to, or away from, pods already running.

PreFilter / Filter enforce required pod affinity and anti-affinity, both the incoming
pod's and the existing pods' (symmetry); PreScore / Score / NormalizeScore rank nodes by
preferred terms and by existing pods' terms that select the incoming pod (see
:mod:`.filtering` and :mod:`.scoring`). Existing pods are read through a
:class:`~.index.PodIndex` that follows the snapshot's node table between cycles.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

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
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SKIP, SUCCESS, Code, Status, StatusError
from services.framework.api.types import Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.interpodaffinity import filtering, hints, scoring
from services.framework.plugins.interpodaffinity.args import InterPodAffinityArgs
from services.framework.plugins.interpodaffinity.incoming import IncomingPod
from services.framework.plugins.interpodaffinity.index import PodIndex
from services.framework.plugins.interpodaffinity.terms import pod_terms

NAME: Final = "InterPodAffinity"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = scoring.PRE_SCORE_STATE_KEY
_INDEXES: Final = 2  # the snapshot's table, and one other (tests, simulations)


class InterPodAffinity(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions
):
    name: Final = NAME

    def __init__(self, args: InterPodAffinityArgs, listers: Listers) -> None:
        self.args = args.defaulted()
        self.hard_weight = self.args.hard_weight
        self.listers = listers
        self._indexes: OrderedDict[int, PodIndex] = OrderedDict()

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Assigned pods added, relabelled or deleted; nodes added, relabelled or
        retainted (upstream adds the taint update for nodes first seen not ready)."""
        pod_actions = ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete
        node_actions = ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.Pod, pod_actions), hints.after_pod_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.Node, node_actions), hints.after_node_change
            ),
        )

    def index(self, nodes: Snapshot) -> PodIndex:
        """The pod index of ``nodes``, brought up to date."""
        key = id(nodes.pods)
        index = self._indexes.get(key)
        if index is None or index.pods is not nodes.pods:
            index = self._indexes[key] = PodIndex()
            while len(self._indexes) > _INDEXES:
                self._indexes.popitem(last=False)
        self._indexes.move_to_end(key)
        index.sync(nodes)
        return index

    # -- PreFilter / Filter ---------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        terms = pod_terms(pod.pod)
        if terms.error is not None:
            return None, Status(Code.UnschedulableAndUnresolvable, (f"parsing pod: {terms.error}",))
        if nodes.affinity_pods == 0 and not (
            terms.required_affinity or terms.required_anti_affinity
        ):
            return None, SKIP  # no existing pod's anti-affinity can select it: no index needed
        incoming = IncomingPod.of(pod, terms, self.listers.namespaces)
        computed = filtering.pre_filter_state(self.index(nodes), nodes, incoming)
        if filtering.should_skip(computed):
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, computed)
        state.first_of_group = not computed.affinity and incoming.matches_own_affinity()
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: str) -> Status:
        return self._update(state, to_add, node, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: str) -> Status:
        return self._update(state, to_remove, node, -1)

    def _update(self, state: CycleState, other: PodInfo, node: str, sign: int) -> Status:
        try:
            computed = state.read(PRE_FILTER_STATE_KEY, filtering.PreFilterState)
        except StatusError as err:
            return err.status
        row = computed.nodes.index.get(node)
        if row is None:
            return Status(Code.Error, (f'node "{node}" not found',))
        computed.update_with_pod(other, computed.nodes.nodes[row].metadata.labels, sign)
        return SUCCESS

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        computed = state.read(PRE_FILTER_STATE_KEY, filtering.PreFilterState)
        return filtering.filter_nodes(computed, nodes)

    # -- PreScore / Score -------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Status:
        terms = pod_terms(pod.pod)
        if terms.error is not None:
            return Status(Code.Error, (f"failed to parse pod: {terms.error}",))
        incoming = IncomingPod.of(pod, terms, self.listers.namespaces)
        if self.args.ignore_preferred_terms_of_existing_pods and not scoring.has_preferred_terms(
            incoming
        ):
            return SKIP
        if nodes.affinity_pods == 0 and not scoring.has_preferred_terms(incoming):
            return SKIP  # nothing to weigh: pre_score_state would find nothing either
        computed = scoring.pre_score_state(self.index(nodes), nodes, incoming, self.hard_weight)
        if computed is None:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, computed)
        return SUCCESS

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        computed = state.read(PRE_SCORE_STATE_KEY, scoring.PreScoreState)
        return scoring.score_rows(computed, nodes, rows)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Int64Array) -> Int64Array:
        state.read(PRE_SCORE_STATE_KEY, scoring.PreScoreState)
        return scoring.normalize(scores)


def new(args: InterPodAffinityArgs | None, handle: Handle) -> InterPodAffinity:
    return InterPodAffinity(args or InterPodAffinityArgs().defaulted(), handle.listers)


ENTRY: Final = PluginEntry(NAME, InterPodAffinity, new, InterPodAffinityArgs)
"""The registry entry; its default Score weight in the default profile is 2."""
