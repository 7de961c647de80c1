"""An assumption leaves a replica's snapshot when it leaves the store, never on its
deadline alone: the placement versions count it until then (scheduler.domains). A
pod the binder began binding before the deadline stays until its Binding is in the
log; one nobody claimed goes (a grace later: a binder's claim reads its clock a little
before the store runs it), and no binder may claim it any more."""

from __future__ import annotations

from services.common.clock import FakeClock
from services.common.store import BindClaim, MemoryStore
from services.scheduler.cycle import EXPIRY_GRACE
from tests.builders import make_pod
from tests.builders.constraints import zoned_node
from tests.builders.scheduling import batch_scheduler, loaded_cache, schedule_request, store_node


async def test_a_binding_pod_outlives_its_deadline_and_an_unclaimed_one_does_not() -> None:
    store, clock = MemoryStore(), FakeClock()
    n1 = zoned_node("n1")
    await store_node(store, n1)
    pods = [make_pod(name) for name in ("binding", "unclaimed")]
    await store.set_leases({p.metadata.uid or "": 1 for p in pods})
    cache = loaded_cache([n1])
    scheduler, _ = batch_scheduler(cache, store, pods, clock=clock)
    outcome = await scheduler.run([schedule_request(p) for p in pods])
    assert sorted(b.name for b in outcome.binds) == ["binding", "unclaimed"]
    binding, unclaimed = (p.metadata.uid or "" for p in pods)
    assert await store.begin_bind([BindClaim(binding, "n1", 1)], clock.now()) == [True]

    clock.step(31)  # past both deadlines (30 s), within the grace
    await scheduler.expire(clock.now())
    assert (cache.assumed_node(binding), cache.assumed_node(unclaimed)) == ("n1", "n1")
    assert await store.begin_bind([BindClaim(unclaimed, "n1", 1)], clock.now()) == [False]
    assert set(await store.assumed()) == {binding}

    clock.step(EXPIRY_GRACE)  # the Binding is not in the log yet
    await scheduler.expire(clock.now())
    assert (cache.assumed_node(binding), cache.assumed_node(unclaimed)) == ("n1", None)
