"""Limits against hostile input: every bound the informer enforces, in one table.

Where the API server's validation bounds a field, ksched uses the same bound (source
``upstream``); where it does not (etcd's request size bounds everything there), ksched sets
its own, far above what real clusters publish (source ``ksched``), so that one message
cannot make a service spend unbounded memory or time. The README's "Limits" paragraph
lists this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from contracts.k8s.names import DNS1123_SUBDOMAIN_MAX_LENGTH, LABEL_VALUE_MAX_LENGTH
from contracts.quantity import MAX_QUANTITY


@dataclass(frozen=True, slots=True)
class Limit:
    field: str
    bound: int
    unit: str
    source: str
    """``upstream`` (the API server refuses past it) or ``ksched`` (ksched's own bound)."""


MAX_MESSAGE_BYTES: Final = 1_048_576
"""A watch event larger than this is refused (etcd's default request limit is 1.5 MiB)."""
MAX_NESTING_DEPTH: Final = 64
"""JSON nested deeper is refused before decoding (real objects nest about 12 deep)."""
MAX_ANNOTATIONS_BYTES: Final = 256 * 1024
"""``TotalAnnotationSizeLimitB``: keys plus values of metadata.annotations."""
MAX_LABELS: Final = 256
MAX_CONTAINERS: Final = 256
"""Per list: spec.containers and spec.initContainers each."""
MAX_TOLERATIONS: Final = 256
MAX_TOPOLOGY_SPREAD_CONSTRAINTS: Final = 64
MAX_AFFINITY_TERMS: Final = 64
"""Per list of (anti-)affinity terms, node selector terms and their match expressions."""
MAX_VOLUMES: Final = 256
MAX_TAINTS: Final = 256
MAX_NODE_IMAGES: Final = 1024
HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_PRIORITY_CLASSES: Final = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
INT32_MAX: Final = 2**31 - 1

LIMITS: Final = (
    Limit("the message", MAX_MESSAGE_BYTES, "bytes", "ksched (etcd: 1.5 MiB)"),
    Limit("JSON nesting", MAX_NESTING_DEPTH, "levels", "ksched"),
    Limit("metadata.name", DNS1123_SUBDOMAIN_MAX_LENGTH, "characters", "upstream"),
    Limit("metadata.labels", MAX_LABELS, "entries", "ksched"),
    Limit("a label value", LABEL_VALUE_MAX_LENGTH, "characters", "upstream"),
    Limit("metadata.annotations", MAX_ANNOTATIONS_BYTES, "bytes", "upstream"),
    Limit("spec.containers, spec.initContainers", MAX_CONTAINERS, "each", "ksched"),
    Limit("spec.tolerations", MAX_TOLERATIONS, "entries", "ksched"),
    Limit("spec.topologySpreadConstraints", MAX_TOPOLOGY_SPREAD_CONSTRAINTS, "entries", "ksched"),
    Limit("each affinity term list", MAX_AFFINITY_TERMS, "entries", "ksched"),
    Limit("spec.volumes", MAX_VOLUMES, "entries", "ksched"),
    Limit("spec.taints (Node)", MAX_TAINTS, "entries", "ksched"),
    Limit("status.images (Node)", MAX_NODE_IMAGES, "entries", "ksched"),
    Limit("value (user PriorityClass)", HIGHEST_USER_DEFINABLE_PRIORITY, "", "upstream"),
    Limit("a resource quantity", MAX_QUANTITY, "base units", "upstream (int64)"),
)
