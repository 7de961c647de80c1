"""DynamicResources in a scheduling cycle, with the structured allocator: the
allocations in flight across a batch,
the devices the store must guard, the binding state's format, Filter's shortcuts and
timeout, Score, binding conditions and ``--explain``."""

from __future__ import annotations

import json
from collections.abc import Callable

import msgspec
import numpy as np
import pytest

from contracts.k8s import Pod, ResourceClaim, ResourceSlice
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.config import DEFAULT_PLUGINS, Profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.dynamicresources import (
    NAME,
    DynamicResources,
    DynamicResourcesArgs,
)
from services.framework.plugins.dynamicresources.claims import claim_uid
from services.framework.runtime.framework import Framework
from tests.builders import make_pod
from tests.builders.scheduling import schedule_once
from tests.unit.framework.helpers import snapshot_of
from tests.unit.framework.plugins.dra.plugin_support import (
    ALLOCATION,
    CLASS,
    NODE,
    NODE2,
    POD_UID,
    Allocators,
    admin_access,
    allocated,
    allocation,
    claim,
    device_class,
    first_available,
    listers_of,
    pod_with_claim_name,
    resource_slice,
    with_device_status,
    worker,
)

NOW = 1_800_000_000.0
U = Code.UnschedulableAndUnresolvable


def plugin_of(*objects: object, **kwargs: object) -> DynamicResources:
    args = kwargs.pop("args", None) or DynamicResourcesArgs().defaulted()
    kwargs.setdefault("now", lambda: NOW)
    return DynamicResources(args, listers_of(*objects), **kwargs)  # type: ignore[arg-type]


def owned_pod(name: str, claim_name: str) -> Pod:
    pod = pod_with_claim_name(claim_name, uid=f"{name}-uid")
    return msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, name=name))


def owned_claim(name: str, pod: str) -> ResourceClaim:
    return claim(name, owner=f"{pod}-uid")


def filtered(plugin: DynamicResources, pod: Pod, nodes: list, placed: list[Pod] = ()):  # type: ignore[assignment]
    table = snapshot_of(nodes, placed).snapshot()
    state, info = CycleState(), PodInfo.of(pod)
    _, status = plugin.pre_filter(state, info, table)
    assert status == Status(), status
    return state, info, table, plugin.filter_all(state, info, table)


# -- in flight ------------------------------------------------------------------------


def test_reserve_takes_the_device_for_the_next_pod_and_unreserve_frees_it():
    objects = [
        owned_claim("a", "pa"), owned_claim("b", "pb"), device_class(), resource_slice(NODE)
    ]  # fmt: skip
    plugin = plugin_of(*objects)
    first = owned_pod("pa", "a")
    state, info, _, result = filtered(plugin, first, [worker()])
    assert result.passed.tolist() == [True]
    assert plugin.reserve(state, info, NODE) == Status()
    assert state.reserved_devices == ["some-driver/worker/instance-1"]
    # The first pod is assumed on the node: its device is taken for the second.
    placed = msgspec.structs.replace(
        first, spec=msgspec.structs.replace(first.spec, node_name=NODE)
    )
    _, _, _, second = filtered(plugin, owned_pod("pb", "b"), [worker()], [placed])
    assert second.passed.tolist() == [False]
    assert second.describe(int(second.codes[0])) == Status(U, ("cannot allocate all claims",))
    plugin.unreserve(state, info, NODE)
    plugin.unreserve(state, info, NODE)  # idempotent
    assert state.reserved_devices == []
    _, _, _, again = filtered(plugin, owned_pod("pb", "b"), [worker()], [placed])
    assert again.passed.tolist() == [True]


def test_a_claim_in_flight_makes_a_sharing_pod_wait():
    shared = claim("shared")
    plugin = plugin_of(shared, device_class(), resource_slice(NODE))
    first = owned_pod("pa", "shared")
    state, info, _, _ = filtered(plugin, first, [worker()])
    assert plugin.reserve(state, info, NODE) == Status()
    placed = msgspec.structs.replace(
        first, spec=msgspec.structs.replace(first.spec, node_name=NODE)
    )
    table = snapshot_of([worker()], [placed]).snapshot()
    _, status = plugin.pre_filter(CycleState(), PodInfo.of(owned_pod("pb", "shared")), table)
    assert status == Status(
        U, ("resource claim default/shared is in the process of being allocated",)
    )


def test_in_flight_entries_go_once_the_cluster_shows_them_or_the_pod_is_gone():
    pending = claim("c")
    listers = listers_of(pending)
    plugin = DynamicResources(DynamicResourcesArgs().defaulted(), listers)
    plugin.in_flight.signal(allocated(pending), "p-uid", NODE)
    placed = make_pod("p", uid="p-uid", node_name=NODE)
    plugin.in_flight.refresh(snapshot_of([worker()], [placed]).snapshot())
    assert plugin.in_flight.has(pending.metadata.uid)
    assert plugin.in_flight.allocated_devices() == {"some-driver/worker/instance-1"}
    # The pod's reservation went away: the allocation is dropped.
    plugin.in_flight.refresh(snapshot_of([worker()]).snapshot())
    assert not plugin.in_flight.has(pending.metadata.uid)
    # The listed claim shows its allocation: dropped, the device still counts (listed).
    plugin.in_flight.signal(allocated(pending), "p-uid", NODE)
    listers.put(allocated(pending))
    plugin.in_flight.refresh(snapshot_of([worker()], [placed]).snapshot())
    assert len(plugin.in_flight) == 0
    assert plugin.in_flight.allocated_devices() == {"some-driver/worker/instance-1"}


def test_taken_devices_leave_out_admin_access_and_shared_ones():
    shared = allocation(("req-1", "instance-2"))
    results = [msgspec.structs.replace(r, share_id="s-1") for r in shared.devices.results]
    shared = msgspec.structs.replace(
        shared, devices=msgspec.structs.replace(shared.devices, results=results)
    )
    plugin = plugin_of(
        allocated(claim("a")), admin_access(allocated(claim("b"))), allocated(claim("c"), shared)
    )
    assert plugin.in_flight.allocated_devices() == {"some-driver/worker/instance-1"}


# -- the binding state ----------------------------------------------------------------


def test_binding_state_is_the_pending_claims_as_json():
    pending = claim(owner=POD_UID)
    plugin = plugin_of(pending, device_class(), resource_slice(NODE))
    state, info, _, _ = filtered(plugin, pod_with_claim_name(), [worker()])
    assert plugin.reserve(state, info, NODE) == Status()
    raw = plugin.binding_state(state)
    assert raw is not None
    decoded = json.loads(raw)
    (entry,) = decoded["claims"]
    assert entry["claim"]["kind"] == "ResourceClaim"
    assert entry["claim"]["metadata"]["name"] == "my-pod-my-resource"
    assert entry["claim"]["status"].get("allocation") is None
    assert entry["allocation"]["devices"]["results"] == [
        {"request": "req-1", "driver": "some-driver", "pool": "worker", "device": "instance-1"}
    ]


def test_no_binding_state_when_every_claim_is_reserved_for_the_pod():
    in_use = claim(owner=POD_UID, allocation=ALLOCATION, reserved_for=[POD_UID])
    plugin = plugin_of(in_use)
    state, info, _, _ = filtered(plugin, pod_with_claim_name(), [worker()])
    assert plugin.reserve(state, info, NODE) == Status()
    assert plugin.binding_state(state) is None
    assert state.reserved_devices == []


# -- Filter ---------------------------------------------------------------------------


def test_nodes_no_slice_serves_are_rejected_without_the_allocator():
    made = Allocators()
    plugin = plugin_of(
        claim(owner=POD_UID), device_class(), resource_slice(NODE), new_allocator=made
    )
    _, _, _, result = filtered(plugin, pod_with_claim_name(), [worker(), worker(NODE2)])
    assert result.passed.tolist() == [True, False]
    assert result.describe(int(result.codes[1])) == Status(U, ("cannot allocate all claims",))
    assert made.calls == [[NODE]]


def test_a_slow_allocation_times_out_after_filter_timeout():
    ticks = iter([0.0, 11.0, 11.0, 12.0])
    clock: Callable[[], float] = lambda: next(ticks)  # noqa: E731
    plugin = plugin_of(claim(owner=POD_UID), device_class(), resource_slice(NODE), clock=clock)
    _, _, _, result = filtered(plugin, pod_with_claim_name(), [worker()])
    assert result.describe(int(result.codes[0])) == Status(
        U, ("timed out trying to allocate devices",)
    )
    off = DynamicResourcesArgs(filter_timeout="0s").defaulted()
    ticks = iter([0.0, 11.0])
    plugin = plugin_of(
        claim(owner=POD_UID), device_class(), resource_slice(NODE), clock=clock, args=off
    )
    assert filtered(plugin, pod_with_claim_name(), [worker()])[3].passed.tolist() == [True]


def test_a_claim_at_the_reservation_limit_is_in_use():
    full = claim(allocation=ALLOCATION, reserved_for=[f"other-{i}" for i in range(256)])
    plugin = plugin_of(full)
    table = snapshot_of([worker()]).snapshot()
    _, status = plugin.pre_filter(CycleState(), PodInfo.of(pod_with_claim_name()), table)
    assert status == Status(U, ("resourceclaim in use",))


def test_a_missing_claim_is_named_as_the_claim_tracker_names_it():
    plugin = plugin_of()
    status = plugin.pre_enqueue(PodInfo.of(pod_with_claim_name("gone")))
    assert status == Status(U, ('could not find ResourceClaim "default/gone"',))


# -- binding conditions ---------------------------------------------------------------


def bound_claim(stamp: str, **conditions: str) -> ResourceClaim:
    result = allocation(
        ("req-1", "instance-1"),
        binding_conditions=["condition"],
        binding_failure_conditions=["failed"],
    )
    result = msgspec.structs.replace(result, allocation_timestamp=stamp)
    return with_device_status(claim(owner=POD_UID, allocation=result), **conditions)


@pytest.mark.parametrize(
    ("allocated_at", "conditions", "available"),
    [
        pytest.param("2027-01-15T07:59:00Z", {"condition": "True"}, True, id="ready"),
        pytest.param("2027-01-15T07:59:00Z", {"condition": "False"}, True, id="waiting"),
        pytest.param(
            "2027-01-15T07:49:59Z", {"condition": "False"}, False, id="waited-past-the-timeout"
        ),
        pytest.param("2027-01-15T07:59:00Z", {"failed": "True"}, False, id="binding-failed"),
    ],
)
def test_binding_conditions_make_a_claim_unavailable(allocated_at, conditions, available):
    ten_minutes = DynamicResourcesArgs(binding_timeout="10m").defaulted()
    plugin = plugin_of(bound_claim(allocated_at, **conditions), args=ten_minutes)
    state, info, _, result = filtered(plugin, pod_with_claim_name(), [worker()])
    assert result.passed.tolist() == [available]
    if not available:
        assert result.describe(int(result.codes[0])) == Status(
            U, ("resourceclaim not available on the node",)
        )
        _, status = plugin.post_filter(state, info, None)  # type: ignore[arg-type]
        assert status == Status(Code.Unschedulable, ("deallocation of ResourceClaim completed",))


def test_post_filter_without_prefilter_state_is_upstreams_error():
    plugin = plugin_of()
    _, status = plugin.post_filter(CycleState(), PodInfo.of(make_pod()), None)  # type: ignore[arg-type]
    assert status == Status(Code.Error, ("not found",))


# -- Score ----------------------------------------------------------------------------


def test_a_higher_ranked_subrequest_scores_more():
    ranked = claim(
        "ranked",
        first_available("req-1", ("subreq-1", CLASS, 2), ("subreq-2", CLASS, 1)),
        owner=POD_UID,
    )
    plugin = plugin_of(
        ranked,
        device_class(),
        resource_slice(NODE, "some-driver", "instance-1", "instance-2"),
        resource_slice(NODE2),
    )
    state, info, table, result = filtered(
        plugin, pod_with_claim_name("ranked"), [worker(), worker(NODE2)]
    )
    assert result.passed.tolist() == [True, True]
    rows = np.arange(2, dtype=np.intp)
    assert plugin.pre_score(state, info, table, rows) == Status()
    raw = plugin.score_all(state, info, table, rows)
    assert raw.tolist() == [8, 7]
    assert plugin.normalize_score(state, info, raw).tolist() == [100, 87]


def test_score_is_skipped_without_first_available_requests():
    plugin = plugin_of(claim(owner=POD_UID), device_class(), resource_slice(NODE))
    state, info, table, _ = filtered(plugin, pod_with_claim_name(), [worker()])
    rows = np.arange(1, dtype=np.intp)
    assert plugin.pre_score(state, info, table, rows).is_skip()


# -- the framework and the batch scheduler --------------------------------------------


def test_explain_names_the_device_each_request_gets():
    snapshot = Cache()
    snapshot.add_node(worker())
    for obj in (claim(owner=POD_UID), device_class(), resource_slice(NODE)):
        snapshot.listers.put(obj)
    framework = Framework(
        Profile(plugins=DEFAULT_PLUGINS), in_tree_registry(), listers=snapshot.listers
    )
    result = framework.schedule_pod(snapshot, pod_with_claim_name(), explain=True)
    assert result.node == NODE
    assert result.explanation is not None
    assert result.explanation.to_json()["nodeDetails"] == {
        "DynamicResources": {
            "claims": {
                "my-resource": {
                    "claim": "my-pod-my-resource",
                    "allocated": True,
                    "devices": [
                        {
                            "request": "req-1",
                            "driver": "some-driver",
                            "pool": "worker",
                            "device": "instance-1",
                        }
                    ],
                }
            }
        }
    }


async def schedule_batch(pods: list[Pod], objects: list[object], nodes: list) -> object:
    return await schedule_once(pods, objects, nodes, Profile(plugins=DEFAULT_PLUGINS))


def devices_handed_on(request) -> list[str]:  # type: ignore[no-untyped-def]
    state = json.loads(bytes(request.plugin_state[NAME]))
    return [
        f"{r['driver']}/{r['pool']}/{r['device']}"
        for entry in state["claims"]
        for r in entry["allocation"]["devices"]["results"]
    ]


async def test_two_pods_of_one_batch_get_different_devices():
    objects = [
        owned_claim("a", "pa"),
        owned_claim("b", "pb"),
        device_class(),
        resource_slice(NODE, "some-driver", "instance-1", "instance-2"),
    ]
    outcome = await schedule_batch(
        [owned_pod("pa", "a"), owned_pod("pb", "b")], objects, [worker(), worker(NODE2)]
    )
    assert outcome.failures == []  # type: ignore[attr-defined]
    handed = sorted(devices_handed_on(r) for r in outcome.binds)  # type: ignore[attr-defined]
    assert handed == [["some-driver/worker/instance-1"], ["some-driver/worker/instance-2"]]


async def test_the_second_pod_finds_no_device_left():
    objects = [owned_claim("a", "pa"), owned_claim("b", "pb"), device_class(), resource_slice(NODE)]
    outcome = await schedule_batch(
        [owned_pod("pa", "a"), owned_pod("pb", "b")], objects, [worker(), worker(NODE2)]
    )
    (bound,) = outcome.binds  # type: ignore[attr-defined]
    assert devices_handed_on(bound) == ["some-driver/worker/instance-1"]
    (failure,) = outcome.failures  # type: ignore[attr-defined]
    assert failure.result.plugins == ["DynamicResources"]
    assert failure.result.message == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable,"
        " preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_claims_published_without_uids_are_told_apart_by_name():
    def anonymous(name: str) -> ResourceClaim:
        c = owned_claim(name, "pa")
        return msgspec.structs.replace(c, metadata=msgspec.structs.replace(c.metadata, uid=""))

    a, b = anonymous("a"), anonymous("b")
    plugin = plugin_of(a, b, device_class(), resource_slice(NODE))
    plugin.in_flight.signal(allocated(a), "pa-uid", NODE)
    assert plugin.in_flight.has("default/a")
    assert not plugin.in_flight.has("default/b")


def test_a_node_whose_pool_is_invalid_is_unschedulable_and_the_others_go_on():
    def half(name: str) -> ResourceSlice:
        s = resource_slice(NODE)
        pool = msgspec.structs.replace(s.spec.pool, resource_slice_count=2)
        return msgspec.structs.replace(
            s,
            metadata=msgspec.structs.replace(s.metadata, name=name, uid=name),
            spec=msgspec.structs.replace(s.spec, pool=pool),
        )

    # Two slices of one pool publish the same device: the pool is invalid.
    objects = (claim(owner=POD_UID), device_class(), half("a"), half("b"), resource_slice(NODE2))
    plugin = plugin_of(*objects)
    _, _, _, result = filtered(plugin, pod_with_claim_name(), [worker(), worker(NODE2)])
    assert result.passed.tolist() == [False, True]
    assert result.describe(int(result.codes[0])) == Status(
        U, ("invalid resource pools were encountered",)
    )


def test_taken_devices_follow_the_listers_and_the_allocations_in_flight():
    a, b = claim("a"), claim("b")
    listers = listers_of(allocated(a))
    plugin = DynamicResources(DynamicResourcesArgs().defaulted(), listers)
    taken = plugin.in_flight.allocated_devices
    assert taken() == {"some-driver/worker/instance-1"}
    listers.put(allocated(a, allocation(("req-1", "instance-2"))))  # a new object
    assert taken() == {"some-driver/worker/instance-2"}
    plugin.in_flight.signal(allocated(b, allocation(("req-1", "instance-3"))), "p", NODE)
    assert taken() == {"some-driver/worker/instance-2", "some-driver/worker/instance-3"}
    listers.put(a, deleted=True)
    plugin.in_flight.remove(claim_uid(b), "p")
    assert taken() == frozenset()
