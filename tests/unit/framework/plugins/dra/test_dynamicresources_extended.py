"""DynamicResources with extended resources backed by DRA (DRAExtendedResource), ported
from the extended-resource cases of upstream's TestPlugin (dynamicresources_test.go;
the case names are upstream's), plus ksched's own (``ksched-`` ids). Each case runs the
points in order as the scheduler and the binder do: PreFilter, Filter on every node,
PostFilter when no node fits, else Reserve on the first node that fits and PreBind in a
binder's CycleState restored from the binding state."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import msgspec
import numpy as np
import pytest

from contracts.k8s import DeviceClass, Node, Pod, ResourceClaim, ResourceSlice
from services.framework.api.effects import ClaimStatusEffect, PodStatusEffect
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.dynamicresources import DynamicResources, DynamicResourcesArgs
from services.framework.plugins.dynamicresources.extended import claim_name, new_claim
from tests.builders import make_pod
from tests.unit.framework.helpers import snapshot_of
from tests.unit.framework.plugins.dra.extended_support import (
    EXTENDED,
    EXTENDED2,
    IMPLICIT,
    created,
    extended_class,
    extended_pod,
    found,
    in_memory,
    patch,
    request,
    results,
    worker_with,
)
from tests.unit.framework.plugins.dra.plugin_support import (
    CLAIM_NAME,
    CLASS,
    NODE,
    NODE2,
    POD_NAME,
    POD_UID,
    claim,
    device_class,
    first_available,
    listers_of,
    pod_with_claim_name,
    resource_slice,
    worker,
)

NOW = 1_800_000_000.0
U = Code.UnschedulableAndUnresolvable
UNCHECKED = Status(Code.Error, ("not checked",))
"""``postfilter`` of a case whose PostFilter outcome this table does not pin."""


def status(code: Code, message: str = "") -> Status:
    return Status(code, (message,) if message else ())


@dataclass(frozen=True)
class Want:
    prefilter: Status | None = None
    filter: dict[str, Status] = field(default_factory=dict)
    """Node → its rejection (others pass)."""
    postfilter: Status | None = None
    in_flight: bool = False
    """Reserve puts the pod's extended-resource claim in flight."""
    reserved_devices: tuple[str, ...] = ()
    prebind: tuple[object, ...] = ()
    """PreBind's effects, in order."""
    prebind_status: Status | None = None
    unreserve_before_prebind: bool = False


@dataclass(frozen=True)
class Case:
    pod: Pod
    claims: tuple[ResourceClaim, ...] = ()
    classes: tuple[DeviceClass, ...] = ()
    slices: tuple[ResourceSlice, ...] = ()
    nodes: tuple[Node, ...] = (worker(),)
    want: Want = Want()


POD = extended_pod({EXTENDED: "1"})
"""``podWithExtendedResourceName``."""
POD2 = extended_pod({EXTENDED: "1", EXTENDED2: "1"})
"""``podWithExtendedResourceName2``."""
POD_IMPLICIT = extended_pod({IMPLICIT: "1", EXTENDED: "2"})
"""``podWithImplicitExtendedResourceName``."""
POD_IMPLICIT_TWO = extended_pod({IMPLICIT: "1"}, {EXTENDED: "2"})
"""``podWithImplicitExtendedResourceNameTwoContainers``."""
SLICE = resource_slice(NODE)
LARGE_SLICE = resource_slice(NODE, "some-driver", *(f"instance-{i}" for i in range(1, 5)))
R0 = request("container-0-request-0")
CLAIM = in_memory(POD, R0)
CLAIM2 = in_memory(POD2, request("container-0-request-1", CLASS + "2"))
CLAIM_IMPLICIT = in_memory(POD_IMPLICIT, R0, request("container-0-request-1", count=2))
CLAIM_IMPLICIT_TWO = in_memory(POD_IMPLICIT_TWO, R0, request("container-1-request-0", count=2))
GPU = "some-driver/worker/instance-1"

CASES = [
    pytest.param(
        Case(make_pod("foo", "default")),
        Want(
            prefilter=status(Code.Skip),
            postfilter=status(Code.Unschedulable, "no new claims to deallocate"),
        ),
        id="empty-with-extended-resources-enabled",
    ),
    pytest.param(
        Case(POD, nodes=(worker_with({EXTENDED: "1"}),), classes=(extended_class(),)),
        Want(),
        id="extended-resource-name-with-node-resource",
    ),
    pytest.param(
        Case(
            POD2,
            nodes=(worker_with({EXTENDED: "1"}),),
            classes=(extended_class(), extended_class(CLASS + "2", EXTENDED2)),
            slices=(SLICE,),
        ),
        Want(
            in_flight=True,
            reserved_devices=(GPU,),
            prebind=(
                ClaimStatusEffect(
                    created(CLAIM2, results(("container-0-request-1", "instance-1")))
                ),
                PodStatusEffect(patch(CLAIM2, ("con0", EXTENDED2, "container-0-request-1"))),
            ),
        ),
        id="extended-resource-one-device-plugin-one-dra",
    ),
    pytest.param(
        Case(
            POD,
            nodes=(worker_with({EXTENDED: "0"}),),
            classes=(extended_class(),),
            slices=(SLICE,),
        ),
        Want(
            in_flight=True,
            reserved_devices=(GPU,),
            prebind=(
                ClaimStatusEffect(created(CLAIM, results(("container-0-request-0", "instance-1")))),
                PodStatusEffect(patch(CLAIM, ("con0", EXTENDED, "container-0-request-0"))),
            ),
        ),
        id="extended-resource-name-with-zero-allocatable",
    ),
    pytest.param(
        Case(
            POD,
            nodes=(worker_with({EXTENDED: "0"}),),
            classes=(device_class(),),
            slices=(SLICE,),
        ),
        Want(
            prefilter=status(Code.Skip),
            postfilter=status(Code.Unschedulable, "no new claims to deallocate"),
        ),
        id="non-DRA-extended-resource-name-with-zero-allocatable",
    ),
    pytest.param(
        Case(POD, classes=(extended_class(),)),
        Want(
            filter={NODE: status(U, "cannot allocate all claims")},
            postfilter=status(Code.Unschedulable, "still not schedulable"),
        ),
        id="extended-resource-name-no-resource",
    ),
    pytest.param(
        Case(POD, classes=(extended_class(),), slices=(SLICE,)),
        Want(
            in_flight=True,
            reserved_devices=(GPU,),
            prebind=(
                ClaimStatusEffect(created(CLAIM, results(("container-0-request-0", "instance-1")))),
                PodStatusEffect(patch(CLAIM, ("con0", EXTENDED, "container-0-request-0"))),
            ),
        ),
        id="extended-resource-name-with-resources",
    ),
    pytest.param(
        Case(POD_IMPLICIT, classes=(extended_class(),), slices=(LARGE_SLICE,)),
        Want(
            in_flight=True,
            reserved_devices=tuple(f"some-driver/worker/instance-{i}" for i in (1, 2, 3)),
            prebind=(
                ClaimStatusEffect(
                    created(
                        CLAIM_IMPLICIT,
                        results(
                            ("container-0-request-0", "instance-1"),
                            ("container-0-request-1", "instance-2"),
                            ("container-0-request-1", "instance-3"),
                        ),
                    )
                ),
                PodStatusEffect(
                    patch(
                        CLAIM_IMPLICIT,
                        ("con0", IMPLICIT, "container-0-request-0"),
                        ("con0", EXTENDED, "container-0-request-1"),
                    )
                ),
            ),
        ),
        id="implicit-extended-resource-name-with-resources",
    ),
    pytest.param(
        Case(POD_IMPLICIT_TWO, classes=(extended_class(),), slices=(LARGE_SLICE,)),
        Want(
            in_flight=True,
            reserved_devices=tuple(f"some-driver/worker/instance-{i}" for i in (1, 2, 3)),
            prebind=(
                ClaimStatusEffect(
                    created(
                        CLAIM_IMPLICIT_TWO,
                        results(
                            ("container-0-request-0", "instance-1"),
                            ("container-1-request-0", "instance-2"),
                            ("container-1-request-0", "instance-3"),
                        ),
                    )
                ),
                PodStatusEffect(
                    patch(
                        CLAIM_IMPLICIT_TWO,
                        ("con0", IMPLICIT, "container-0-request-0"),
                        ("con1", EXTENDED, "container-1-request-0"),
                    )
                ),
            ),
        ),
        id="implicit-extended-resource-name-two-containers-with-resources",
    ),
    pytest.param(
        # Upstream's PostFilter then deletes the claim ("deletion of ResourceClaim
        # completed"); ksched's PostFilter writes nothing (the README's departures).
        Case(POD, claims=(found(POD, R0),), classes=(extended_class(),), slices=(SLICE,)),
        Want(
            filter={NODE: status(U, "cannot schedule extended resource claim")},
            postfilter=UNCHECKED,
        ),
        id="extended-resource-name-with-resources-has-claim",
    ),
    pytest.param(
        Case(
            POD,
            claims=(found(POD, R0, node=NODE2),),
            classes=(extended_class(),),
            slices=(SLICE,),
        ),
        Want(
            filter={NODE: status(U, "cannot schedule extended resource claim")},
            postfilter=UNCHECKED,
        ),
        id="extended-resource-name-with-resources-delete-claim",
    ),
    pytest.param(
        Case(POD, classes=(extended_class(),), slices=(SLICE,)),
        Want(in_flight=True, reserved_devices=(GPU,), unreserve_before_prebind=True),
        id="extended-resource-name-skip-bind",
    ),
    # ksched's own.
    pytest.param(
        Case(
            extended_pod({EXTENDED: "1", "example.com/not-backed": "1"}),
            classes=(extended_class(),),
            slices=(SLICE,),
        ),
        Want(
            filter={NODE: status(U, "cannot fit resource")},
            postfilter=status(Code.Unschedulable, "still not schedulable"),
        ),
        id="ksched-resource-neither-on-the-node-nor-backed-by-dra",
    ),
    pytest.param(
        Case(
            extended_pod({EXTENDED: "1"}),
            nodes=(worker(), worker_with({EXTENDED: "2"}, NODE2)),
            classes=(extended_class(),),
            slices=(resource_slice(NODE2),),
        ),
        Want(filter={NODE: status(U, "cannot allocate all claims")}),
        id="ksched-device-plugin-node-needs-no-device",
    ),
]


def new_plugin(case: Case) -> DynamicResources:
    return DynamicResources(
        DynamicResourcesArgs().defaulted(),
        listers_of(*case.claims, *case.classes, *case.slices),
        now=lambda: NOW,
    )


def run(case: Case, want: Want) -> None:
    plugin = new_plugin(case)
    nodes = snapshot_of(case.nodes).snapshot()
    info = PodInfo.of(case.pod)
    state = CycleState()
    _, got = plugin.pre_filter(state, info, nodes)
    assert got == (want.prefilter or Status())
    if got.is_rejected() or got.is_skip():
        assert plugin.post_filter(state, info, None)[1] == want.postfilter  # type: ignore[arg-type]
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
        if want.postfilter is not UNCHECKED:
            assert plugin.post_filter(state, info, None)[1] == want.postfilter  # type: ignore[arg-type]
        return
    assert want.postfilter is None
    node = passing[0]
    assert plugin.reserve(state, info, node) == Status()
    assert plugin.in_flight.has(new_claim(case.pod).metadata.uid) is want.in_flight
    assert tuple(state.reserved_devices) == want.reserved_devices
    if want.unreserve_before_prebind:
        plugin.unreserve(state, info, node)
        assert len(plugin.in_flight) == 0
        assert not state.reserved_devices
        return
    binder = CycleState()
    handed_on = plugin.binding_state(state)
    if handed_on is not None:
        plugin.restore_binding_state(binder, handed_on)
    reference = PodInfo.of(make_pod(POD_NAME, "default", uid=POD_UID))
    got = asyncio.run(plugin.pre_bind(binder, reference, node))
    assert got == (want.prebind_status or Status())
    assert binder.effects == list(want.prebind)


@pytest.mark.parametrize(("case", "want"), CASES)
def test_plugin(case: Case, want: Want) -> None:
    run(case, want)


def test_a_user_claim_and_the_extended_resource_claim_are_both_published() -> None:
    """The pod's own claim comes first, its extended-resource claim last (upstream's
    claim store), allocated together on the node."""
    pod = pod_with_claim_name()
    pod = pod.__class__(
        metadata=pod.metadata,
        spec=extended_pod({EXTENDED: "1"}).spec.__class__(
            containers=extended_pod({EXTENDED: "1"}).spec.containers,
            resource_claims=pod.spec.resource_claims,
        ),
    )
    two = resource_slice(NODE, "some-driver", "instance-1", "instance-2")
    user = claim(CLAIM_NAME)
    case = Case(pod, claims=(user,), classes=(extended_class(),), slices=(two,))
    plugin = new_plugin(case)
    nodes = snapshot_of(case.nodes).snapshot()
    info, state = PodInfo.of(pod), CycleState()
    assert plugin.pre_filter(state, info, nodes)[1] == Status()
    assert plugin.filter_all(state, info, nodes).passed.all()
    assert plugin.reserve(state, info, NODE) == Status()
    binder = CycleState()
    handed_on = plugin.binding_state(state)
    assert handed_on is not None
    plugin.restore_binding_state(binder, handed_on)
    assert asyncio.run(plugin.pre_bind(binder, info, NODE)) == Status()
    kinds = [type(e).__name__ for e in binder.effects]
    assert kinds == ["ClaimStatusEffect", "ClaimStatusEffect", "PodStatusEffect"]
    first, second = (e.claim for e in binder.effects[:2])  # type: ignore[union-attr]
    assert first.metadata.name == CLAIM_NAME
    assert second.metadata.name == claim_name(pod)
    devices = {r.device for c in (first, second) for r in c.status.allocation.devices.results}
    assert devices == {"instance-1", "instance-2"}


def test_empty_request_mappings_fail_prebind_with_upstreams_message() -> None:
    """The resource asked for by the pod's overhead alone: no container maps to the
    claim's requests, and PreBind refuses to write the pod's status, as upstream."""
    pod = make_pod(POD_NAME, "default", uid=POD_UID, overhead={EXTENDED: "1"})
    case = Case(pod, classes=(extended_class(),), slices=(SLICE,))
    plugin = new_plugin(case)
    nodes = snapshot_of(case.nodes).snapshot()
    info, state = PodInfo.of(pod), CycleState()
    assert plugin.pre_filter(state, info, nodes)[1] == Status()
    assert plugin.filter_all(state, info, nodes).passed.all()
    assert plugin.reserve(state, info, NODE) == Status()
    binder = CycleState()
    plugin.restore_binding_state(binder, plugin.binding_state(state) or b"")
    assert asyncio.run(plugin.pre_bind(binder, info, NODE)) == Status(
        Code.Error,
        (
            "nil or empty request mappings, no update of pod default/my-pod "
            "ExtendedResourceClaimStatus",
        ),
    )


def test_the_claim_name_is_generated_from_the_pod() -> None:
    """``<pod>-extended-resources-`` cut at 58 characters, then 5 characters of the API
    server's alphabet drawn from the pod's uid: the same for every attempt."""
    name = claim_name(POD)
    assert name.startswith("my-pod-extended-resources-")
    assert len(name) == len("my-pod-extended-resources-") + 5
    assert name == claim_name(POD)
    assert name != claim_name(make_pod(POD_NAME, "default", uid="another"))
    long = make_pod("p" * 60, "default")
    assert len(claim_name(long)) == 58 + 5
    assert claim_name(long).startswith("p" * 58)


def test_scores_where_the_node_needs_no_extended_resource_claim() -> None:
    """Score pairs Filter's allocations with the claims they are for: on a node that
    offers the extended resource itself, the pod's own claims only."""
    own = claim(CLAIM_NAME, first_available("req-1", ("subreq-1", CLASS, 1)))
    base = pod_with_claim_name()
    pod = msgspec.structs.replace(
        base,
        spec=msgspec.structs.replace(
            base.spec, containers=extended_pod({EXTENDED: "1"}).spec.containers
        ),
    )
    case = Case(
        pod,
        claims=(own,),
        classes=(extended_class(),),
        slices=(
            resource_slice(NODE, "some-driver", "instance-1", "instance-2"),
            resource_slice(NODE2),
        ),
        nodes=(worker(), worker_with({EXTENDED: "1"}, NODE2)),
    )
    plugin = new_plugin(case)
    nodes = snapshot_of(case.nodes).snapshot()
    info, state = PodInfo.of(pod), CycleState()
    assert plugin.pre_filter(state, info, nodes)[1] == Status()
    result = plugin.filter_all(state, info, nodes)
    assert result.passed.all()
    rows = np.flatnonzero(result.passed)
    assert plugin.pre_score(state, info, nodes, rows) == Status()
    assert plugin.score_all(state, info, nodes, rows).tolist() == [8, 8]


def test_explain_shows_the_extended_resource_claims_device() -> None:
    case = Case(POD, classes=(extended_class(),), slices=(SLICE,))
    plugin = new_plugin(case)
    nodes = snapshot_of(case.nodes).snapshot()
    info, state = PodInfo.of(POD), CycleState()
    plugin.pre_filter(state, info, nodes)
    assert plugin.filter_all(state, info, nodes).passed.all()
    device = {
        "request": "container-0-request-0",
        "driver": "some-driver",
        "pool": NODE,
        "device": "instance-1",
    }
    want = {"claim": claim_name(POD), "allocated": True, "devices": [device]}
    assert plugin.explain_node(state, info, NODE) == {"claims": {"<extended-resources>": want}}
