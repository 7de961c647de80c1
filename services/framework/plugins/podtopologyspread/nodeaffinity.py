"""The pod's required node affinity over every node at once (``GetRequiredNodeAffinity``,
matched by the NodeAffinity plugin's masks): a term with an invalid requirement matches
no node (the error is ignored, for backwards compatibility) and an empty term selects
nothing.
"""

from __future__ import annotations

from contracts.k8s import Pod
from services.common.k8s.nodeaffinity import get_required_node_affinity, required_terms
from services.framework.cache.attributes import BoolArray
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.nodeaffinity.selector import required_mask


def required_affinity_rows(pod: Pod, nodes: Snapshot) -> BoolArray | None:
    """Rows matching the pod's nodeSelector and required node affinity; None when every
    node does. Shared with the NodeAffinity plugin's memo: never modify the result."""
    if not pod.spec.node_selector and required_terms(pod) is None:
        return None
    return required_mask(get_required_node_affinity(pod), nodes)
