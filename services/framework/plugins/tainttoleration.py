"""TaintToleration: a pod lands only on nodes whose NoSchedule / NoExecute taints it
tolerates, and prefers nodes with fewer PreferNoSchedule taints it does not tolerate.

Filter: a node with an untolerated NoSchedule or NoExecute taint is
UnschedulableAndUnresolvable with "node(s) had untolerated taint(s)" (upstream stopped
naming the taint in the message in 1.35, as keys and values may be sensitive).

Score: the number of the node's PreferNoSchedule taints that none of the pod's
PreferNoSchedule-or-empty-effect tolerations tolerates; NormalizeScore reverses it
(``DefaultNormalizeScore(100, reverse=True)``), so nodes with none get 100.

Toleration matching is decided once per distinct taint in the cluster and spread over
the nodes through the taint index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from contracts.k8s import Node, Pod
from services.common.k8s.taints import (
    PREFER_NO_SCHEDULE,
    TaintKey,
    TolerationKey,
    taint_key,
    tolerations_of,
    tolerations_tolerate,
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
    PreScorePlugin,
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Code, Status, StatusError
from services.framework.api.types import MAX_NODE_SCORE, Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.helper.normalize_score import default_normalize_score
from services.framework.plugins.helper.taints import DO_NOT_SCHEDULE, untolerated_rows

NAME: Final = "TaintToleration"
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
ERR_REASON_UNTOLERATED: Final = "node(s) had untolerated taint(s)"
_REJECTED: Final = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_UNTOLERATED,))


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    tolerations_prefer_no_schedule: tuple[TolerationKey, ...]

    def clone(self) -> _PreScoreState:
        return self


def find_untolerated(taints: Sequence[TaintKey], tolerations: Sequence[TolerationKey]) -> bool:
    """``FindMatchingUntoleratedTaint`` with the NoSchedule/NoExecute filter."""
    return any(
        t.effect in DO_NOT_SCHEDULE and not tolerations_tolerate(tolerations, t) for t in taints
    )


def _prefer_no_schedule(tolerations: Sequence[TolerationKey]) -> tuple[TolerationKey, ...]:
    """``getAllTolerationPreferNoSchedule``: empty effect means every effect."""
    return tuple(t for t in tolerations if t[3] in ("", PREFER_NO_SCHEDULE))


class TaintToleration(
    FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions
):
    name: Final = NAME

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        index = nodes.attributes.taints()
        if not index.taints:
            return FilterResult.all_passed(nodes.num_nodes)
        rejected = untolerated_rows(tolerations_of(pod.pod.spec.tolerations), nodes.attributes)
        return FilterResult.uniform(~rejected, _REJECTED)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Status:
        tolerations = _prefer_no_schedule(tolerations_of(pod.pod.spec.tolerations))
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(tolerations))
        return SUCCESS

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        """``countIntolerableTaintsPreferNoSchedule`` per scored row."""
        try:
            tolerations = state.read(
                PRE_SCORE_STATE_KEY, _PreScoreState
            ).tolerations_prefer_no_schedule
        except StatusError:
            tolerations = _prefer_no_schedule(tolerations_of(pod.pod.spec.tolerations))
        index = nodes.attributes.taints()
        if not index.taints:
            return np.zeros(len(rows), dtype=np.int64)

        def intolerable_counts() -> Int64Array:
            chosen = np.fromiter(
                (
                    t.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate(tolerations, t)
                    for t in index.taints
                ),
                dtype=np.bool_,
                count=len(index.taints),
            )
            return index.count(chosen)

        counts = nodes.attributes.memo((NAME, "score", tolerations), intolerable_counts)
        return counts[rows]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Int64Array) -> Int64Array:
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A node added or re-tainted so that it is now tolerated; the pod itself
        gaining tolerations."""
        node = ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeTaint)
        pod = ClusterEvent(EventResource.Pod, ActionType.UpdatePodToleration)
        return (
            ClusterEventWithHint(node, after_node_change),
            ClusterEventWithHint(pod, after_pod_toleration_change),
        )


def _node_taints(node: Node) -> list[TaintKey]:
    return [taint_key(t) for t in node.spec.taints]


def after_node_change(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """Queue when the node went from untolerated (or absent) to tolerated."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return QueueingHint.Queue
    tolerations = tolerations_of(pod.spec.tolerations)
    was_untolerated = old is None or find_untolerated(_node_taints(old), tolerations)
    is_untolerated = find_untolerated(_node_taints(new), tolerations)
    return QueueingHint.Queue if was_untolerated and not is_untolerated else QueueingHint.QueueSkip


def after_pod_toleration_change(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """Only the rejected pod's own toleration change can help it."""
    if not isinstance(new, Pod):
        return QueueingHint.Queue
    return QueueingHint.Queue if new.metadata.uid == pod.metadata.uid else QueueingHint.QueueSkip


def new(args: None, handle: Handle) -> TaintToleration:
    return TaintToleration()


ENTRY: Final = PluginEntry(NAME, TaintToleration, new)
