"""How DynamicResources gets its allocator: the structured-parameters allocator
(:mod:`.allocator`) with one compiled-CEL cache for the plugin's lifetime and the
slices' index kept while the slices are the same, built for a pod only when Filter first
asks it something (:class:`Lazy`)."""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence

from contracts.k8s import DeviceClass, Node, ResourceSlice
from contracts.k8s.resource import AllocationResult, ResourceClaim
from services.framework.plugins.dynamicresources.allocator import AllocatorFeatures
from services.framework.plugins.dynamicresources.allocator.cel import CELCache
from services.framework.plugins.dynamicresources.allocator.pools import SliceIndex
from services.framework.plugins.dynamicresources.allocator.search import Allocator
from services.framework.plugins.dynamicresources.state import Allocating, AllocatorFactory


class Lazy:
    """The pod's allocator, built on its first question (with the memo's answers, most
    pods ask about one node or none)."""

    def __init__(
        self,
        factory: AllocatorFactory,
        allocated: Container[str],
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


def structured_allocator() -> AllocatorFactory:
    """The structured-parameters allocator (:mod:`.allocator`), with one compiled-CEL
    cache for the plugin's lifetime and the slices' index kept while they are the same
    objects (immutable, replaced on update; kept alive with the index)."""
    cel = CELCache()
    indexed: list[tuple[tuple[int, ...], list[ResourceSlice], SliceIndex]] = []

    def new(
        allocated: Container[str], classes: Mapping[str, DeviceClass], slices: list[ResourceSlice]
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
