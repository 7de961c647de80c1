"""Pod requests and node allocatable as kube-scheduler counts them, in integers.

Units: cpu in millicores, every other resource in base units (bytes, counts); a
fractional amount rounds up, as ``Quantity.MilliValue()`` / ``Value()`` do. Requests are
summed exactly (as Quantities are upstream) and converted once at the end.

The aggregation is component-helpers' ``PodRequests`` (the sidecar KEP formula)::

    app        = sum(app containers) + sum(restartable init containers)
    init_i     = request(init container i) + sum(restartable init containers before i)
                 (for a restartable one: the running sum of sidecars including itself)
    requests   = max(app, max_i init_i) per resource, + spec.overhead

Only the resources the scheduler accounts are returned: ``cpu``, ``memory``,
``ephemeral-storage`` and scalar resources (extended ``vendor/name``, ``hugepages-*``,
``kubernetes.io/*``, ``attachable-volumes-*``), as upstream's ``framework.Resource``
keeps them. Zero amounts are left out.

``pods`` is never part of :func:`pod_requests`: a pod counts as one pod on its node,
which the store (``PodCharge.requests`` / ``Reservation.requests`` must carry
``pods: 1``) and the scheduler's snapshot add themselves. :func:`node_allocatable`
does include ``pods`` (``status.allocatable.pods``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from fractions import Fraction

from contracts.k8s import Container, Node, Pod, Quantity
from contracts.k8s.names import qualified_name_errors
from contracts.quantity import QuantityError, parse_quantity, to_int, to_millis

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "ResourceError",
    "is_extended_resource_name",
    "is_scalar_resource_name",
    "node_allocatable",
    "pod_nonzero_requests",
    "pod_requests",
    "validate_node",
    "validate_pod",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

DEFAULT_MILLI_CPU_REQUEST = 100
"""Upstream's ``schedutil.DefaultMilliCPURequest``: 0.1 core for a container without one."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""Upstream's ``schedutil.DefaultMemoryRequest``: 200 MiB for a container without one."""

_NON_MISSING = {
    CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}
_NATIVE_PREFIX = "kubernetes.io/"


class ResourceError(ValueError):
    """An invalid or negative quantity, naming the field (``spec.overhead.cpu``)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@functools.lru_cache(maxsize=1024)
def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: ``vendor.example/thing``, not ``kubernetes.io/``."""
    if "/" not in name or _NATIVE_PREFIX in name or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def is_scalar_resource_name(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: what ``framework.Resource.ScalarResources`` holds."""
    return (
        is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or _NATIVE_PREFIX in name
        or name.startswith("attachable-volumes-")
    )


def _accounted(name: str) -> bool:
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name)


def _amount(name: str, value: Fraction) -> int:
    return to_millis(value) if name == CPU else to_int(value)


def _parse(name: str, text: Quantity, field: str) -> Fraction:
    try:
        value = parse_quantity(text)
    except QuantityError as err:
        raise ResourceError(field, str(err)) from None
    if value < 0:
        raise ResourceError(field, "must be greater than or equal to 0")
    if is_extended_resource_name(name) and value.denominator != 1:
        raise ResourceError(field, "must be an integer")
    return value


def _quantities(values: Mapping[str, Quantity], field: str) -> dict[str, Fraction]:
    return {name: _parse(name, text, f"{field}.{name}") for name, text in values.items()}


def _add(into: dict[str, Fraction], values: Mapping[str, Fraction]) -> None:
    for name, value in values.items():
        into[name] = into.get(name, Fraction(0)) + value


def _max(into: dict[str, Fraction], values: Mapping[str, Fraction]) -> None:
    for name, value in values.items():
        if value > into.get(name, Fraction(0)):
            into[name] = value


def _container(c: Container, field: str, defaults: Mapping[str, Fraction]) -> dict[str, Fraction]:
    requests = _quantities(c.resources.requests, f"{field}.resources.requests")
    for name, value in defaults.items():
        # Only a *missing* request is defaulted: an explicit 0 stays 0 (applyNonMissing).
        requests.setdefault(name, value)
    return requests


def _aggregate(pod: Pod, defaults: Mapping[str, Fraction]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for i, c in enumerate(pod.spec.containers):
        _add(total, _container(c, f"spec.containers[{i}]", defaults))
    sidecars: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for i, c in enumerate(pod.spec.init_containers):
        own = _container(c, f"spec.initContainers[{i}]", defaults)
        if c.restart_policy == "Always":
            _add(total, own)
            _add(sidecars, own)
            _max(init_max, sidecars)
        else:
            during = dict(sidecars)
            _add(during, own)
            _max(init_max, during)
    _max(total, init_max)
    _add(total, _quantities(pod.spec.overhead, "spec.overhead"))
    return total


def _to_ints(values: Mapping[str, Fraction]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, value in values.items():
        if _accounted(name):
            amount = _amount(name, value)
            if amount:
                out[name] = amount
    return out


def resource_amounts(values: Mapping[str, Quantity], field: str) -> dict[str, int]:
    """A ResourceList in ksched's units (cpu in millicores, the rest as integers);
    raises :class:`ResourceError` naming ``field.<resource>`` for an invalid quantity."""
    return _to_ints(_quantities(values, field))


def pod_requests(pod: Pod) -> Mapping[str, int]:
    """What the pod requests (``resource.PodRequests``), without ``pods``.

    Computed once per pod version (see :class:`_PerVersion`): the mapping is shared,
    read it and copy it to change it. Raises :class:`ResourceError` naming the first
    invalid or negative quantity.
    """
    key = _version(pod)
    held = _REQUESTS.held.get(key) if key else None
    if held is None:
        held = _REQUESTS.keep(key, _BY_SHAPE.amounts(pod, {}))
    return held


def pod_nonzero_requests(pod: Pod) -> Mapping[str, int]:
    """:func:`pod_requests` with upstream's non-zero defaults for scoring: a container
    (app or init) that does not set a cpu or memory request counts 100m / 200Mi.
    ``NodeInfo.NonZeroRequested`` and the LeastAllocated / MostAllocated scores use this.
    Shared per pod version, as :func:`pod_requests`."""
    key = _version(pod)
    held = _NONZERO.held.get(key) if key else None
    if held is None:
        held = _NONZERO.keep(key, _BY_SHAPE.amounts(pod, _NON_MISSING))
    return held


def _version(pod: Pod) -> tuple[str, str] | None:
    meta = pod.metadata
    return (meta.uid, meta.resource_version) if meta.uid and meta.resource_version else None


class _PerVersion:
    """A pod's requests by (uid, resourceVersion), so each process computes them once
    per version although the queue, its hints, the scheduler's cache and its pending
    pods all ask. A pod without both (a test's or an unsaved object) is not kept. The
    oldest half goes when ``limit`` versions are held. Callers get the kept mapping
    itself, typed read-only."""

    def __init__(self, limit: int = 65536) -> None:
        self._limit = limit
        self.held: dict[tuple[str, str], Mapping[str, int]] = {}

    def keep(self, key: tuple[str, str] | None, amounts: dict[str, int]) -> Mapping[str, int]:
        if key is not None:
            if len(self.held) >= self._limit:
                for old in list(self.held)[: self._limit // 2]:
                    del self.held[old]
            self.held[key] = amounts
        return amounts


_REQUESTS = _PerVersion()
_NONZERO = _PerVersion()


Shape = tuple[object, ...]


def _shape(pod: Pod) -> Shape:
    """What the requests of ``pod`` depend on: its containers' and init containers'
    requests (with the init containers' restart policy) and its overhead."""
    spec = pod.spec
    return (
        tuple(tuple(c.resources.requests.items()) for c in spec.containers),
        tuple(
            (tuple(c.resources.requests.items()), c.restart_policy) for c in spec.init_containers
        ),
        tuple(spec.overhead.items()),
    )


class _ByShape:
    """Requests by the pod's shape (:func:`_shape`): a workload's pods repeat a handful
    of templates, and a scheduler loading 150,000 pods would otherwise add up the same
    Fractions for each. Only valid shapes are kept (an invalid one raises each time,
    naming its field); at ``limit`` shapes the cache starts again."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._held: dict[tuple[bool, Shape], dict[str, int]] = {}

    def amounts(self, pod: Pod, defaults: Mapping[str, Fraction]) -> dict[str, int]:
        try:
            key = (bool(defaults), _shape(pod))
            held = self._held.get(key)
        except TypeError:  # an unhashable quantity (a malformed object): not kept
            return _to_ints(_aggregate(pod, defaults))
        if held is None:
            held = _to_ints(_aggregate(pod, defaults))
            if len(self._held) >= self._limit:
                self._held.clear()
            self._held[key] = held
        return held


_BY_SHAPE = _ByShape()


def node_allocatable(node: Node) -> dict[str, int]:
    """``status.allocatable`` (``status.capacity`` when allocatable is empty, as the API
    server defaults it), including ``pods``. Raises :class:`ResourceError`."""
    status = node.status
    values, field = (
        (status.allocatable, "status.allocatable")
        if status.allocatable or not status.capacity
        else (status.capacity, "status.capacity")
    )
    out: dict[str, int] = {}
    for name, text in values.items():
        if name == PODS or _accounted(name):
            out[name] = _amount(name, _parse(name, text, f"{field}.{name}"))
    return out


def _problems(values: Mapping[str, Quantity], field: str) -> list[tuple[str, str]]:
    found = []
    for name, text in values.items():
        try:
            _parse(name, text, f"{field}.{name}")
        except ResourceError as err:
            found.append((err.field, err.reason))
    return found


def _container_problems(containers: Sequence[Container], field: str) -> list[tuple[str, str]]:
    found = []
    for i, c in enumerate(containers):
        path = f"{field}[{i}].resources"
        found += _problems(c.resources.requests, f"{path}.requests")
        found += _problems(c.resources.limits, f"{path}.limits")
    return found


def validate_pod(pod: Pod) -> list[tuple[str, str]]:
    """Every invalid quantity in the pod's requests, limits and overhead, as
    ``(field path, reason)``; empty when the pod's resources are valid."""
    return (
        _container_problems(pod.spec.containers, "spec.containers")
        + _container_problems(pod.spec.init_containers, "spec.initContainers")
        + _problems(pod.spec.overhead, "spec.overhead")
    )


def validate_node(node: Node) -> list[tuple[str, str]]:
    """Every invalid quantity in ``status.capacity`` and ``status.allocatable``."""
    return _problems(node.status.capacity, "status.capacity") + _problems(
        node.status.allocatable, "status.allocatable"
    )
