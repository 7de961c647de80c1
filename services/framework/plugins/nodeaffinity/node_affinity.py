"""NodeAffinity: ``spec.nodeSelector`` and node affinity, plus the profile's
``addedAffinity`` applied to every pod.

- PreFilter: Skip when the pod has neither a nodeSelector nor required node affinity
  and the profile adds none. When every required term pins ``metadata.name`` with
  ``matchFields`` In, the union of those names narrows the nodes (an empty union is
  UnschedulableAndUnresolvable "pod affinity terms conflict").
- Filter: UnschedulableAndUnresolvable "node(s) didn't match scheduler-enforced node
  affinity" when the added required affinity rejects the node, else "node(s) didn't
  match Pod's node affinity/selector" when the pod's nodeSelector or required terms do.
- PreScore / Score: the sum of the weights of the matching preferred terms (the pod's
  and the added ones); Skip when there are none. NormalizeScore scales the highest sum
  to 100 (``DefaultNormalizeScore``). Default weight 2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

import msgspec
import numpy as np

from contracts.k8s import Node, NodeSelector, Pod, PreferredSchedulingTerm
from services.common.k8s.nodeaffinity import (
    OBJECT_NAME_FIELD,
    PreferredTerm,
    RequiredNodeAffinity,
    compile_preferred,
    compile_terms,
    get_required_node_affinity,
    required_terms,
    terms_match,
)
from services.common.k8s.validation import FieldError, aggregate
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
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SKIP, SUCCESS, Code, Status, StatusError
from services.framework.api.types import MAX_NODE_SCORE, Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.helper.normalize_score import default_normalize_score
from services.framework.plugins.nodeaffinity.args import NodeAffinityArgs
from services.framework.plugins.nodeaffinity.selector import (
    preferred_scores,
    required_mask,
    terms_mask,
)

NAME: Final = "NodeAffinity"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
ERR_REASON_POD: Final = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED: Final = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT: Final = "pod affinity terms conflict"
_ENFORCED, _POD = 1, 2
_STATUS: Final = {
    _ENFORCED: Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_ENFORCED,)),
    _POD: Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_POD,)),
}
_CACHE_LIMIT: Final = 1024
_encode = msgspec.json.Encoder().encode
T = TypeVar("T")


def _compiled(cache: dict[bytes, T], source: object, compile_: Callable[[], T]) -> T:
    """``compile_()``, cached by the JSON of ``source``: pods of one workload share
    their affinity, so each distinct selector is parsed once."""
    key = _encode(source)
    found = cache.get(key)
    if found is None:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        found = cache[key] = compile_()
    return found


def _preferred_of(pod: Pod) -> list[PreferredSchedulingTerm]:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return []
    return affinity.node_affinity.preferred_during_scheduling_ignored_during_execution


def _required(pod: Pod) -> RequiredNodeAffinity:
    """``GetRequiredNodeAffinity``, compiled once per distinct nodeSelector and terms."""
    source = (pod.spec.node_selector, required_terms(pod))
    return _compiled(_REQUIRED, source, lambda: get_required_node_affinity(pod))


_REQUIRED: dict[bytes, RequiredNodeAffinity] = {}
_PREFERRED: dict[bytes, tuple[tuple[PreferredTerm, ...], tuple[FieldError, ...]]] = {}


def _pod_preferred(pod: Pod) -> tuple[tuple[PreferredTerm, ...], tuple[FieldError, ...]]:
    """The pod's preferred terms, compiled (``getPodPreferredNodeAffinity``)."""
    preferred = _preferred_of(pod)
    return _compiled(_PREFERRED, preferred, lambda: compile_preferred(preferred))


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    preferred: tuple[PreferredTerm, ...]

    def clone(self) -> _PreScoreState:
        return self


def _pinned_node_names(required: NodeSelector) -> set[str] | None:
    """The PreFilter narrowing: None unless every term names nodes with matchFields."""
    names: set[str] | None = None
    for term in required.node_selector_terms:
        term_names: set[str] | None = None
        for req in term.match_fields:
            if req.key == OBJECT_NAME_FIELD and req.operator == "In":
                values = set(req.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None  # this term allows nodes of any name: terms are ORed
        names = term_names if names is None else names | term_names
    return names


class NodeAffinity(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions
):
    name: Final = NAME

    def __init__(self, args: NodeAffinityArgs) -> None:
        added = args.node_affinity()
        required = (
            None if added is None else added.required_during_scheduling_ignored_during_execution
        )
        self._added_required = (
            None if required is None else compile_terms(required.node_selector_terms, "")
        )
        preferred = (
            () if added is None else added.preferred_during_scheduling_ignored_during_execution
        )
        self._added_preferred = compile_preferred(preferred)[0] if preferred else None

    # -- PreFilter / Filter -----------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        required = required_terms(pod.pod)
        if required is None and self._added_required is None and not pod.pod.spec.node_selector:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _required(pod.pod))
        if required is None or not required.node_selector_terms:
            return None, SUCCESS
        names = _pinned_node_names(required)
        if names is not None and not names:
            return None, Status(Code.UnschedulableAndUnresolvable, (ERR_REASON_CONFLICT,))
        return (PreFilterResult(frozenset(names)) if names else None), SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        try:
            required = state.read(PRE_FILTER_STATE_KEY, RequiredNodeAffinity)
        except StatusError:  # PreFilter disabled: compute here, as upstream falls back
            required = _required(pod.pod)
        pod_ok = required_mask(required, nodes)  # memoized: never handed out to be modified
        codes = np.where(pod_ok, 0, _POD).astype(np.int64)
        passed = pod_ok.copy()
        if self._added_required is not None:
            added = self._added_required
            added_ok = nodes.attributes.memo(
                (NAME, "added", added), lambda: terms_mask(added, nodes)
            )
            codes[~added_ok] = _ENFORCED
            passed = pod_ok & added_ok
        return FilterResult(passed, codes, _STATUS.__getitem__)

    # -- PreScore / Score -------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Status:
        preferred, errors = _pod_preferred(pod.pod)
        if errors:
            return Status(Code.Error, (aggregate(errors),))
        if not _preferred_of(pod.pod) and self._added_preferred is None:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(preferred))
        return SUCCESS

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        try:
            preferred = state.read(PRE_SCORE_STATE_KEY, _PreScoreState).preferred
        except StatusError:
            preferred, errors = _pod_preferred(pod.pod)
            if errors:
                raise StatusError(aggregate(errors)) from None
        terms = (*(self._added_preferred or ()), *preferred)
        if not terms:
            return np.zeros(len(rows), dtype=np.int64)
        scores = nodes.attributes.memo(
            (NAME, "preferred", terms), lambda: preferred_scores(terms, nodes)
        )
        return scores[rows]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Int64Array) -> Int64Array:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # -- requeueing -------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A node added, or relabelled, so that it now matches."""
        event = ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeLabel)
        return (ClusterEventWithHint(event, self.after_node_change),)

    def after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """``isSchedulableAfterNodeChange``: queue when the node now matches and did not
        before (or is new)."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return QueueingHint.Queue
        if self._added_required is not None and not terms_match(self._added_required, new):
            return QueueingHint.QueueSkip
        required = _required(pod)
        if not required.matches(new):
            return QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue
        return QueueingHint.QueueSkip if required.matches(old) else QueueingHint.Queue


def new(args: NodeAffinityArgs | None, handle: Handle) -> NodeAffinity:
    return NodeAffinity(args or NodeAffinityArgs())


ENTRY: Final = PluginEntry(NAME, NodeAffinity, new, NodeAffinityArgs)
