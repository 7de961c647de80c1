"""ObjectMeta as ``ValidateObjectMeta`` checks it: the name by the kind's rule (DNS
subdomain for most, DNS label for a Namespace, DNS-1035 label for a Service), the
namespace (a DNS label; set only on namespaced kinds), label keys and values, annotation
keys and their total size."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from contracts.k8s import ObjectMeta
from contracts.k8s.names import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from contracts.kinds import NAMESPACED
from services.informer.limits import MAX_ANNOTATIONS_BYTES, MAX_LABELS

Problem = tuple[str, str]
"""``(field path, reason)``."""

_NAME_RULES: Final[dict[str, Callable[[str], list[str]]]] = {
    "namespace": dns1123_label_errors,
    "service": dns1035_label_errors,
}
"""Kinds whose name is not a DNS subdomain (upstream's ``ValidateNamespaceName``,
``ValidateServiceName``); every other kind ksched ingests uses ``NameIsDNSSubdomain``."""


def shown(value: str) -> str:
    """``value`` quoted for a reason, cut short (hostile input can be megabytes long)."""
    return repr(value) if len(value) <= 64 else f"{value[:64]!r}… ({len(value)} characters)"


def meta_problems(kind: str, meta: ObjectMeta, *, identity_only: bool = False) -> list[Problem]:
    rule = _NAME_RULES.get(kind, dns1123_subdomain_errors)
    if not meta.name:
        return [("metadata.name", "Required value: name or generateName is required")]
    found = [("metadata.name", f"Invalid value: {shown(meta.name)}: {e}") for e in rule(meta.name)]
    if kind in NAMESPACED:
        if meta.namespace is not None:
            found += [
                ("metadata.namespace", f"Invalid value: {shown(meta.namespace)}: {e}")
                for e in dns1123_label_errors(meta.namespace)
            ]
    elif meta.namespace:
        found.append(("metadata.namespace", "Forbidden: not allowed on this type"))
    if identity_only or found:
        return found[:1]
    found += label_problems(meta.labels, "metadata.labels")
    found += annotation_problems(meta.annotations)
    return found[:1]


def label_problems(labels: Mapping[str, str], field: str) -> list[Problem]:
    """``ValidateLabels``: every key a qualified name, every value a label value."""
    if len(labels) > MAX_LABELS:
        return [(field, f"Too many: {len(labels)}: must have at most {MAX_LABELS} items")]
    for key, value in labels.items():
        for error in qualified_name_errors(key):
            return [(field, f"Invalid value: {shown(key)}: {error}")]
        for error in label_value_errors(value):
            return [(field, f"Invalid value: {shown(value)} (key {shown(key)}): {error}")]
    return []


def annotation_problems(
    annotations: Mapping[str, str], field: str = "metadata.annotations"
) -> list[Problem]:
    """``ValidateAnnotations``: keys are qualified names (compared lower-cased), and keys
    plus values total at most 256 KiB."""
    total = 0
    for key, value in annotations.items():
        for error in qualified_name_errors(key.lower()):
            return [(field, f"Invalid value: {shown(key)}: {error}")]
        total += len(key.encode()) + len(value.encode())
    if total > MAX_ANNOTATIONS_BYTES:
        return [(field, f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes")]
    return []
