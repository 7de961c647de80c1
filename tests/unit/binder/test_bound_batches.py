"""The binder hands the informer each batch's Bindings in one BoundBatch on
``ksched.bound`` (users still get one Binding per pod on ``ksched.decisions``), and the
informer records them (in-memory bus, store and event log)."""

from __future__ import annotations

import msgspec
import pytest

from contracts import topology
from contracts.k8s import Binding, Pod
from contracts.messages import BoundBatch
from tests.builders import make_pod
from tests.unit.binder.support import added, assume_on, bind_batch, informer_and_binder
from tests.unit.framework.plugins.volumes.helpers import host


@pytest.mark.parametrize("pods", [1, 3])
async def test_one_bound_batch_per_binder_batch_and_the_informer_records_it(pods: int) -> None:
    async with informer_and_binder() as (bus, store):
        web = [make_pod(f"web-{i}") for i in range(pods)]
        await bus.publish([added("node", host("n1")), *(added("pod", p) for p in web)])
        await bus.wait_idle()
        await assume_on(store, web, "n1")
        bus.batches.clear()
        await bus.publish([bind_batch(web, "n1")])
        await bus.wait_idle()
        stored = await store.objects("pod")
    decisions = [
        (msgspec.json.decode(m.body, type=Binding), m.headers)
        for m in bus.published
        if m.exchange == topology.DECISIONS.name and m.routing_key.startswith("binding.")
    ]
    [batch] = [
        msgspec.json.decode(m.body, type=BoundBatch)
        for m in bus.published
        if m.exchange == topology.BOUND.name
    ]
    assert [(b.binding, b.trace) for b in batch.bindings] == decisions  # same, same order
    assert [b.metadata.name for b, _ in decisions] == [p.metadata.name for p in web]
    nodes = {k: msgspec.json.decode(v, type=Pod).spec.node_name for k, v in stored.items()}
    assert nodes == {f"default/{p.metadata.name}": "n1" for p in web}
