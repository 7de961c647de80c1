"""DefaultEvictor (descheduler ``pkg/framework/plugins/defaultevictor``): which pods
the profile may evict (Filter) and, right before an eviction, whether it still should
(PreEvictionFilter: nodeFit, the namespace label selector).

Filter, in upstream's order: the ``descheduler.alpha.kubernetes.io/evict`` annotation
lets a pod through at once; with ``noEvictionPolicy: Mandatory`` the prefer-no-eviction
annotation keeps it; then mirror, static and terminating pods are refused, and every
constraint built from the args: the effective pod protections (system-critical and
the priority threshold, failed bare pods, local storage, DaemonSet pods, PVCs or
protected storage classes, pods without a PDB, ResourceClaims), the label selector,
minReplicas and minPodAge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Self

import msgspec

from contracts.k8s import LabelSelector, Pod
from services.common.k8s.labels import matches_label_selector
from services.common.k8s.timestamps import parse_time
from services.descheduler import podutil
from services.descheduler.api import ClusterView, ExplainingEvictorPlugin, Handle, PluginEntry
from services.descheduler.nodes import ready_nodes
from services.framework.api.registry import ConfigError, join_path

NAME: Final = "DefaultEvictor"
DEFAULT_PROTECTIONS: Final = (
    "PodsWithLocalStorage",
    "SystemCriticalPods",
    "FailedBarePods",
    "DaemonSetPods",
)
EXTRA_PROTECTIONS: Final = ("PodsWithPVC", "PodsWithoutPDB", "PodsWithResourceClaims")


class PriorityThreshold(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    value: int | None = None
    name: str = ""


class ProtectedStorageClass(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    name: str = ""


class PodsWithPVCConfig(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    protected_storage_classes: list[ProtectedStorageClass] = []


class PodProtectionsConfig(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    PodsWithPVC: PodsWithPVCConfig | None = None


class PodProtections(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    extra_enabled: list[str] = []
    default_disabled: list[str] = []
    config: PodProtectionsConfig | None = None


class DefaultEvictorArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    node_selector: str = ""
    label_selector: LabelSelector | None = None
    namespace_label_selector: LabelSelector | None = None
    priority_threshold: PriorityThreshold | None = None
    node_fit: bool = False
    node_fit_profile: str = ""
    """ksched: the scheduler profile (its ``schedulerName``) whose filters answer
    nodeFit for this descheduler profile; empty: the scheduler configuration's first."""
    min_replicas: int = 0
    min_pod_age: str | None = None
    """A Go duration (``1h30m``)."""
    no_eviction_policy: str = ""
    pod_protections: PodProtections = PodProtections()
    evict_local_storage_pods: bool = False
    evict_daemon_set_pods: bool = False
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    ignore_pods_without_pdb: bool = False
    evict_failed_bare_pods: bool = False

    def defaulted(self) -> Self:
        return self

    def deprecated_set(self) -> bool:
        return (
            self.evict_local_storage_pods
            or self.evict_daemon_set_pods
            or self.evict_system_critical_pods
            or self.ignore_pvc_pods
            or self.evict_failed_bare_pods
            or self.ignore_pods_without_pdb
        )

    def validate(self, path: str) -> None:
        """``ValidateDefaultEvictorArgs`` (its first error)."""
        threshold = self.priority_threshold
        if threshold is not None and threshold.value is not None and threshold.name:
            raise ConfigError(
                join_path(path, "priorityThreshold"),
                "priority threshold misconfigured, only one of priorityThreshold fields can be set",
            )
        if self.min_replicas < 0:
            raise ConfigError(join_path(path, "minReplicas"), "must be a non-negative integer")
        if self.no_eviction_policy not in ("", "Preferred", "Mandatory"):
            raise ConfigError(
                join_path(path, "noEvictionPolicy"),
                'noEvictionPolicy accepts only ["Preferred" "Mandatory"] values',
            )
        if self.min_pod_age is not None and go_duration(self.min_pod_age) is None:
            raise ConfigError(
                join_path(path, "minPodAge"), f'time: invalid duration "{self.min_pod_age}"'
            )
        protections = self.pod_protections
        where = join_path(path, "podProtections")
        if self.deprecated_set() and (protections.extra_enabled or protections.default_disabled):
            raise ConfigError(
                where,
                "cannot use Deprecated fields alongside PodProtections.ExtraEnabled or "
                "PodProtections.DefaultDisabled",
            )
        for field, names, valid in (
            ("extraEnabled", protections.extra_enabled, EXTRA_PROTECTIONS),
            ("defaultDisabled", protections.default_disabled, DEFAULT_PROTECTIONS),
        ):
            for name in names:
                if name not in valid:
                    raise ConfigError(
                        join_path(where, field),
                        f"invalid pod protection policy in {field[0].upper()}{field[1:]}: "
                        f'"{name}". Valid options are: [{" ".join(valid)}]',
                    )
        for field, names in (
            ("defaultDisabled", protections.default_disabled),
            ("extraEnabled", protections.extra_enabled),
        ):
            if len(set(names)) != len(names):
                raise ConfigError(
                    join_path(where, field),
                    f"PodProtections.{field[0].upper()}{field[1:]} contains duplicate entries",
                )
        config = protections.config
        if "PodsWithPVC" in protections.extra_enabled and config and config.PodsWithPVC:
            for i, sc in enumerate(config.PodsWithPVC.protected_storage_classes):
                if not sc.name:
                    raise ConfigError(
                        join_path(where, f"config.PodsWithPVC.protectedStorageClasses[{i}]"),
                        f"PodProtections.Config.PodsWithPVC.ProtectedStorageClasses[{i}] name "
                        "cannot be empty",
                    )


_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(text: str) -> float | None:
    """Go's ``time.ParseDuration`` in seconds, or None if it does not parse."""
    import re

    if text in ("0", "+0", "-0"):
        return 0.0
    match = re.fullmatch(r"([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+", text)
    if not match or not text:
        return None
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)", text):
        total += float(number) * _UNITS[unit]
    return -total if text.startswith("-") else total


def effective_protections(args: DefaultEvictorArgs) -> list[str]:
    """``getEffectivePodProtections`` (the legacy booleans when podProtections is unset)."""
    protections = args.pod_protections
    if protections.default_disabled or protections.extra_enabled:
        kept = [p for p in DEFAULT_PROTECTIONS if p not in protections.default_disabled]
        return kept + list(protections.extra_enabled)
    legacy = []
    if not args.evict_local_storage_pods:
        legacy.append("PodsWithLocalStorage")
    if not args.evict_daemon_set_pods:
        legacy.append("DaemonSetPods")
    if not args.evict_system_critical_pods:
        legacy.append("SystemCriticalPods")
    if not args.evict_failed_bare_pods:
        legacy.append("FailedBarePods")
    if args.ignore_pvc_pods:
        legacy.append("PodsWithPVC")
    if args.ignore_pods_without_pdb:
        legacy.append("PodsWithoutPDB")
    return legacy


def threshold_priority(args: DefaultEvictorArgs, cluster: ClusterView) -> int | None:
    """``GetPriorityValueFromPriorityThreshold``: the value, or the named class's;
    None when no threshold is set. An unknown class name raises ConfigError."""
    threshold = args.priority_threshold
    if threshold is None or (threshold.value is None and not threshold.name):
        return None
    if threshold.name:
        known = cluster.priority_classes.get(threshold.name)
        if known is None:
            raise ConfigError(
                "priorityThreshold.name",
                f'unable to get priority value from the priority class "{threshold.name}": '
                "not found",
            )
        return known.value
    return threshold.value


Constraint = Callable[[Pod], str | None]


class DefaultEvictor(ExplainingEvictorPlugin):
    name: Final = NAME

    def __init__(self, args: DefaultEvictorArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.constraints: list[Constraint] = self._constraints()

    def _constraints(self) -> list[Constraint]:
        args, cluster = self.args, self.handle.cluster
        on = set(effective_protections(args))
        out: list[Constraint] = []
        if "SystemCriticalPods" in on:
            out.append(
                lambda p: (
                    "pod has system critical priority and is protected against eviction"
                    if podutil.is_critical(p)
                    else None
                )
            )
            value = threshold_priority(args, cluster)
            if value is not None:
                out.append(
                    lambda p: (
                        "pod has higher priority than specified priority class threshold"
                        if p.spec.priority is not None and p.spec.priority >= value
                        else None
                    )
                )
        if "FailedBarePods" in on:
            out.append(
                lambda p: None if p.metadata.owner_references else "pod does not have any ownerRefs"
            )
        else:
            out.append(
                lambda p: (
                    "pod does not have any ownerRefs and is not in failed phase"
                    if not p.metadata.owner_references and p.status.phase != "Failed"
                    else None
                )
            )
        if "PodsWithLocalStorage" in on:
            out.append(
                lambda p: (
                    "pod has local storage and is protected against eviction"
                    if podutil.has_local_storage(p)
                    else None
                )
            )
        if "DaemonSetPods" in on:
            out.append(
                lambda p: (
                    "daemonset pods are protected against eviction"
                    if podutil.is_daemonset_pod(p)
                    else None
                )
            )
        if "PodsWithPVC" in on:
            out.append(self._pvc_constraint())
        if "PodsWithoutPDB" in on:
            out.append(
                lambda p: (
                    None
                    if podutil.covered_by_pdb(p, cluster.pdbs)
                    else "pod does not have a PodDisruptionBudget and is protected against eviction"
                )
            )
        if "PodsWithResourceClaims" in on:
            out.append(
                lambda p: (
                    "pod has ResourceClaims and descheduler is configured to protect "
                    "ResourceClaims pods"
                    if podutil.has_resource_claims(p)
                    else None
                )
            )
        selector = args.label_selector
        if selector is not None and (selector.match_labels or selector.match_expressions):
            out.append(
                lambda p: (
                    None
                    if matches_label_selector(selector, p.metadata.labels)
                    else "pod labels do not match the labelSelector filter in the policy parameter"
                )
            )
        if args.min_replicas > 1:
            out.append(self._min_replicas)
        if args.min_pod_age is not None:
            age = go_duration(args.min_pod_age) or 0.0
            out.append(
                lambda p: (
                    None
                    if (started := parse_time(p.status.start_time)) is not None
                    and cluster.now - started >= age
                    else f"pod age is not older than MinPodAge: {args.min_pod_age} seconds"
                )
            )
        return out

    def _pvc_constraint(self) -> Constraint:
        config = self.args.pod_protections.config
        classes = (
            config.PodsWithPVC.protected_storage_classes if config and config.PodsWithPVC else []
        )
        protected = {c.name for c in classes}
        if not protected:
            return lambda p: (
                "pod with PVC is protected against eviction" if podutil.has_pvc(p) else None
            )
        claims = self.handle.cluster.claims

        def check(pod: Pod) -> str | None:
            ns = pod.metadata.namespace or "default"
            for volume in pod.spec.volumes:
                source = volume.persistent_volume_claim
                if source is None:
                    continue
                claim = claims.get((ns, source.claim_name))
                if claim is None:
                    return f'failed to get persistent volume claim "{ns}"/"{source.claim_name}"'
                sc = claim.spec.storage_class_name
                if not sc:
                    return f'failed to resolve storage class for pod "{ns}"/"{source.claim_name}"'
                if sc in protected:
                    return f'pod using protected storage class "{sc}"'
            return None

        return check

    def _min_replicas(self, pod: Pod) -> str | None:
        owners = pod.metadata.owner_references
        if len(owners) != 1:
            return None
        count = self.handle.cluster.pods_of_owner(owners[0].uid)
        if count < self.args.min_replicas:
            return (
                f"owner has {count} replicas which is less than minReplicas of "
                f"{self.args.min_replicas}"
            )
        return None

    def reasons(self, pod: Pod) -> list[str]:
        """Why Filter refuses ``pod`` (empty: it passes)."""
        annotations = pod.metadata.annotations
        if podutil.EVICT_ANNOTATION in annotations:
            return []
        if (
            self.args.no_eviction_policy == "Mandatory"
            and podutil.NO_EVICTION_ANNOTATION in annotations
        ):
            return ["pod has the prefer-no-eviction annotation (noEvictionPolicy: Mandatory)"]
        why = []
        if podutil.is_mirror(pod):
            why.append("pod is a mirror pod")
        if podutil.is_static(pod):
            why.append("pod is a static pod")
        if podutil.is_terminating(pod):
            why.append("pod is terminating")
        why += [r for c in self.constraints if (r := c(pod)) is not None]
        return why

    def filter(self, pod: Pod) -> bool:
        return not self.reasons(pod)

    def pre_eviction_filter(self, pod: Pod) -> bool:
        return not self.pre_eviction_reasons(pod)

    def pre_eviction_reasons(self, pod: Pod) -> list[str]:
        """Why PreEvictionFilter refuses ``pod`` (empty: it passes), in upstream's words
        (nodeFit asks the scheduler's filters, but says what upstream says)."""
        cluster = self.handle.cluster
        if self.args.node_fit:
            nodes = ready_nodes(cluster.nodes, self.args.node_selector)
            if not self.handle.fits_other_node(pod, nodes):
                return [
                    "pod does not fit on any other node because of nodeSelector(s), "
                    "Taint(s), or nodes marked as unschedulable"
                ]
        selector = self.args.namespace_label_selector
        if selector is None or not (selector.match_labels or selector.match_expressions):
            return []
        namespace = cluster.namespaces.get(pod.metadata.namespace or "default")
        labels = namespace.metadata.labels if namespace is not None else None
        if labels is not None and matches_label_selector(selector, labels):
            return []
        return [
            "pod namespace do not match the namespaceLabelSelector filter in the policy parameter"
        ]


def new(args: DefaultEvictorArgs | None, handle: Handle) -> DefaultEvictor:
    return DefaultEvictor(args or DefaultEvictorArgs(), handle)


ENTRY: Final = PluginEntry(NAME, DefaultEvictorArgs, new, DefaultEvictor)


__all__ = [
    "DEFAULT_PROTECTIONS",
    "ENTRY",
    "EXTRA_PROTECTIONS",
    "NAME",
    "DefaultEvictor",
    "DefaultEvictorArgs",
    "effective_protections",
    "go_duration",
    "new",
]
