"""The in-flight allocations and the devices taken (dynamicresources.inflight), followed
incrementally: the listers' journal of claim changes, signals and removals; the changes
drained for Filter's memo."""

from __future__ import annotations

from services.common import features
from services.framework.plugins.dynamicresources.inflight import InFlightAllocations
from tests.unit.framework.plugins.dra.plugin_support import (
    DRIVER,
    allocation,
    claim,
    listers_of,
)

GPU0, GPU1 = f"{DRIVER}/worker/instance-1", f"{DRIVER}/worker/instance-2"


def test_listed_and_in_flight_devices_are_taken_and_their_changes_drained() -> None:
    listed = claim("listed", allocation=allocation())
    listers = listers_of(listed)
    flight = InFlightAllocations(listers)
    assert flight.allocated_devices() == {GPU0}
    assert flight.drain_changes() == {GPU0}
    assert flight.drain_changes() == set()
    pending = claim("pending", allocation=allocation(("req-1", "instance-2")))
    flight.signal(pending, "pod-uid", "worker")
    taken = flight.taken(frozenset({"other/pool/x"}))
    assert GPU0 in taken and GPU1 in taken and "other/pool/x" in taken
    assert f"{DRIVER}/worker/instance-3" not in taken
    assert flight.drain_changes() == {GPU1}
    assert flight.remove(pending.metadata.uid, "another-pod") is False
    assert flight.remove(pending.metadata.uid, "pod-uid") is True
    assert GPU1 not in flight.taken(frozenset())
    assert flight.drain_changes() == {GPU1}
    listers.put(listed, deleted=True)  # the claim goes: its device is free
    assert GPU0 not in flight.taken(frozenset())
    assert flight.allocated_devices() == frozenset()
    assert flight.drain_changes() == {GPU0}


def test_shares_are_summed_not_taken() -> None:
    """DRAConsumableCapacity: a listed claim's share and one in flight on instance-1 add
    their consumed capacity up; the device is not taken; each change is drained."""
    share = allocation(share_id="s-1", consumed_capacity={"memory": "1Gi"})
    listers = listers_of(claim("listed", allocation=share))
    flight = InFlightAllocations(listers)
    state = flight.allocated_state(frozenset())
    assert GPU0 not in state.devices and state.is_allocated(GPU0)
    assert state.capacity == {GPU0: {f"{DRIVER}/memory": 2**30}}
    assert flight.drain_changes() == {GPU0}
    other = allocation(share_id="s-2", consumed_capacity={"memory": "2Gi"})
    pending = claim("pending", allocation=other)
    flight.signal(pending, "pod-uid", "worker")
    assert flight.allocated_state(frozenset()).capacity == {GPU0: {f"{DRIVER}/memory": 3 * 2**30}}
    assert flight.drain_changes() == {GPU0}
    flight.remove(pending.metadata.uid, "pod-uid")
    assert flight.allocated_state(frozenset()).capacity == {GPU0: {f"{DRIVER}/memory": 2**30}}
    assert flight.drain_changes() == {GPU0}


def test_with_the_gate_off_a_share_takes_the_device() -> None:
    """Upstream's allocated state without DRAConsumableCapacity: a result with a
    ``shareID`` is an exclusive device."""
    share = allocation(share_id="s-1", consumed_capacity={"memory": "1Gi"})
    flight = InFlightAllocations(listers_of(claim("listed", allocation=share)))
    before = features.current()
    features.install(features.parse("DRAConsumableCapacity=false"))
    try:
        state = flight.allocated_state(frozenset())
    finally:
        features.install(before)
    assert GPU0 in state.devices and not state.capacity
    assert GPU0 not in flight.allocated_state(frozenset()).devices
