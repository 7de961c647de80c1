"""Label selector requirements in a line: ``in_("app", "web")``, ``exists("tier")``."""

from __future__ import annotations

from contracts.k8s import LabelSelectorRequirement


def in_(key: str, *values: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator="In", values=list(values))


def not_in(key: str, *values: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator="NotIn", values=list(values))


def exists(key: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator="Exists")


def does_not_exist(key: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator="DoesNotExist")
