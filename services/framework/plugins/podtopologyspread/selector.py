"""Which pods a spread constraint counts: ``labels.Selector`` as upstream builds it.

A :class:`Selector` is what ``metav1.LabelSelectorAsSelector`` returns for a
constraint's ``labelSelector``: :data:`NOTHING` for a missing selector (matches no
pod), :data:`EVERYTHING` for ``{}`` (matches every pod but, being *empty*, counts none),
else the AND of its requirements. ``matchLabelKeys`` add ``key=value`` requirements
taken from the incoming pod's labels (:func:`with_match_labels`), as upstream's
``mergeLabelSetWithSelector``: a :data:`NOTHING` selector stays NOTHING.

The default constraints use :func:`default_selector`, upstream's
``helper.DefaultSelector``: the selectors of the Services that select the pod, plus its
controller's (ReplicationController, ReplicaSet or StatefulSet) selector.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from contracts.k8s import LabelSelector, ObjectMeta, OwnerReference, Pod, Service
from contracts.k8s.names import (
    label_value_errors,
    qualified_name_errors,
)
from services.framework.api.listers import Listers

IN: Final = "In"
NOT_IN: Final = "NotIn"
EXISTS: Final = "Exists"
DOES_NOT_EXIST: Final = "DoesNotExist"
EQUALS: Final = "="
_OPERATORS: Final = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)


class SelectorError(ValueError):
    """An invalid label selector (upstream's ``LabelSelectorAsSelector`` error)."""


@dataclass(frozen=True, slots=True, order=True)
class Requirement:
    """One ``labels.Requirement``: ``key``, an operator and its sorted values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        match self.operator:
            case "In" | "=":
                return value is not None and value in self.values
            case "NotIn":
                return value is None or value not in self.values
            case "Exists":
                return value is not None
            case _:
                return value is None


@dataclass(frozen=True, slots=True)
class Selector:
    """Hashable, so it keys the per-selector pod counts of the pod index."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def empty(self) -> bool:
        """``Selector.Empty()``: an empty selector counts no pod (``countPodsMatchSelector``)."""
        return not self.nothing and not self.requirements

    def matches(self, meta: ObjectMeta) -> bool:
        """``Selector.Matches(pod labels)``."""
        if self.nothing:
            return False
        labels = meta.labels
        return all(r.matches(labels) for r in self.requirements)

    def with_requirements(self, extra: Iterable[Requirement]) -> Selector:
        merged = tuple(sorted({*self.requirements, *extra}))
        return Selector(merged, self.nothing)


NOTHING: Final = Selector(nothing=True)
EVERYTHING: Final = Selector()


def _requirement(key: str, operator: str, values: Iterable[str]) -> Requirement:
    """``labels.NewRequirement`` with its validation."""
    vals = tuple(sorted(set(values)))
    errors = [f'key: Invalid value: "{key}": {e}' for e in qualified_name_errors(key)]
    if operator in (IN, NOT_IN) and not vals:
        errors.append(
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        )
    if operator in (EXISTS, DOES_NOT_EXIST) and vals:
        errors.append(
            "values: Invalid value: values set must be empty for exists and does not exist"
        )
    for value in vals:
        errors += [f'values: Invalid value: "{value}": {e}' for e in label_value_errors(value)]
    if errors:
        raise SelectorError("; ".join(errors))
    return Requirement(key, operator, vals)


def from_label_selector(selector: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``. Raises :class:`SelectorError`."""
    if selector is None:
        return NOTHING
    if not selector.match_labels and not selector.match_expressions:
        return EVERYTHING
    requirements = [_requirement(k, EQUALS, (v,)) for k, v in selector.match_labels.items()]
    for expr in selector.match_expressions:
        if expr.operator not in _OPERATORS:
            raise SelectorError(f'"{expr.operator}" is not a valid label selector operator')
        requirements.append(_requirement(expr.key, expr.operator, expr.values))
    return Selector(tuple(sorted(set(requirements))))


def with_match_labels(selector: Selector, labels: Mapping[str, str]) -> Selector:
    """``mergeLabelSetWithSelector``: AND ``key=value`` for each of ``labels``."""
    if selector.nothing:
        return selector
    return selector.with_requirements(Requirement(k, EQUALS, (v,)) for k, v in labels.items())


def _from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.Set.AsSelector()``: ``key=value`` for each pair, not validated."""
    return Selector(tuple(sorted(Requirement(k, EQUALS, (v,)) for k, v in labels.items())))


def pod_services(pod: Pod, listers: Listers) -> list[Service]:
    """``GetPodServices``: the Services of the pod's namespace whose selector matches its
    labels; a Service without a selector selects nothing, one with ``{}`` every pod."""
    labels = pod.metadata.labels
    return [
        s
        for s in listers.services_in(pod.metadata.namespace)
        if s.spec.selector is not None
        and all(labels.get(k) == v for k, v in s.spec.selector.items())
    ]


def _controller_ref(meta: ObjectMeta) -> OwnerReference | None:
    """``metav1.GetControllerOfNoCopy``: the first owner reference marked controller."""
    return next((ref for ref in meta.owner_references if ref.controller), None)


def default_selector(pod: Pod, listers: Listers) -> Selector:
    """``helper.DefaultSelector``: the selectors of the Services selecting the pod,
    merged (later Services win on a shared key, as ``labels.Merge``), AND the selector of
    its controller when that is a ReplicationController (v1), ReplicaSet or StatefulSet
    (apps/v1) the listers hold in the pod's namespace. A controller selector that does
    not parse is ignored, as upstream ignores the error."""
    merged: dict[str, str] = {}
    for service in pod_services(pod, listers):
        merged.update(service.spec.selector or {})
    selector = _from_set(merged)
    ref = _controller_ref(pod.metadata)
    if ref is None:
        return selector
    group, _, version = ref.api_version.rpartition("/")
    key = f"{pod.metadata.namespace or 'default'}/{ref.name}"
    match (group, version, ref.kind):
        case ("", "v1", "ReplicationController"):
            rc = listers.replication_controllers.get(key)
            if rc is not None:
                return _from_set({**merged, **(rc.spec.selector or {})})
        case ("apps", "v1", "ReplicaSet" | "StatefulSet"):
            table = listers.replica_sets if ref.kind == "ReplicaSet" else listers.stateful_sets
            owner = table.get(key)
            if owner is not None:
                try:
                    other = from_label_selector(owner.spec.selector)
                except SelectorError:
                    return selector
                return selector.with_requirements(other.requirements)
        case _:
            pass  # not owned by a supported controller
    return selector
