"""Which pods a spread constraint counts: ``labels.Selector`` as upstream builds it.

A :class:`Selector` is what ``metav1.LabelSelectorAsSelector`` returns for a
constraint's ``labelSelector``: :data:`NOTHING` for a missing selector (matches no
pod), :data:`EVERYTHING` for ``{}`` (matches every pod but, being *empty*, counts none),
else the AND of its requirements. ``matchLabelKeys`` add ``key=value`` requirements
taken from the incoming pod's labels (:func:`with_match_labels`), as upstream's
``mergeLabelSetWithSelector``: a :data:`NOTHING` selector stays NOTHING.

The system default constraints use :func:`controller_selector` instead of a label
selector; see the package docstring for why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from contracts.k8s import LabelSelector, ObjectMeta, OwnerReference
from services.framework.plugins.helper.names import (
    label_value_errors,
    qualified_name_errors,
)

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
class ControllerRef:
    """The controller (ReplicaSet, StatefulSet, ReplicationController) a pod belongs to."""

    kind: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Selector:
    """Hashable, so it keys the per-selector pod counts of the pod index."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False
    controller: ControllerRef | None = None

    def empty(self) -> bool:
        """``Selector.Empty()``: an empty selector counts no pod (``countPodsMatchSelector``)."""
        return not self.nothing and not self.requirements and self.controller is None

    def matches(self, meta: ObjectMeta) -> bool:
        """``Selector.Matches(pod labels)``; a controller selector compares owners."""
        if self.nothing:
            return False
        if self.controller is not None and controller_of(meta) != self.controller:
            return False
        labels = meta.labels
        return all(r.matches(labels) for r in self.requirements)

    def with_requirements(self, extra: Iterable[Requirement]) -> Selector:
        merged = tuple(sorted({*self.requirements, *extra}))
        return Selector(merged, self.nothing, self.controller)


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


_CONTROLLER_KINDS: Final = {
    ("", "v1", "ReplicationController"),
    ("apps", "v1", "ReplicaSet"),
    ("apps", "v1", "StatefulSet"),
}


def _controller_ref(meta: ObjectMeta) -> OwnerReference | None:
    """``metav1.GetControllerOfNoCopy``: the first owner reference marked controller."""
    return next((ref for ref in meta.owner_references if ref.controller), None)


def controller_of(meta: ObjectMeta) -> ControllerRef | None:
    ref = _controller_ref(meta)
    return None if ref is None else ControllerRef(ref.kind, ref.name, ref.uid)


def controller_selector(meta: ObjectMeta) -> Selector:
    """The default selector of a pod (see the package docstring): the pods with the
    same controller, if that controller is a ReplicationController (v1), ReplicaSet or
    StatefulSet (apps/v1) as upstream's ``DefaultSelector`` accepts; else empty."""
    ref = _controller_ref(meta)
    if ref is None:
        return EVERYTHING
    group, _, version = ref.api_version.rpartition("/")
    if (group, version, ref.kind) not in _CONTROLLER_KINDS:
        return EVERYTHING
    return Selector(controller=ControllerRef(ref.kind, ref.name, ref.uid))
