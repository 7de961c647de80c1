"""The ClusterStore's marker (its epoch), on both backends: a store that comes back empty
is not an empty cluster. Every guarded call of a client that expects a live store fails
after a loss, and the informer rebuilds the store from the log under a new epoch."""

from __future__ import annotations

from typing import Any

import pytest

from services.common.store import ClusterStore, Epoch, Nomination, Preemption, StoreLost
from tests.contract.store_support import NOW, Clients, claim, node_entry, pod_entry, res, snapshot

GUARDED_CALLS: dict[str, Any] = {
    "apply": lambda s: s.apply([pod_entry(3, "c", None)]),
    "objects": lambda s: s.objects("node"),
    "objects_at": lambda s: s.objects_at(["node", "pod"]),
    "node_usage": lambda s: s.node_usage(),
    "allocatable": lambda s: s.allocatable(["n1"]),
    "assume": lambda s: s.assume([res("a", "n1")], NOW),
    "begin_bind": lambda s: s.begin_bind([claim("a", "n1")], NOW),
    "forget": lambda s: s.forget([claim("a", "n1")]),
    "assumed": lambda s: s.assumed(),
    "set_leases": lambda s: s.set_leases({"uid-a": 2}),
    "leases": lambda s: s.leases(),
    "drop_leases": lambda s: s.drop_leases(["uid-a"]),
    "set_nominations": lambda s: s.set_nominations({"uid-a": Nomination("n1", 1)}),
    "clear_nominations": lambda s: s.clear_nominations(["uid-a"]),
    "nominations": lambda s: s.nominations(),
    "domain_versions": lambda s: s.domain_versions(),
    "devices": lambda s: s.devices(),
    "preemptions": lambda s: s.preemptions(),
    "set_preemptions": lambda s: s.set_preemptions({"uid-a": Preemption(("uid-b",), NOW)}),
    "drop_preemptions": lambda s: s.drop_preemptions(["uid-a"]),
    "release_version": lambda s: s.release_version(),
    "release_waiting": lambda s: s.release_waiting([("uid-a", "P", "m")], 0, NOW),
}


async def test_first_apply_makes_a_fresh_store_live(store: ClusterStore) -> None:
    assert (await store.epoch()).state == "blank"
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", "n1", cpu=100)])
    epoch = await store.epoch()
    assert (epoch.state, epoch.seq) == ("live", 2)
    assert epoch.token
    assert await store.attach() == epoch


async def test_objects_at_reads_the_kinds_and_their_seq_at_one_moment(
    store: ClusterStore,
) -> None:
    assert await store.objects_at(["node", "pod"]) == (0, {"node": {}, "pod": {}})
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", "n1", cpu=100)])
    await store.apply([pod_entry(3, "b", None), node_entry(4, "n2", cpu=500, pods=5)])
    seq, read = await store.objects_at(["pod", "node", "service"])
    assert seq == (await store.epoch()).seq == 4
    assert read == {
        "pod": await store.objects("pod"),
        "node": await store.objects("node"),
        "service": {},
    }
    assert sorted(read["node"]) == ["n1", "n2"] and len(read["pod"]) == 2


@pytest.mark.parametrize("call", sorted(GUARDED_CALLS))
async def test_every_guarded_call_of_an_attached_client_raises_after_a_loss(
    clients: Clients, call: str
) -> None:
    writer = clients.open()
    await writer.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", None)])
    await writer.set_leases({"uid-a": 1})
    reader = clients.open()
    await reader.attach()
    await clients.lose()

    with pytest.raises(StoreLost, match="expected epoch"):
        await GUARDED_CALLS[call](reader)
    assert await reader.epoch() == Epoch("blank")  # nothing was written on top of nothing


async def test_apply_on_top_of_nothing_raises_even_for_a_new_client(clients: Clients) -> None:
    """An informer restarted after the loss must not apply the log's tail onto nothing."""
    await clients.open().apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", None)])
    await clients.lose()
    fresh = clients.open()
    with pytest.raises(StoreLost, match="applying seq 3 would leave a gap"):
        await fresh.apply([pod_entry(3, "b", None)])
    assert await fresh.epoch() == Epoch("blank")


async def test_apply_with_a_gap_raises_on_a_live_store(store: ClusterStore) -> None:
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    with pytest.raises(StoreLost, match="is at seq 1: applying seq 3"):
        await store.apply([pod_entry(2, "a", None), pod_entry(3, "b", None)][1:])
    await store.apply(
        [pod_entry(1, "x", None), pod_entry(2, "a", None)]
    )  # seq 1 skipped, 2 continues
    assert await store.applied_seq() == 2


async def test_restore_rebuilds_in_chunks_and_moves_to_a_new_epoch(clients: Clients) -> None:
    log = [
        node_entry(1, "n1", cpu=1000, pods=10),
        pod_entry(2, "a", "n1", cpu=100),
        pod_entry(3, "b", None),
    ]
    informer, scheduler = clients.open(), clients.open()
    await informer.apply(log)
    before = await snapshot(informer)
    old = await scheduler.attach()
    await clients.lose()

    await informer.restore(log[:2], final=False)
    assert await informer.epoch() == Epoch("building", seq=2)
    with pytest.raises(StoreLost, match="being rebuilt"):
        await clients.open().objects("node")  # not even a client that expects nothing
    with pytest.raises(StoreLost):
        await scheduler.assume([res("b", "n1")], NOW)
    await informer.restore(log[2:], final=True)

    rebuilt = await informer.epoch()
    assert (rebuilt.state, rebuilt.seq) == ("live", 3)
    assert rebuilt.token != old.token
    assert await snapshot(informer) == before
    with pytest.raises(StoreLost, match=f"expected epoch {old.token}, found live"):
        await scheduler.objects("node")  # what it held (assumptions, leases) is gone
    assert await scheduler.attach() == rebuilt
    assert set(await scheduler.objects("pod")) == {"default/a", "default/b"}


async def test_restore_refuses_a_live_store_and_a_gap(clients: Clients) -> None:
    store = clients.open()
    await store.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    with pytest.raises(StoreLost, match="is live"):
        await store.restore([pod_entry(2, "a", None)], final=True)
    await clients.lose()
    with pytest.raises(StoreLost, match="applying seq 2 would leave a gap"):
        await store.restore([pod_entry(2, "a", None)], final=False)
    await store.restore([], final=True)  # an empty log: a live, empty store
    assert (await store.epoch()).state == "live"


async def test_restore_from_a_snapshot_starts_a_blank_store_at_its_base(clients: Clients) -> None:
    """A snapshot's entries continue its base (services.common.eventlog.snapshot): the
    store holds what the whole log would have left, at the log's seq, in chunks."""
    log = [
        node_entry(1, "n1", cpu=1000, pods=10),
        pod_entry(2, "a", "n1", cpu=100),
        pod_entry(3, "gone", "n1", cpu=300),
        pod_entry(4, "gone", None, deleted=True),
        pod_entry(5, "b", None),
    ]
    whole = clients.open()
    await whole.apply(log)
    expected = await snapshot(whole)
    await clients.lose()
    # The live objects at seq 5, numbered to end at 5: n1, a, b as 3, 4, 5.
    live = [
        node_entry(3, "n1", cpu=1000, pods=10),
        pod_entry(4, "a", "n1", cpu=100),
        pod_entry(5, "b", None),
    ]
    informer = clients.open()
    await informer.restore(live[:1], final=False, base=2)
    assert await informer.epoch() == Epoch("building", seq=3)
    with pytest.raises(StoreLost, match="not blank"):
        await informer.restore(live[1:], final=False, base=2)
    await informer.restore(live[1:], final=True)
    assert (await informer.epoch()).seq == 5
    assert await snapshot(informer) == expected
    await informer.apply([pod_entry(6, "c", "n1", cpu=200)])  # the log continues it
    assert (await informer.node_usage(["n1"]))["n1"]["cpu"] == 300


async def test_an_empty_snapshot_leaves_the_store_at_its_seq(clients: Clients) -> None:
    store = clients.open()
    with pytest.raises(StoreLost, match="applying seq 9 would leave a gap"):
        await store.restore([pod_entry(9, "a", None)], final=False, base=7)
    assert await store.epoch() == Epoch("blank")  # the refused base was not kept
    await store.restore([], final=True, base=7)
    epoch = await store.epoch()
    assert (epoch.state, epoch.seq) == ("live", 7)


async def test_a_client_that_expects_nothing_sees_a_blank_store_as_empty(
    clients: Clients,
) -> None:
    """The binder never attaches: after a loss it finds no assumption to bind."""
    await clients.open().apply([node_entry(1, "n1", cpu=1000, pods=10)])
    binder = clients.open()
    await clients.lose()
    assert await binder.begin_bind([claim("a", "n1")], NOW) == [False]
    assert await binder.objects("node") == {}
