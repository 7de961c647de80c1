"""A pod's QoS class (``v1qos.GetPodQOS``).

``status.qosClass`` when set, else computed as ``ComputePodQOS``: a container with no
cpu/memory requests or limits is BestEffort, one whose cpu and memory requests equal
non-zero limits is Guaranteed, anything else Burstable; a pod mixing classes across its
(init and app) containers is Burstable.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

from contracts.k8s import Container, Pod, Quantity
from contracts.quantity import QuantityError, parse_quantity

GUARANTEED: Final = "Guaranteed"
BURSTABLE: Final = "Burstable"
BEST_EFFORT: Final = "BestEffort"
_COMPUTE_RESOURCES: Final = ("cpu", "memory")


def _amount(values: dict[str, Quantity], name: str) -> Fraction:
    return parse_quantity(values[name]) if name in values else Fraction(0)


def _container_qos(container: Container) -> str:
    """``resourceQOS`` of one container's requirements."""
    requests, limits = container.resources.requests, container.resources.limits
    if not requests and not limits:
        return BEST_EFFORT
    qos = ""
    for name in _COMPUTE_RESOURCES:
        request, limit = _amount(requests, name), _amount(limits, name)
        if request != limit:
            return BURSTABLE
        best_effort = request == 0
        if not qos:
            qos = BEST_EFFORT if best_effort else GUARANTEED
        elif best_effort != (qos == BEST_EFFORT):
            return BURSTABLE
    return qos


def get_pod_qos(pod: Pod) -> str:
    """``GetPodQOS``: ``status.qosClass``, else computed from the containers."""
    if pod.status.qos_class:
        return pod.status.qos_class
    qos = ""
    try:
        for container in (*pod.spec.init_containers, *pod.spec.containers):
            found = _container_qos(container)
            if found == BURSTABLE or (qos and found != qos):
                return BURSTABLE
            qos = found
    except QuantityError:
        return BURSTABLE  # the informer refuses such pods; never rank them first
    return qos or BEST_EFFORT
