"""Taints and tolerations, as ``v1.Toleration.ToleratesTaint`` and component-helpers'
``scheduling/corev1`` decide (``TolerationsTolerateTaint``,
``FindMatchingUntoleratedTaint``).

A toleration matches a taint when its effect is empty or equal, its key is empty or
equal, and its operator is ``Exists``, or ``Equal`` (also the empty operator) with an
equal value. An empty key with ``Exists`` therefore tolerates every taint. The ``Lt`` /
``Gt`` operators belong to the alpha TaintTolerationComparisonOperators gate, off by
default: like upstream with the gate off, they tolerate nothing.

Taints and tolerations are compared in a hashable form (:class:`TaintKey`,
:data:`TolerationKey`), so callers can use them as memo keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final, NamedTuple

from contracts.k8s import Taint, Toleration

NO_SCHEDULE: Final = "NoSchedule"
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
NO_EXECUTE: Final = "NoExecute"
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"


class TaintKey(NamedTuple):
    """A taint as it is compared (``timeAdded`` plays no part)."""

    key: str
    value: str
    effect: str


def taint_key(taint: Taint) -> TaintKey:
    return TaintKey(taint.key, taint.value or "", taint.effect)


TolerationKey = tuple[str, str, str, str]
"""A toleration as (key, operator, value, effect), empty strings for unset fields."""


def toleration_key(toleration: Toleration) -> TolerationKey:
    return (
        toleration.key or "",
        toleration.operator or "",
        toleration.value or "",
        toleration.effect or "",
    )


def tolerations_of(tolerations: Iterable[Toleration]) -> tuple[TolerationKey, ...]:
    """The pod's tolerations in a hashable form (for memo keys)."""
    return tuple(toleration_key(t) for t in tolerations)


def tolerates(toleration: TolerationKey, taint: TaintKey) -> bool:
    """``Toleration.ToleratesTaint``."""
    key, operator, value, effect = toleration
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    if operator in ("", "Equal"):
        return value == taint.value
    return operator == "Exists"


def tolerations_tolerate(tolerations: Sequence[TolerationKey], taint: TaintKey) -> bool:
    """``TolerationsTolerateTaint``: does any toleration tolerate ``taint``?"""
    return any(tolerates(t, taint) for t in tolerations)


def find_matching_untolerated_taint(
    taints: Iterable[Taint],
    tolerations: Sequence[TolerationKey],
    inclusion: Callable[[Taint], bool] | None = None,
) -> Taint | None:
    """``FindMatchingUntoleratedTaint``: the first of ``taints`` that ``inclusion``
    keeps (every taint without one) and no toleration tolerates, or None."""
    for taint in taints:
        if inclusion is not None and not inclusion(taint):
            continue
        if not tolerations_tolerate(tolerations, taint_key(taint)):
            return taint
    return None
