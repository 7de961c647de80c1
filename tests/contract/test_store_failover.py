"""What the informer uses to find a failover that lost writes, on both backends: the
store's identity, and invalidating a live store so every client reloads."""

from __future__ import annotations

import pytest

from services.common.store import ClusterStore, Epoch, StoreLost
from tests.contract.store_support import Clients, node_entry, pod_entry, res


async def test_the_identity_is_the_same_for_every_client_and_stable(clients: Clients) -> None:
    one, two = clients.open(), clients.open()
    first = await one.identity()
    await one.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    assert first
    assert await one.identity() == first
    assert await two.identity() == first


async def test_invalidate_makes_the_store_building_until_a_final_restore(
    clients: Clients,
) -> None:
    writer, reader = clients.open(), clients.open()
    await writer.apply([node_entry(1, "n1", cpu=1000, pods=10), pod_entry(2, "a", None)])
    token = (await reader.attach()).token

    assert await writer.invalidate(token)

    assert await writer.epoch() == Epoch("building", seq=2)
    with pytest.raises(StoreLost, match="expected epoch"):
        await reader.assume([res("a", "n1")], 0.0)
    await writer.restore([pod_entry(3, "b", None)], final=True)  # continues at seq 2
    again = await reader.attach()
    assert (again.state, again.seq) == ("live", 3)
    assert again.token != token
    assert set(await reader.objects("pod")) == {"default/a", "default/b"}


@pytest.mark.parametrize("state", ["another token", "blank", "building"])
async def test_invalidate_changes_nothing_unless_live_with_that_token(
    store: ClusterStore, state: str
) -> None:
    if state != "blank":
        await store.apply([node_entry(1, "n1", cpu=1000, pods=10)])
    token = "0123456789abcdef"
    if state == "building":
        assert await store.invalidate((await store.epoch()).token)
    before = await store.epoch()

    assert not await store.invalidate(token)
    assert await store.epoch() == before
