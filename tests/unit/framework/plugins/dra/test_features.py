"""AllocatorFeatures.from_gates: the allocator's switches follow --feature-gates."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.common import features
from services.framework.plugins.dynamicresources.allocator import AllocatorFeatures


@pytest.fixture
def restore_gates() -> Iterator[None]:
    before = features.current()
    yield
    features.install(before)


def test_defaults_are_upstreams() -> None:
    assert AllocatorFeatures.from_gates() == AllocatorFeatures()


@pytest.mark.usefixtures("restore_gates")
@pytest.mark.parametrize(
    ("gate", "field"),
    [
        ("DRADeviceTaints", "device_taints"),
        ("DRAPartitionableDevices", "partitionable_devices"),
        ("DRAConsumableCapacity", "consumable_capacity"),
        ("DRADeviceBindingConditions", "device_binding"),
    ],
)
def test_a_gate_turned_off_turns_its_switch_off(gate: str, field: str) -> None:
    features.install(features.parse(f"{gate}=false"))
    switched = AllocatorFeatures.from_gates()
    assert getattr(switched, field) is False
    assert getattr(AllocatorFeatures(), field) is True
