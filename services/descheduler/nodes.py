"""Nodes as the descheduler sees them (descheduler ``pkg/descheduler/node``): Ready
nodes, the policy's ``nodeSelector`` (a label selector string, ``kubectl -l`` syntax)."""

from __future__ import annotations

from collections.abc import Iterable

from contracts.k8s import Node
from services.common.k8s.labels import parse


def matches_node_selector(node: Node, selector: str) -> bool:
    """Does the policy's ``nodeSelector`` (``labels.Parse`` syntax) select ``node``? An
    empty one selects every node. Raises SelectorError."""
    return not selector or parse(selector).matches(node.metadata.labels)


def is_ready(node: Node) -> bool:
    """``nodeutil.IsReady``: not ready only when its Ready condition is not True."""
    for condition in node.status.conditions:
        if condition.type == "Ready" and condition.status != "True":
            return False
    return True


def ready_nodes(nodes: Iterable[Node], selector: str = "") -> list[Node]:
    """The Ready nodes ``selector`` selects, in the given order."""
    return [n for n in nodes if is_ready(n) and matches_node_selector(n, selector)]


__all__ = [
    "is_ready",
    "matches_node_selector",
    "ready_nodes",
]
