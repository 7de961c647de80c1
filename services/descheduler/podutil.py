"""Pod predicates and orders the descheduler's plugins share (descheduler
``pkg/descheduler/pod``, ``pkg/utils/pod.go``), and the args pieces several plugins
take (``namespaces``, ``labelSelector``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import msgspec

from contracts.k8s import LabelSelector, Pod, PodDisruptionBudget
from services.common.k8s.labels import (
    SelectorError,
    label_selector_as_selector,
    matches_label_selector,
)
from services.common.k8s.qos import get_pod_qos
from services.common.k8s.timestamps import parse_time
from services.framework.api.registry import ConfigError, join_path

SYSTEM_CRITICAL_PRIORITY: Final = 2_000_000_000
"""``utils.SystemCriticalPriority`` (two billion)."""
MIRROR_ANNOTATION: Final = "kubernetes.io/config.mirror"
SOURCE_ANNOTATION: Final = "kubernetes.io/config.source"
EVICT_ANNOTATION: Final = "descheduler.alpha.kubernetes.io/evict"
NO_EVICTION_ANNOTATION: Final = "descheduler.alpha.kubernetes.io/prefer-no-eviction"

PodFilter = Callable[[Pod], bool]


class Namespaces(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """``api.Namespaces``: include or exclude (not both)."""

    include: list[str] = []
    exclude: list[str] = []

    def check(self, path: str) -> None:
        if self.include and self.exclude:
            raise ConfigError(path, "only one of Include/Exclude namespaces can be set")


def check_selector(selector: LabelSelector | None, path: str) -> None:
    """``metav1.LabelSelectorAsSelector`` must accept it (upstream's args validation:
    ``failed to get label selectors from strategy's params: <its error>``); the error
    names the matchLabels or the matchExpressions entry that failed."""
    if selector is None:
        return
    parts = [(join_path(path, "matchLabels"), LabelSelector(match_labels=selector.match_labels))]
    parts += [
        (join_path(path, f"matchExpressions[{i}]"), LabelSelector(match_expressions=[expr]))
        for i, expr in enumerate(selector.match_expressions)
    ]
    for where, part in parts:
        try:
            label_selector_as_selector(part)
        except SelectorError as error:
            raise ConfigError(
                where, f"failed to get label selectors from strategy's params: {error}"
            ) from None


def check_pod_selection(
    namespaces: Namespaces | None, label_selector: LabelSelector | None, path: str
) -> None:
    """The args' common pod selection: ``namespaces`` include or exclude, not both, and a
    ``labelSelector`` LabelSelectorAsSelector accepts."""
    if namespaces is not None:
        namespaces.check(join_path(path, "namespaces"))
    check_selector(label_selector, join_path(path, "labelSelector"))


def pod_filter(
    evictable: PodFilter | None,
    namespaces: Namespaces | None = None,
    selector: LabelSelector | None = None,
) -> PodFilter:
    """``podutil.NewOptions().WithFilter(...).WithNamespaces(...).WithoutNamespaces(...)
    .WithLabelSelector(...).BuildFilterFunc()``."""
    include = frozenset(namespaces.include) if namespaces else frozenset()
    exclude = frozenset(namespaces.exclude) if namespaces else frozenset()

    def keep(pod: Pod) -> bool:
        ns = pod.metadata.namespace or "default"
        if include and ns not in include:
            return False
        if exclude and ns in exclude:
            return False
        if selector is not None and not matches_label_selector(selector, pod.metadata.labels):
            return False
        return evictable is None or evictable(pod)

    return keep


def both(*filters: PodFilter) -> PodFilter:
    """``podutil.WrapFilterFuncs``: every filter must keep the pod."""
    return lambda pod: all(f(pod) for f in filters)


def owner_kinds(pod: Pod) -> list[str]:
    return [o.kind for o in pod.metadata.owner_references]


def key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


def is_mirror(pod: Pod) -> bool:
    return MIRROR_ANNOTATION in pod.metadata.annotations


def is_static(pod: Pod) -> bool:
    source = pod.metadata.annotations.get(SOURCE_ANNOTATION)
    return source is not None and source != "api"


def is_terminating(pod: Pod) -> bool:
    return pod.metadata.deletion_timestamp is not None


def is_critical(pod: Pod) -> bool:
    return pod.spec.priority is not None and pod.spec.priority >= SYSTEM_CRITICAL_PRIORITY


def is_daemonset_pod(pod: Pod) -> bool:
    return "DaemonSet" in owner_kinds(pod)


def has_local_storage(pod: Pod) -> bool:
    return any(v.host_path is not None or v.empty_dir is not None for v in pod.spec.volumes)


def has_pvc(pod: Pod) -> bool:
    return any(v.persistent_volume_claim is not None for v in pod.spec.volumes)


def has_resource_claims(pod: Pod) -> bool:
    return bool(pod.spec.resource_claims)


def covered_by_pdb(pod: Pod, pdbs: Iterable[PodDisruptionBudget]) -> bool:
    """``utils.IsPodCoveredByPDB``: a PDB of the pod's namespace whose selector (a nil
    or empty one matches nothing) matches its labels."""
    ns = pod.metadata.namespace or "default"
    for pdb in pdbs:
        if (pdb.metadata.namespace or "default") != ns:
            continue
        selector = pdb.spec.selector
        if selector is None or not (selector.match_labels or selector.match_expressions):
            continue
        if matches_label_selector(selector, pod.metadata.labels):
            return True
    return False


def creation(pod: Pod) -> float:
    """The pod's creation time in seconds (0 when unknown: oldest)."""
    return parse_time(pod.metadata.creation_timestamp) or 0.0


def sort_by_age(pods: list[Pod]) -> None:
    """``SortPodsBasedOnAge``: oldest first (stable)."""
    pods.sort(key=creation)


_QOS_RANK: Final = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def sort_by_priority_low_to_high(pods: list[Pod]) -> None:
    """``SortPodsBasedOnPriorityLowToHigh``: no priority first, then ascending
    priority; equal priorities by QoS (BestEffort, Burstable, Guaranteed), pods
    without the prefer-no-eviction annotation before those with it."""

    def rank(pod: Pod) -> tuple[int, int, int, int]:
        priority = pod.spec.priority
        return (
            0 if priority is None else 1,
            priority or 0,
            _QOS_RANK.get(get_pod_qos(pod), 0),
            int(NO_EVICTION_ANNOTATION in pod.metadata.annotations),
        )

    pods.sort(key=rank)


def container_states(statuses: Sequence[Any], which: str) -> list[dict[str, Any]]:
    """Each status's ``state.<which>`` (``waiting`` or ``terminated``) that is set."""
    found = []
    for status in statuses:
        state = status.state.get(which) if isinstance(status.state, dict) else None
        if isinstance(state, dict):
            found.append(state)
    return found


__all__ = [
    "EVICT_ANNOTATION",
    "NO_EVICTION_ANNOTATION",
    "Namespaces",
    "PodFilter",
    "both",
    "check_pod_selection",
    "check_selector",
    "container_states",
    "covered_by_pdb",
    "creation",
    "has_local_storage",
    "has_pvc",
    "has_resource_claims",
    "is_critical",
    "is_daemonset_pod",
    "is_mirror",
    "is_static",
    "is_terminating",
    "key",
    "owner_kinds",
    "pod_filter",
    "sort_by_age",
    "sort_by_priority_low_to_high",
]
