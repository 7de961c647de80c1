"""DynamicResources' warm-up (dynamicresources.allocating.warm): every class selector is
evaluated on every device when slices or classes arrive, into the CEL cache the
allocator reads; a device the selector fails on is left for the pod that asks."""

from __future__ import annotations

from services.framework.plugins.dynamicresources.allocating import warm
from services.framework.plugins.dynamicresources.allocator.cel import CELCache
from tests.unit.framework.plugins.dra.plugin_support import (
    CLASS,
    DRIVER,
    broken_class,
    device_class,
    healthy,
    resource_slice,
)

SLICES = [resource_slice("a", DRIVER, "d1", "d2"), resource_slice("b", DRIVER, "d3")]


def test_every_selector_on_every_device_is_evaluated_once() -> None:
    cel = CELCache()
    classes = {CLASS: broken_class(device_class())}  # reads device.attributes[...].healthy
    evaluated = warm(cel, classes, [healthy(s, True) for s in SLICES])
    assert evaluated == 3
    assert len(cel.results) == 3
    assert warm(cel, classes, [healthy(s, True) for s in SLICES]) == 3  # new objects


def test_runtime_errors_are_left_for_the_pod() -> None:
    cel = CELCache()
    classes = {CLASS: broken_class(device_class())}
    assert warm(cel, classes, SLICES) == 0  # no healthy attribute: a runtime error each
    assert cel.results == {}


def test_a_class_without_selectors_warms_nothing() -> None:
    assert warm(CELCache(), {CLASS: device_class()}, SLICES) == 0
