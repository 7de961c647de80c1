"""The pod's required node affinity over every node at once (``GetRequiredNodeAffinity``).

A node matches when it has every ``nodeSelector`` label and, if the pod has a required
``nodeAffinity``, at least one of its terms. The terms are matched by the NodeAffinity
plugin's selector, which is upstream's ``LazyErrorNodeSelector``: a term with an invalid
requirement matches no node (the error is ignored, for backwards compatibility) and an
empty term selects nothing.
"""

from __future__ import annotations

import numpy as np

from contracts.k8s import Pod
from services.common.k8s.nodeaffinity import compile_terms
from services.framework.cache.attributes import BoolArray
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.nodeaffinity.selector import terms_mask


def required_affinity_rows(pod: Pod, nodes: Snapshot) -> BoolArray | None:
    """Rows matching the pod's required node affinity; None when every node does."""
    affinity = pod.spec.affinity
    required = None
    if affinity is not None and affinity.node_affinity is not None:
        required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if not pod.spec.node_selector and required is None:
        return None
    mask = np.ones(nodes.num_nodes, dtype=np.bool_)
    for key, value in pod.spec.node_selector.items():
        column = nodes.attributes.label(key)
        code = column.code_of(value)
        if code < 0:  # no node has it; -1 would match the nodes lacking the key
            return np.zeros(nodes.num_nodes, dtype=np.bool_)
        mask &= column.codes == code
    if required is not None:
        mask &= terms_mask(compile_terms(required.node_selector_terms, ""), nodes)
    return mask
