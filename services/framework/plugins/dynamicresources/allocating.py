"""How DynamicResources gets its allocator: the structured-parameters allocator
(:mod:`.allocator`) with one compiled-CEL cache for the plugin's lifetime and the
slices' index kept while the slices are the same, built for a pod only when Filter first
asks it something (:class:`Lazy`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from contracts.k8s import DeviceClass, Node, ResourceSlice
from contracts.k8s.resource import AllocationResult, ResourceClaim
from services.framework.plugins.dynamicresources.allocator import AllocatorFeatures
from services.framework.plugins.dynamicresources.allocator.allocated import AllocatedState
from services.framework.plugins.dynamicresources.allocator.cel import CELCache, CELRuntimeError
from services.framework.plugins.dynamicresources.allocator.pools import SliceIndex
from services.framework.plugins.dynamicresources.allocator.search import Allocator
from services.framework.plugins.dynamicresources.state import Allocating, AllocatorFactory


class Lazy:
    """The pod's allocator, built on its first question (with the memo's answers, most
    pods ask about one node or none)."""

    def __init__(
        self,
        factory: AllocatorFactory,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: list[ResourceSlice],
    ) -> None:
        self._args = (allocated, classes, slices)
        self._factory = factory
        self._built: Allocating | None = None

    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim]
    ) -> list[AllocationResult] | None:
        if self._built is None:
            self._built = self._factory(*self._args)
        return self._built.allocate(node, claims)


def structured_allocator(cel: CELCache) -> AllocatorFactory:
    """The structured-parameters allocator (:mod:`.allocator`), with ``cel`` (the
    plugin's compiled-CEL cache, for its lifetime) and the slices' index kept while they
    are the same objects (immutable, replaced on update; kept alive with the index)."""
    indexed: list[tuple[tuple[int, ...], list[ResourceSlice], SliceIndex]] = []

    def new(
        allocated: AllocatedState, classes: Mapping[str, DeviceClass], slices: list[ResourceSlice]
    ) -> Allocating:
        features = AllocatorFeatures.from_gates()
        ids = tuple(map(id, slices))
        if not indexed or indexed[0][0] != ids:
            indexed[:] = [(ids, slices, SliceIndex(slices))]
        return Allocator(
            features=features,
            allocated=allocated,
            classes=classes,
            slices=slices,
            cel=cel,
            index=indexed[0][2],
        )

    return new


def warm(cel: CELCache, classes: Mapping[str, DeviceClass], slices: Sequence[ResourceSlice]) -> int:
    """Evaluate every class selector on every device of ``slices`` now, into ``cel``
    (compiled once, a result per device object, as the allocator would on its first
    question): what depends on the cluster's objects alone, not on a pod, is not left
    to the first pod that asks. Errors are left for that pod to meet. Returns how many
    (selector, device) pairs were evaluated."""
    done = 0
    compiled = [
        cel.get_or_compile(selector.cel.expression)
        for device_class in classes.values()
        for selector in device_class.spec.selectors
        if selector.cel is not None
    ]
    usable = [c for c in compiled if c.error is None]
    for resource_slice in slices:
        driver = resource_slice.spec.driver
        for device in resource_slice.spec.devices:
            for selector in usable:
                try:
                    cel.matches(selector, driver, device)
                except CELRuntimeError:
                    continue
                done += 1
    return done
