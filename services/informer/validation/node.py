"""A Node: list lengths against the limits table, image sizes, resource quantities."""

from __future__ import annotations

from contracts.k8s import Node
from services.common.resources import validate_node
from services.informer.limits import MAX_NODE_IMAGES, MAX_TAINTS
from services.informer.validation.meta import Problem
from services.informer.validation.pod import out_of_range, too_many


def node_problems(node: Node) -> list[Problem]:
    found = too_many("spec.taints", node.spec.taints, MAX_TAINTS)
    found += too_many("status.images", node.status.images, MAX_NODE_IMAGES)
    for i, image in enumerate(node.status.images):
        found += out_of_range(f"status.images[{i}].sizeBytes", image.size_bytes, 0, 2**63 - 1)
        if found:
            break
    return (found or validate_node(node))[:1]
