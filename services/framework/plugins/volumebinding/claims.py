"""A pod's claims, sorted as ``GetPodVolumeClaims`` sorts them, and what PreFilter
checks first (``podHasPVCs``, ``GetEligibleNodes``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from contracts.k8s import PersistentVolume, PersistentVolumeClaim, Pod
from services.framework.api.listers import Listers
from services.framework.plugins.volumebinding.assume_cache import AssumeCache
from services.framework.plugins.volumehelpers.claims import (
    CLAIM_LOST,
    claim_class,
    claim_not_found,
    is_delay_binding,
    is_fully_bound,
    pod_claim_name,
    volume_is_for_pod,
)

LABEL_HOSTNAME = "kubernetes.io/hostname"


class ClaimProblem(Exception):
    """A claim of the pod is missing, lost, being deleted or not the pod's: the pod
    cannot be scheduled until it changes (UnschedulableAndUnresolvable)."""


@dataclass(frozen=True, slots=True)
class PodVolumeClaims:
    bound: tuple[PersistentVolumeClaim, ...] = ()
    """Claims fully bound to a volume."""
    unbound_delay_binding: tuple[PersistentVolumeClaim, ...] = ()
    """Unbound claims of a WaitForFirstConsumer class: the scheduler binds them."""
    unbound_immediate: tuple[PersistentVolumeClaim, ...] = ()
    """Unbound claims that should have been bound already (or are pre-bound)."""
    volumes_by_class: Mapping[str, tuple[PersistentVolume, ...]] = field(default_factory=dict)
    """The volumes of each class of the delay-binding claims (assumed ones included)."""


def pod_has_claims(pod: Pod, listers: Listers) -> bool:
    """``podHasPVCs``: whether the pod uses a claim; raises ClaimProblem."""
    has_claim = False
    namespace = pod.metadata.namespace
    for volume in pod.spec.volumes:
        named = pod_claim_name(pod, volume)
        if named is None:
            continue
        name, ephemeral = named
        has_claim = True
        claim = listers.claim(namespace, name)
        if claim is None:
            if ephemeral:
                raise ClaimProblem(
                    "waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{name}"'
                )
            raise ClaimProblem(claim_not_found(name))
        if claim.status.phase == CLAIM_LOST:
            raise ClaimProblem(
                f'persistentvolumeclaim "{claim.metadata.name}" bound to non-existent '
                f'persistentvolume "{claim.spec.volume_name or ""}"'
            )
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimProblem(f'persistentvolumeclaim "{claim.metadata.name}" is being deleted')
        if ephemeral and (problem := volume_is_for_pod(pod, claim)) is not None:
            raise ClaimProblem(problem)
    return has_claim


def pod_volume_claims(pod: Pod, cache: AssumeCache, listers: Listers) -> PodVolumeClaims:
    """``GetPodVolumeClaims``, reading claims and volumes through the assume cache.
    Raises ClaimProblem for a claim that vanished since ``pod_has_claims``."""
    bound: list[PersistentVolumeClaim] = []
    delay: list[PersistentVolumeClaim] = []
    immediate: list[PersistentVolumeClaim] = []
    for volume in pod.spec.volumes:
        named = pod_claim_name(pod, volume)
        if named is None:
            continue
        claim = cache.claim(pod.metadata.namespace, named[0])
        if claim is None:
            raise ClaimProblem(claim_not_found(named[0]))
        if named[1] and (problem := volume_is_for_pod(pod, claim)) is not None:
            raise ClaimProblem(problem)
        if is_fully_bound(claim):
            bound.append(claim)
        elif is_delay_binding(listers, claim) and not claim.spec.volume_name:
            delay.append(claim)
        else:
            immediate.append(claim)
    by_class = {claim_class(c): tuple(cache.volumes_of_class(claim_class(c))) for c in delay}
    return PodVolumeClaims(tuple(bound), tuple(delay), tuple(immediate), by_class)


def local_volume_node_names(volume: PersistentVolume) -> set[str] | None:
    """``GetLocalPersistentVolumeNodeNames``: the node names a volume's affinity pins it
    to through ``kubernetes.io/hostname In``; None if it pins none."""
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return None
    result: set[str] = set()
    for term in affinity.required.node_selector_terms:
        names: set[str] | None = None
        for expr in term.match_expressions:
            if expr.key == LABEL_HOSTNAME and expr.operator == "In":
                values = set(expr.values)
                names = values if names is None else names & values
        result |= names or set()
    return result or None


def eligible_nodes(bound: tuple[PersistentVolumeClaim, ...], cache: AssumeCache) -> set[str] | None:
    """``GetEligibleNodes``: the nodes every bound local volume allows; None when they do
    not narrow the nodes (or a bound volume is missing)."""
    eligible: set[str] | None = None
    for claim in bound:
        volume = cache.volume(claim.spec.volume_name or "")
        if volume is None:
            return None
        names = local_volume_node_names(volume)
        if names:
            eligible = set(names) if eligible is None else eligible & names
    return eligible
