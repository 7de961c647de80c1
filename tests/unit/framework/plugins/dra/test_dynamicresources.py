"""DynamicResources through every extension point, ported from upstream's TestPlugin
table (dynamicresources_test.go; the case names are upstream's). Each case runs the
points in order as the scheduler and the binder do: PreEnqueue, PreFilter, Filter on
every node, PostFilter when no node fits, else Reserve on the first node that fits and
PreBind in a binder's CycleState restored from the binding state.

The allocator is the real structured allocator (:mod:`...dynamicresources.allocator`)."""

from __future__ import annotations

import asyncio

import msgspec
import numpy as np
import pytest

from contracts.k8s.resource import (
    FINALIZER,
)
from services.common import features
from services.framework.api.effects import ClaimStatusEffect
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status, StatusError
from services.framework.api.types import PodInfo
from services.framework.plugins.dynamicresources import DynamicResources, DynamicResourcesArgs
from tests.builders import make_pod
from tests.unit.framework.helpers import snapshot_of
from tests.unit.framework.plugins.dra.dynamicresources_cases import (
    ALLOCATED,
    CEL_RUNTIME_ERROR,
    GOOD_TOPOLOGY,
    IN_USE,
    MORE,
    NOW,
    OTHER,
    OTHER_ALLOCATED,
    PENDING,
    WITH_PRIORITIZED_LIST,
    WRONG_TOPOLOGY,
    Case,
    U,
    Want,
    deallocated_update,
    reserved_update,
    status,
    with_class,
)
from tests.unit.framework.plugins.dra.plugin_support import (
    ALLOCATION,
    CLAIM_NAME,
    CLASS,
    NAMESPACE,
    NODE,
    NODE2,
    POD_NAME,
    POD_UID,
    admin_access,
    allocation,
    broken_cel,
    claim,
    device_class,
    listers_of,
    pod_with_claim_name,
    pod_with_claim_template,
    resource_slice,
    worker,
)

CASES = [
    pytest.param(
        Case(
            make_pod("foo", "default"),
            want=Want(
                prefilter=status(Code.Skip),
                postfilter=status(Code.Unschedulable, "no new claims to deallocate"),
            ),
        ),
        id="empty",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (ALLOCATED, OTHER),
            want=Want(prebind=(reserved_update(ALLOCATED),)),
        ),
        id="claim-reference",
    ),
    pytest.param(
        Case(
            pod_with_claim_template(in_status=True),
            (ALLOCATED, OTHER),
            want=Want(prebind=(reserved_update(ALLOCATED),)),
        ),
        id="claim-template",
    ),
    pytest.param(
        Case(
            pod_with_claim_template(in_status=False),
            (ALLOCATED, OTHER),
            want=Want(preenqueue=status(U, 'pod "default/my-pod": ResourceClaim not created yet')),
        ),
        id="missing-claim",
    ),
    pytest.param(
        Case(
            pod_with_claim_template(in_status=True),
            (claim(owner=POD_UID, allocation=ALLOCATION, deleted=True),),
            want=Want(preenqueue=status(U, 'resourceclaim "my-pod-my-resource" is being deleted')),
        ),
        id="deleted-claim",
    ),
    pytest.param(
        Case(
            pod_with_claim_template(in_status=True),
            (claim(owner=POD_UID + "123", allocation=ALLOCATION),),
            want=Want(
                preenqueue=status(
                    U,
                    "ResourceClaim default/my-pod-my-resource was not created for pod "
                    "default/my-pod (pod is not owner)",
                )
            ),
        ),
        id="wrong-claim",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING,),
            (device_class(),),
            want=Want(
                filter={NODE: status(U, "cannot allocate all claims")},
                postfilter=status(Code.Unschedulable, "still not schedulable"),
            ),
        ),
        id="no-resources",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING,),
            (device_class(),),
            (resource_slice(NODE),),
            want=Want(
                in_flight=(CLAIM_NAME,),
                reserved_devices=("some-driver/worker/instance-1",),
                prebind=(reserved_update(PENDING, ALLOCATION),),
            ),
        ),
        id="with-resources",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (claim(owner=POD_UID, finalizers=[FINALIZER]),),
            (device_class(),),
            (resource_slice(NODE),),
            want=Want(
                in_flight=(CLAIM_NAME,),
                reserved_devices=("some-driver/worker/instance-1",),
                prebind=(
                    msgspec.structs.replace(
                        reserved_update(PENDING, ALLOCATION),
                        metadata=msgspec.structs.replace(PENDING.metadata, finalizers=[FINALIZER]),
                    ),
                ),
            ),
        ),
        id="with-resources-has-finalizer",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING,),
            (device_class(),),
            (resource_slice(NODE),),
            want=Want(
                in_flight=(CLAIM_NAME,),
                reserved_devices=("some-driver/worker/instance-1",),
                unreserve_before_prebind=True,
            ),
        ),
        id="skip-bind",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING, OTHER_ALLOCATED),
            (device_class(),),
            (resource_slice(NODE),),
            want=Want(
                filter={NODE: status(U, "cannot allocate all claims")},
                postfilter=status(Code.Unschedulable, "still not schedulable"),
            ),
        ),
        id="exhausted-resources",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (admin_access(PENDING), OTHER_ALLOCATED),
            (device_class(),),
            (resource_slice(NODE),),
            want=Want(
                in_flight=(CLAIM_NAME,),
                prebind=(
                    reserved_update(
                        admin_access(PENDING), admin_access(ALLOCATED).status.allocation
                    ),
                ),
            ),
        ),
        id="request-admin-access-with-DRAAdminAccess-featuregate",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING, admin_access(OTHER_ALLOCATED)),
            (device_class(),),
            (resource_slice(NODE),),
            want=Want(
                in_flight=(CLAIM_NAME,),
                reserved_devices=("some-driver/worker/instance-1",),
                prebind=(reserved_update(PENDING, ALLOCATION),),
            ),
        ),
        id="structured-ignore-allocated-admin-access",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (broken_cel(PENDING),),
            (device_class(),),
            (resource_slice(NODE),),
            want=Want(filter_error=CEL_RUNTIME_ERROR),
        ),
        id="claim-parameters-CEL-runtime-error",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (broken_cel(PENDING),),
            (device_class(),),
            (resource_slice(NODE), resource_slice(NODE2)),
            nodes=(worker(), worker(NODE2)),
            want=Want(filter_error=CEL_RUNTIME_ERROR),
        ),
        id="CEL-runtime-error-for-one-of-two-nodes",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (PENDING,),
            want=Want(
                prefilter=status(U, f"request req-1: device class {CLASS} does not exist"),
                postfilter=status(Code.Unschedulable, "no new claims to deallocate"),
            ),
        ),
        id="missing-class",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (WRONG_TOPOLOGY,),
            want=Want(
                filter={NODE: status(U, "resourceclaim not available on the node")},
                postfilter=status(Code.Unschedulable, "deallocation of ResourceClaim completed"),
                deallocated=(deallocated_update(WRONG_TOPOLOGY),),
            ),
        ),
        id="wrong-topology",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (GOOD_TOPOLOGY,),
            want=Want(prebind=(reserved_update(GOOD_TOPOLOGY),)),
        ),
        id="good-topology",
    ),
    pytest.param(Case(pod_with_claim_name(), (IN_USE,)), id="reserved-okay"),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (with_class(claim(), "does-not-exist"),),
            want=Want(
                prefilter=status(U, "request req-1: device class does-not-exist does not exist"),
                postfilter=status(Code.Unschedulable, "no new claims to deallocate"),
            ),
        ),
        id="claim-with-request-with-unknown-device-class",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (with_class(WITH_PRIORITIZED_LIST, "does-not-exist"),),
            want=Want(
                prefilter=status(
                    U, "request req-1/subreq-1: device class does-not-exist does not exist"
                ),
                postfilter=status(Code.Unschedulable, "no new claims to deallocate"),
            ),
        ),
        id="claim-with-prioritized-list-unknown-device-class",
    ),
    pytest.param(
        Case(
            pod_with_claim_name(),
            (WITH_PRIORITIZED_LIST,),
            (device_class(),),
            (resource_slice(NODE),),
            want=Want(
                in_flight=(CLAIM_NAME,),
                reserved_devices=("some-driver/worker/instance-1",),
                prebind=(
                    reserved_update(
                        WITH_PRIORITIZED_LIST, allocation(("req-1/subreq-1", "instance-1"))
                    ),
                ),
            ),
        ),
        id="claim-with-prioritized-list",
    ),
    *MORE,
]


def new_plugin(*objects: object, args: DynamicResourcesArgs | None = None) -> DynamicResources:
    return DynamicResources(
        (args or DynamicResourcesArgs()).defaulted(),
        listers_of(*objects),
        now=lambda: NOW,
    )


@pytest.mark.parametrize("case", CASES)
def test_plugin(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    if case.gates:
        monkeypatch.setattr(features, "_current", features.FeatureGates(dict(case.gates)))
    plugin = new_plugin(*case.claims, *case.classes, *case.slices, args=case.args)
    nodes = snapshot_of(case.nodes).snapshot()
    info = PodInfo.of(case.pod)
    want = case.want

    assert plugin.pre_enqueue(info) == (want.preenqueue or Status())
    if want.preenqueue is not None:
        return

    state = CycleState()
    _, got = plugin.pre_filter(state, info, nodes)
    assert got == (want.prefilter or Status())
    if got.is_skip():
        assert plugin.filter_all(state, info, nodes).passed.all()
    if got.is_rejected() or got.is_skip():
        assert plugin.post_filter(state, info, None)[1] == want.postfilter  # type: ignore[arg-type]
        assert state.effects == [ClaimStatusEffect(c) for c in want.deallocated]
        return

    if want.filter_error is not None:
        with pytest.raises(StatusError) as raised:
            plugin.filter_all(state, info, nodes)
        assert raised.value.status == Status(Code.Error, (want.filter_error,))
        return
    result = plugin.filter_all(state, info, nodes)
    verdicts = {
        nodes.names[row]: result.describe(int(result.codes[row]))
        for row in range(nodes.num_nodes)
        if not result.passed[row]
    }
    assert verdicts == want.filter
    passing = [nodes.names[row] for row in range(nodes.num_nodes) if result.passed[row]]
    if not passing:
        assert plugin.post_filter(state, info, None)[1] == want.postfilter  # type: ignore[arg-type]
        assert state.effects == [ClaimStatusEffect(c) for c in want.deallocated]
        return
    assert want.postfilter is None

    if len(passing) > 1:
        rows = np.flatnonzero(result.passed)
        assert plugin.pre_score(state, info, nodes, rows).is_skip() == (want.scores is None)
        if want.scores is not None:
            raw = plugin.score_all(state, info, nodes, rows)
            normalized = plugin.normalize_score(state, info, raw)
            got_scores = {
                nodes.names[row]: (int(a), int(b))
                for row, a, b in zip(rows.tolist(), raw, normalized, strict=True)
            }
            assert got_scores == want.scores
    node = passing[0]
    assert plugin.reserve(state, info, node) == Status()
    in_flight = sorted(c.metadata.name for c in case.claims if plugin.in_flight.has(c.metadata.uid))
    assert tuple(in_flight) == want.in_flight
    assert tuple(state.reserved_devices) == want.reserved_devices
    if want.unreserve_before_prebind:
        plugin.unreserve(state, info, node)
        assert len(plugin.in_flight) == 0
        return

    binder = CycleState()
    handed_on = plugin.binding_state(state)
    if handed_on is not None:
        plugin.restore_binding_state(binder, handed_on)
    reference = PodInfo.of(make_pod(POD_NAME, NAMESPACE, uid=POD_UID))
    assert asyncio.run(plugin.pre_bind(binder, reference, node)) == Status()
    assert binder.effects == [ClaimStatusEffect(c) for c in want.prebind]
