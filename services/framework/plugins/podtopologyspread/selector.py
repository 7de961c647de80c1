"""Which pods a spread constraint counts.

A constraint's ``labelSelector`` compiles with ``LabelSelectorAsSelector``
(:mod:`services.common.k8s.labels`): a missing selector matches no pod, ``{}`` matches
every pod but, being *empty*, counts none. ``matchLabelKeys`` add ``key=value`` requirements
taken from the incoming pod's labels (:func:`with_match_labels`), as upstream's
``mergeLabelSetWithSelector``: a selector that matches nothing stays so.

The default constraints use :func:`default_selector`, upstream's
``helper.DefaultSelector``: the selectors of the Services that select the pod, plus its
controller's (ReplicationController, ReplicaSet or StatefulSet) selector.
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts.k8s import ObjectMeta, OwnerReference, Pod, Service
from services.common.k8s.labels import (
    EQUALS,
    Requirement,
    Selector,
    SelectorError,
    label_selector_as_selector,
    selector_from_set,
)
from services.framework.api.listers import Listers


def with_match_labels(selector: Selector, labels: Mapping[str, str]) -> Selector:
    """``mergeLabelSetWithSelector``: AND ``key=value`` for each of ``labels``."""
    if selector.nothing:
        return selector
    return selector.add(Requirement(k, EQUALS, (v,)) for k, v in labels.items())


def pod_services(pod: Pod, listers: Listers) -> list[Service]:
    """``GetPodServices``: the Services of the pod's namespace whose selector matches its
    labels; a Service without a selector selects nothing, one with ``{}`` every pod."""
    labels = pod.metadata.labels
    return [
        s
        for s in listers.services_in(pod.metadata.namespace)
        if s.spec.selector is not None
        and all(labels.get(k) == v for k, v in s.spec.selector.items())
    ]


def _controller_ref(meta: ObjectMeta) -> OwnerReference | None:
    """``metav1.GetControllerOfNoCopy``: the first owner reference marked controller."""
    return next((ref for ref in meta.owner_references if ref.controller), None)


def default_selector(pod: Pod, listers: Listers) -> Selector:
    """``helper.DefaultSelector``: the selectors of the Services selecting the pod,
    merged (later Services win on a shared key, as ``labels.Merge``), AND the selector of
    its controller when that is a ReplicationController (v1), ReplicaSet or StatefulSet
    (apps/v1) the listers hold in the pod's namespace. A controller selector that does
    not parse is ignored, as upstream ignores the error."""
    merged: dict[str, str] = {}
    for service in pod_services(pod, listers):
        merged.update(service.spec.selector or {})
    selector = selector_from_set(merged)
    ref = _controller_ref(pod.metadata)
    if ref is None:
        return selector
    group, _, version = ref.api_version.rpartition("/")
    key = f"{pod.metadata.namespace or 'default'}/{ref.name}"
    match (group, version, ref.kind):
        case ("", "v1", "ReplicationController"):
            rc = listers.replication_controllers.get(key)
            if rc is not None:
                return selector_from_set({**merged, **(rc.spec.selector or {})})
        case ("apps", "v1", "ReplicaSet" | "StatefulSet"):
            table = listers.replica_sets if ref.kind == "ReplicaSet" else listers.stateful_sets
            owner = table.get(key)
            if owner is not None:
                try:
                    other = label_selector_as_selector(owner.spec.selector)
                except SelectorError:
                    return selector
                return selector.add(other.requirements)
        case _:
            pass  # not owned by a supported controller
    return selector
