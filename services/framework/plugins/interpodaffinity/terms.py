"""A pod's inter-pod (anti-)affinity terms, processed as upstream's ``framework.PodInfo``.

Each ``PodAffinityTerm`` becomes an :class:`AffinityTerm`: its namespaces (the pod's own
namespace when ``namespaces`` is empty and ``namespaceSelector`` is nil), its compiled
label selector and namespace selector, and its topology key. ``matchLabelKeys`` /
``mismatchLabelKeys`` are merged into the label selector first, as ``key in (value)`` /
``key notin (value)`` with the value of the pod's own label (upstream's API server does
this when the pod is created; ksched receives pods as published, so it does it here;
a selector that already holds the merged requirement is unchanged in meaning).

Terms are parsed once per distinct (namespace, affinity) — and labels, when a term uses
label keys — and shared by every pod with the same spec.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

import msgspec

from contracts.k8s import (
    Affinity,
    LabelSelector,
    LabelSelectorRequirement,
    Namespace,
    Pod,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
)
from services.common.k8s.labels import (
    IN,
    NOT_IN,
    NOTHING,
    Selector,
    SelectorError,
    label_selector_as_selector,
)

_CACHE_LIMIT: Final = 4096


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """``framework.AffinityTerm``."""

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector

    def matches(
        self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str] | None
    ) -> bool:
        """``AffinityTerm.Matches``: a pod in ``namespace`` with ``labels``, whose
        namespace carries ``ns_labels`` (None: not looked up, as for incoming terms)."""
        if namespace in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(labels)
        return False

    def with_namespaces_merged(self, namespaces: Mapping[str, Namespace]) -> AffinityTerm:
        """``mergeAffinityTermNamespacesIfNotEmpty`` for an incoming pod's term: the
        namespaces the selector picks join ``namespaces`` and the selector becomes
        Nothing; an empty selector (all namespaces) stays as it is."""
        if self.namespace_selector.empty():
            return self
        picked = {
            name
            for name, ns in namespaces.items()
            if self.namespace_selector.matches(ns.metadata.labels)
        }
        return replace(self, namespaces=self.namespaces | picked, namespace_selector=NOTHING)


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    """``framework.WeightedAffinityTerm``."""

    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodTerms:
    """The four term lists of a pod; ``error`` is the aggregated parse error (the lists
    that failed to parse are empty), as ``PodInfo.Update`` reports it."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()
    error: str | None = None

    @property
    def has_terms(self) -> bool:
        return bool(
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )

    @property
    def has_existing_pod_terms(self) -> bool:
        """Terms that count when this pod already runs: all but its required
        anti-affinity, which Filter handles separately."""
        return bool(
            self.required_affinity or self.preferred_affinity or self.preferred_anti_affinity
        )


NO_TERMS: Final = PodTerms()
_cache: dict[tuple[str, bytes, tuple[tuple[str, str], ...] | None], PodTerms] = {}
_encoder = msgspec.json.Encoder()


def pod_namespace(pod: Pod) -> str:
    """The pod's namespace (``default`` when unset, as the API server defaults it)."""
    return pod.metadata.namespace or "default"


def has_pod_affinity(pod: Pod) -> bool:
    """``PodWithAffinity``: the pod sets podAffinity or podAntiAffinity."""
    affinity = pod.spec.affinity
    return affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    )


def pod_terms(pod: Pod) -> PodTerms:
    """The pod's processed terms (shared between pods with the same spec)."""
    affinity = pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return NO_TERMS
    namespace = pod_namespace(pod)
    labels = tuple(sorted(pod.metadata.labels.items())) if _uses_label_keys(affinity) else None
    key = (namespace, _encoder.encode(affinity), labels)
    terms = _cache.get(key)
    if terms is None:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        terms = _cache[key] = _parse(affinity, namespace, pod.metadata.labels)
    return terms


def _uses_label_keys(affinity: Affinity) -> bool:
    for group in (affinity.pod_affinity, affinity.pod_anti_affinity):
        if group is None:
            continue
        terms = list(group.required_during_scheduling_ignored_during_execution)
        terms += [
            w.pod_affinity_term for w in group.preferred_during_scheduling_ignored_during_execution
        ]
        if any(t.match_label_keys or t.mismatch_label_keys for t in terms):
            return True
    return False


def _parse(affinity: Affinity, namespace: str, labels: Mapping[str, str]) -> PodTerms:
    errors: list[str] = []

    def required(terms: Sequence[PodAffinityTerm], what: str) -> tuple[AffinityTerm, ...]:
        try:
            return tuple(new_term(t, namespace, labels) for t in terms)
        except SelectorError as err:
            errors.append(f"{what}: {err}")
            return ()

    def preferred(terms: Sequence[WeightedPodAffinityTerm], what: str) -> tuple[WeightedTerm, ...]:
        try:
            return tuple(
                WeightedTerm(new_term(t.pod_affinity_term, namespace, labels), t.weight)
                for t in terms
            )
        except SelectorError as err:
            errors.append(f"{what}: {err}")
            return ()

    pa, paa = affinity.pod_affinity, affinity.pod_anti_affinity
    result = PodTerms(
        required_affinity=required(
            pa.required_during_scheduling_ignored_during_execution if pa else (),
            "requiredAffinityTerms",
        ),
        required_anti_affinity=required(
            paa.required_during_scheduling_ignored_during_execution if paa else (),
            "requiredAntiAffinityTerms",
        ),
        preferred_affinity=preferred(
            pa.preferred_during_scheduling_ignored_during_execution if pa else (),
            "preferredAffinityTerms",
        ),
        preferred_anti_affinity=preferred(
            paa.preferred_during_scheduling_ignored_during_execution if paa else (),
            "preferredAntiAffinityTerms",
        ),
    )
    if errors:
        message = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
        result = replace(result, error=message)
    return result


def new_term(term: PodAffinityTerm, namespace: str, labels: Mapping[str, str]) -> AffinityTerm:
    """``newAffinityTerm`` for a term of a pod in ``namespace`` with ``labels``."""
    selector = label_selector_as_selector(merge_label_keys(term, labels))
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    return AffinityTerm(
        namespaces=namespaces,
        selector=selector,
        topology_key=term.topology_key,
        namespace_selector=label_selector_as_selector(term.namespace_selector),
    )


def merge_label_keys(term: PodAffinityTerm, labels: Mapping[str, str]) -> LabelSelector | None:
    """The term's label selector with ``matchLabelKeys`` (``In``) and
    ``mismatchLabelKeys`` (``NotIn``) applied; a nil selector stays nil (matches none)."""
    selector = term.label_selector
    if selector is None or not (term.match_label_keys or term.mismatch_label_keys):
        return selector
    extra = [
        LabelSelectorRequirement(key=key, operator=op, values=[labels[key]])
        for keys, op in ((term.match_label_keys, IN), (term.mismatch_label_keys, NOT_IN))
        for key in keys
        if key in labels
    ]
    return msgspec.structs.replace(
        selector, match_expressions=[*selector.match_expressions, *extra]
    )
