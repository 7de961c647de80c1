"""The base of every wire type: Kubernetes-shaped, camelCase, lenient.

Wire types ignore unknown fields and give new fields defaults, so a user can publish
exactly what ``kubectl get -o json`` prints and an older consumer keeps working when a
newer producer adds a field. Never retype a field: add a new one.
"""

from __future__ import annotations

import msgspec

Quantity = str | int | float
"""A resource quantity as it appears on the wire ("100m", "1Gi", 2); see contracts.quantity."""


class Wire(msgspec.Struct, kw_only=True, frozen=True, rename="camel", omit_defaults=True):
    """Base for Kubernetes-shaped structs: keyword-only, immutable, camelCase."""


class OwnerReference(Wire, kw_only=True, frozen=True):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(Wire, kw_only=True, frozen=True):
    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    uid: str = ""
    resource_version: str | None = None
    generation: int | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None


class LabelSelectorRequirement(Wire, kw_only=True, frozen=True):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(Wire, kw_only=True, frozen=True):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class NodeSelectorRequirement(Wire, kw_only=True, frozen=True):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(Wire, kw_only=True, frozen=True):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(Wire, kw_only=True, frozen=True):
    node_selector_terms: list[NodeSelectorTerm] = []


class ObjectReference(Wire, kw_only=True, frozen=True):
    api_version: str | None = None
    kind: str = ""
    namespace: str | None = None
    name: str = ""
    uid: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


def namespaced_name(meta: ObjectMeta) -> str:
    """``namespace/name`` (``default`` when the namespace is unset), as kubectl shows it."""
    return f"{meta.namespace or 'default'}/{meta.name}"
