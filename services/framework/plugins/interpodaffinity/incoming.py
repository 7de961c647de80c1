"""The pod being scheduled, as InterPodAffinity's PreFilter and PreScore see it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contracts.k8s import Namespace
from services.framework.api.types import PodInfo
from services.framework.plugins.interpodaffinity.terms import (
    AffinityTerm,
    PodTerms,
    WeightedTerm,
    pod_namespace,
)


@dataclass(frozen=True, slots=True)
class IncomingPod:
    """The pod, its namespace's labels (None if the namespace is unknown) and the terms
    PreFilter / PreScore use, with their namespace selectors merged into namespaces."""

    info: PodInfo
    namespace: str
    labels: Mapping[str, str]
    namespace_labels: Mapping[str, str] | None
    terms: PodTerms

    @classmethod
    def of(cls, info: PodInfo, terms: PodTerms, namespaces: Mapping[str, Namespace]) -> IncomingPod:
        namespace = pod_namespace(info.pod)
        known = namespaces.get(namespace)
        merged = PodTerms(
            required_affinity=_merge(terms.required_affinity, namespaces),
            required_anti_affinity=_merge(terms.required_anti_affinity, namespaces),
            preferred_affinity=_merge_weighted(terms.preferred_affinity, namespaces),
            preferred_anti_affinity=_merge_weighted(terms.preferred_anti_affinity, namespaces),
        )
        return cls(
            info=info,
            namespace=namespace,
            labels=info.pod.metadata.labels,
            namespace_labels=known.metadata.labels if known is not None else None,
            terms=merged,
        )

    def matched_by(self, term: AffinityTerm) -> bool:
        """Whether an existing pod's ``term`` selects this pod (its namespace selector is
        matched against this pod's namespace labels)."""
        return term.matches(self.namespace, self.labels, self.namespace_labels)

    def matches_own_affinity(self) -> bool:
        """``podMatchesAllAffinityTerms`` of the pod's required affinity on itself."""
        terms = self.terms.required_affinity
        return bool(terms) and all(t.matches(self.namespace, self.labels, None) for t in terms)


def _merge(
    terms: tuple[AffinityTerm, ...], namespaces: Mapping[str, Namespace]
) -> tuple[AffinityTerm, ...]:
    return tuple(t.with_namespaces_merged(namespaces) for t in terms)


def _merge_weighted(
    terms: tuple[WeightedTerm, ...], namespaces: Mapping[str, Namespace]
) -> tuple[WeightedTerm, ...]:
    return tuple(WeightedTerm(w.term.with_namespaces_merged(namespaces), w.weight) for w in terms)
