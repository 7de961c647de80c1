"""PodTopologySpread's queueing hints: could this pod or node event make the rejected
pod schedulable? (``isSchedulableAfterPodChange``, ``isSchedulableAfterNodeChange``.)

Both read the rejected pod's DoNotSchedule constraints (its own or the defaults); a
constraint that fails to parse means Queue, as an error does upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from contracts.k8s import Node, Pod
from services.common.k8s.labels import SelectorError
from services.framework.api.events import QueueingHint
from services.framework.plugins.podtopologyspread.common import HONOR, Constraint, node_has_keys

ConstraintsOf = Callable[[Pod], list[Constraint]]
"""The rejected pod's DoNotSchedule constraints (raises SelectorError)."""

Queue, QueueSkip = QueueingHint.Queue, QueueingHint.QueueSkip


def _involved(incoming: Pod, target: Pod) -> bool:
    """``involvedInTopologySpreading``: the pod itself, or a bound pod of its namespace."""
    if incoming.metadata.uid == target.metadata.uid:
        return True
    same_namespace = (incoming.metadata.namespace or "default") == (
        target.metadata.namespace or "default"
    )
    return bool(incoming.spec.node_name) and same_namespace


def _any_selects(constraints: Sequence[Constraint], pod: Pod) -> bool:
    """``podLabelsMatchSpreadConstraints``."""
    return any(c.selector.matches(pod.metadata.labels) for c in constraints)


class Hints:
    def __init__(self, constraints_of: ConstraintsOf) -> None:
        self._constraints_of = constraints_of

    def after_pod_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """A pod was added (``old`` None), updated or deleted (``new`` None)."""
        before = old if isinstance(old, Pod) else None
        after = new if isinstance(new, Pod) else None
        if before is None and after is None:
            return Queue
        if any(p is not None and not _involved(p, pod) for p in (after, before)):
            return QueueSkip
        try:
            constraints = self._constraints_of(pod)
        except SelectorError:
            return Queue
        if before is not None and after is not None:
            return _after_update(pod, before, after, constraints)
        changed = after if after is not None else before
        assert changed is not None
        return Queue if _any_selects(constraints, changed) else QueueSkip

    def after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """A node was added (``old`` None), updated or deleted (``new`` None)."""
        before = old if isinstance(old, Node) else None
        after = new if isinstance(new, Node) else None
        if before is None and after is None:
            return Queue
        try:
            constraints = self._constraints_of(pod)
        except SelectorError:
            return Queue
        matched_before = before is not None and node_has_keys(before.metadata.labels, constraints)
        matched_after = after is not None and node_has_keys(after.metadata.labels, constraints)
        if before is not None and after is not None:
            if matched_before != matched_after:
                return Queue
            keys_moved = _topology_values_changed(
                before.metadata.labels, after.metadata.labels, constraints
            )
            retainted = before.spec.taints != after.spec.taints
            return Queue if matched_after and (keys_moved or retainted) else QueueSkip
        return Queue if (matched_after if after is not None else matched_before) else QueueSkip


def _after_update(
    pod: Pod, before: Pod, after: Pod, constraints: Sequence[Constraint]
) -> QueueingHint:
    if (
        pod.metadata.uid == after.metadata.uid
        and after.spec.tolerations != before.spec.tolerations
        and any(c.node_taints_policy == HONOR for c in constraints)
    ):
        return Queue
    if after.metadata.labels == before.metadata.labels:
        return QueueSkip
    for c in constraints:
        if c.selector.matches(before.metadata.labels) != c.selector.matches(after.metadata.labels):
            return Queue
    return QueueSkip


def _topology_values_changed(
    before: Mapping[str, str], after: Mapping[str, str], constraints: Sequence[Constraint]
) -> bool:
    """``checkTopologyKeyLabelsChanged``."""
    return any(before.get(c.topology_key, "") != after.get(c.topology_key, "") for c in constraints)
