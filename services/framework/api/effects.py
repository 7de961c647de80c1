"""What plugins ask a service to publish (``CycleState.effects``): plugins never write to
the bus; they leave these. The binder publishes a binding cycle's, in order, in one
confirmed publish with the pod's Binding; the scheduler publishes the claims a failed
attempt's PostFilter deallocated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class WatchEffect:
    """A binding-cycle plugin's API write, which the binder publishes as a watch event
    on ``ksched.events`` (``kind`` lowercase, ``type`` ADDED/MODIFIED/DELETED) in the
    same confirmed publish as the pod's Binding; the informer records it."""

    kind: str
    type: str
    object: Any


@dataclass(frozen=True, slots=True)
class BindEffect:
    """A Bind plugin bound the pod to ``node``: the binder publishes the v1 Binding."""

    node: str


@dataclass(frozen=True, slots=True)
class ClaimStatusEffect:
    """A ResourceClaim's new status, published on ``ksched.decisions``
    (``claim.<namespace>``); a client applies it by publishing the claim's MODIFIED
    event. DynamicResources' PreBind leaves the allocation with the pod in
    ``status.reservedFor`` (the binder publishes it before the pod's Binding); its
    PostFilter leaves a deallocation (the scheduler publishes it with the failed
    attempt's FailedScheduling Event)."""

    claim: Any
    """A ``contracts.k8s.ResourceClaim``."""


@dataclass(frozen=True, slots=True)
class PodStatusEffect:
    """A pod status update (``pods/status``) a binding-cycle plugin makes: DynamicResources'
    PreBind sets ``status.extendedResourceClaimStatus`` after creating the pod's
    extended-resource claim. The binder publishes it on ``ksched.decisions``
    (``status.<namespace>``) after the claim's ``claim.<namespace>`` and before the
    pod's Binding; a client applies it to the pod's status."""

    patch: Any
    """A ``contracts.podstatus.PodStatusPatch``."""


Effect = WatchEffect | BindEffect | ClaimStatusEffect | PodStatusEffect
