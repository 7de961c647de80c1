"""``metav1.LabelSelector`` against one object's labels (a claim's volume selector)."""

from __future__ import annotations

from collections.abc import Mapping

from contracts.k8s import LabelSelector


def matches_label_selector(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """``LabelSelectorAsSelector(selector).Matches(labels)``: every ``matchLabels`` pair
    and every expression must hold; an empty selector matches everything. An
    expression that does not parse (unknown operator, ``In`` without values) matches
    nothing."""
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for expr in selector.match_expressions:
        values = set(expr.values)
        present = expr.key in labels
        match expr.operator:
            case "In" if values:
                ok = present and labels[expr.key] in values
            case "NotIn" if values:
                ok = not present or labels[expr.key] not in values
            case "Exists" if not values:
                ok = present
            case "DoesNotExist" if not values:
                ok = not present
            case _:
                ok = False
        if not ok:
            return False
    return True
