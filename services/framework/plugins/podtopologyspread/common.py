"""What PodTopologySpread's Filter and Score share (upstream's ``common.go``).

:func:`pod_constraints` is upstream's ``getConstraints`` for one ``whenUnsatisfiable``:
the pod's own constraints of that kind, or, if the pod has none at all, the configured
default constraints of that kind with the pod's default selector.
:func:`included_rows` applies a constraint's node inclusion policies to every node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from contracts.k8s import Pod, TopologySpreadConstraint
from services.common.k8s.labels import Selector, label_selector_as_selector
from services.common.k8s.taints import tolerations_of
from services.framework.api.listers import Listers
from services.framework.cache.attributes import BoolArray
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.helper.taints import untolerated_rows
from services.framework.plugins.podtopologyspread.nodeaffinity import required_affinity_rows
from services.framework.plugins.podtopologyspread.selector import (
    default_selector,
    with_match_labels,
)

NAME: Final = "PodTopologySpread"

DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
MAX_INT32: Final = 2**31 - 1

SYSTEM_DEFAULT_CONSTRAINTS: Final = (
    TopologySpreadConstraint(
        max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY
    ),
    TopologySpreadConstraint(
        max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY
    ),
)
"""``systemDefaultConstraints``: used when the args' defaultingType is System."""


@dataclass(frozen=True, slots=True)
class Constraint:
    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    """Unset means 1."""
    node_affinity_policy: str = HONOR
    """Unset means Honor: only nodes matching the pod's required node affinity count."""
    node_taints_policy: str = IGNORE
    """Unset means Ignore; Honor counts only nodes whose taints the pod tolerates."""

    @property
    def honors_affinity(self) -> bool:
        return self.node_affinity_policy == HONOR

    @property
    def honors_taints(self) -> bool:
        return self.node_taints_policy == HONOR


def filter_constraints(
    constraints: Sequence[TopologySpreadConstraint],
    pod_labels: Mapping[str, str],
    action: str,
) -> list[Constraint]:
    """``filterTopologySpreadConstraints``: those with ``whenUnsatisfiable == action``,
    their selectors parsed and ANDed with the ``matchLabelKeys`` the pod has. Raises
    SelectorError."""
    result = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = label_selector_as_selector(c.label_selector)
        keyed = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
        if keyed:
            selector = with_match_labels(selector, keyed)
        result.append(
            Constraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains if c.min_domains is not None else 1,
                node_affinity_policy=_or(c.node_affinity_policy, HONOR),
                node_taints_policy=_or(c.node_taints_policy, IGNORE),
            )
        )
    return result


def _or(value: str | None, default: str) -> str:
    return default if value is None else value


def pod_constraints(
    pod: Pod, action: str, defaults: Sequence[TopologySpreadConstraint], listers: Listers
) -> list[Constraint]:
    """``getConstraints`` / ``initPreScoreState``'s choice for ``action``. Raises
    SelectorError."""
    if pod.spec.topology_spread_constraints:
        return filter_constraints(pod.spec.topology_spread_constraints, pod.metadata.labels, action)
    return default_constraints(pod, action, defaults, listers)


def default_constraints(
    pod: Pod, action: str, defaults: Sequence[TopologySpreadConstraint], listers: Listers
) -> list[Constraint]:
    """``buildDefaultConstraints``: the defaults with the pod's default selector
    (Services and controller that select it); none when that selector is empty."""
    constraints = filter_constraints(defaults, pod.metadata.labels, action)
    if not constraints:
        return []
    selector = default_selector(pod, listers)
    if selector.empty():
        return []
    return [
        Constraint(
            c.max_skew,
            c.topology_key,
            selector,
            c.min_domains,
            c.node_affinity_policy,
            c.node_taints_policy,
        )
        for c in constraints
    ]


def node_has_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``: the node has every constraint's key."""
    return all(c.topology_key in labels for c in constraints)


def keys_present(constraints: Sequence[Constraint], nodes: Snapshot) -> BoolArray:
    """Per row: :func:`node_has_keys`."""
    present = np.ones(nodes.num_nodes, dtype=np.bool_)
    for c in constraints:
        present &= nodes.attributes.label(c.topology_key).present()
    return present


def included_rows(pod: Pod, constraints: Sequence[Constraint], nodes: Snapshot) -> list[BoolArray]:
    """Per constraint, the rows passing its node inclusion policies
    (``matchNodeInclusionPolicies``): the pod's required node affinity if Honor, and
    tolerated NoSchedule/NoExecute taints if Honor."""
    everywhere = np.ones(nodes.num_nodes, dtype=np.bool_)
    affinity: BoolArray | None = None
    tolerated: BoolArray | None = None
    result = []
    for c in constraints:
        mask = everywhere
        if c.honors_affinity:
            if affinity is None:
                affinity = required_affinity_rows(pod, nodes)
                if affinity is None:
                    affinity = everywhere
            mask = mask & affinity
        if c.honors_taints:
            if tolerated is None:
                tolerated = ~untolerated_rows(
                    tolerations_of(pod.spec.tolerations), nodes.attributes
                )
            mask = mask & tolerated
        result.append(mask)
    return result
