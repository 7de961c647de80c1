"""InterPodAffinity's queueing hints (``isSchedulableAfterPodChange`` /
``isSchedulableAfterNodeChange``): does this event help the pod it rejected?"""

from __future__ import annotations

from contracts.k8s import Node, Pod
from services.framework.api.events import QueueingHint
from services.framework.plugins.interpodaffinity.terms import AffinityTerm, pod_namespace, pod_terms


def _matches_all(terms: tuple[AffinityTerm, ...], pod: Pod) -> bool:
    """``podMatchesAllAffinityTerms`` (namespace labels not looked up)."""
    namespace, labels = pod_namespace(pod), pod.metadata.labels
    return bool(terms) and all(t.matches(namespace, labels, None) for t in terms)


def after_pod_change(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """An assigned pod was added (``old`` None), relabelled, or deleted (``new`` None):
    Queue when it now matches the pod's affinity, or no longer its anti-affinity."""
    if (old is not None and not isinstance(old, Pod)) or (
        new is not None and not isinstance(new, Pod)
    ):
        return QueueingHint.Queue
    if (new is not None and not new.spec.node_name) or (old is not None and not old.spec.node_name):
        return QueueingHint.QueueSkip
    terms = pod_terms(pod)
    if terms.error is not None:
        return QueueingHint.Queue
    affinity, anti = terms.required_affinity, terms.required_anti_affinity
    if new is not None and old is not None:
        if not _matches_all(affinity, old) and _matches_all(affinity, new):
            return QueueingHint.Queue
        if _matches_all(anti, old) and not _matches_all(anti, new):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip
    if new is not None:
        return QueueingHint.Queue if _matches_all(affinity, new) else QueueingHint.QueueSkip
    if old is None:
        return QueueingHint.Queue
    return QueueingHint.Queue if _matches_all(anti, old) else QueueingHint.QueueSkip


def after_node_change(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """A node was added or relabelled (or its taints changed): Queue when it carries a
    topology key of the pod's required affinity or anti-affinity terms."""
    if not isinstance(new, Node):
        return QueueingHint.Queue
    terms = pod_terms(pod)
    if terms.error is not None:
        return QueueingHint.Queue
    labels = new.metadata.labels
    for term in (*terms.required_affinity, *terms.required_anti_affinity):
        if term.topology_key in labels:
            return QueueingHint.Queue
    return QueueingHint.QueueSkip
