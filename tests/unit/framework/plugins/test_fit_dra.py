"""NodeResourcesFit and extended resources backed by DRA (DRAExtendedResource): the
extended-resource cases of upstream's TestEnoughRequests (fit_test.go; the case names
are upstream's) and ksched's columnar details (``ksched-`` names)."""

from __future__ import annotations

import pytest

from contracts.k8s import DeviceClass, ObjectMeta
from contracts.k8s.resource import DeviceClassSpec
from services.common import features
from services.framework.api.events import QueueingHint
from services.framework.api.interface import CycleState
from services.framework.api.listers import Listers
from services.framework.api.types import PodInfo
from services.framework.plugins.noderesources.args import NodeResourcesFitArgs
from services.framework.plugins.noderesources.fit import Fit
from tests.builders import make_node, make_pod
from tests.unit.framework.helpers import snapshot_of

EXTENDED_A = "example.com/aaa"
EXTENDED_B = "example.com/bbb"
EXTENDED_DRA = "extended.resource.dra.io/something"
NODE = {"cpu": "10", "memory": "20", "pods": 32, EXTENDED_A: "5", "hugepages-2Mi": "5"}
"""``makeAllocatableResources(10, 20, 32, 5, 20, 5)``."""


def listers_with_class() -> Listers:
    """``deviceClassWithExtendResourceName``: a class serving ``EXTENDED_DRA``."""
    listers = Listers()
    listers.put(
        DeviceClass(
            metadata=ObjectMeta(name="device-class-name"),
            spec=DeviceClassSpec(extended_resource_name=EXTENDED_DRA),
        )
    )
    return listers


def reasons_on(nodes, pod, listers: Listers | None) -> list[tuple[str, ...]]:
    """Fit's PreFilter and Filter for ``pod``: each node's reasons (empty: it fits)."""
    table = snapshot_of(nodes).snapshot()
    fit = Fit(NodeResourcesFitArgs().defaulted(), listers)
    state, info = CycleState(), PodInfo.of(pod)
    assert fit.pre_filter(state, info, table)[1].is_success()
    result = fit.filter_all(state, info, table)
    return [
        () if result.passed[row] else result.describe(int(result.codes[row])).reasons
        for row in range(table.num_nodes)
    ]


@pytest.mark.parametrize(
    ("requests", "enabled", "reasons"),
    [
        pytest.param({EXTENDED_A: "1"}, True, (), id="extended resource backed by device plugin"),
        pytest.param(
            {"cpu": "1m", "memory": "1", EXTENDED_DRA: "1"},
            True,
            (),
            id="extended resource backed by DRA",
        ),
        pytest.param(
            {"cpu": "1m", "memory": "1", EXTENDED_DRA: "1"},
            False,
            (f"Insufficient {EXTENDED_DRA}",),
            id="extended resource backed by DRA not enabled",
        ),
        pytest.param(
            {"cpu": "1m", "memory": "1", EXTENDED_B: "1"},
            True,
            (f"Insufficient {EXTENDED_B}",),
            id="extended resource NOT backed by DRA",
        ),
        pytest.param(
            {EXTENDED_DRA: "1"},
            True,
            (),
            id="extended resource was backed by Device Plugin (Allocatable: 0)",
        ),
        pytest.param(
            {EXTENDED_A: "1"},
            True,
            (),
            id="extended resource was backed by Device Plugin (Allocatable: 0), global cache",
        ),
    ],
)
def test_enough_requests(requests, enabled, reasons, monkeypatch: pytest.MonkeyPatch) -> None:
    if not enabled:  # locked on: only a test can turn it off, as upstream's tests do
        gates = features.FeatureGates({"DRAExtendedResource": False})
        monkeypatch.setattr(features, "_current", gates)
    node = make_node("n1", allocatable=NODE)
    assert reasons_on([node], make_pod(requests=requests), listers_with_class()) == [reasons]


def test_ksched_checked_only_where_the_node_offers_it() -> None:
    """Columnar: a node with the resource in its allocatable (a device plugin) is
    checked as ever; one without it, or with 0, leaves it to DynamicResources."""
    nodes = [
        make_node("none", allocatable={"cpu": "1", "pods": 10}),
        make_node("zero", allocatable={"cpu": "1", "pods": 10, EXTENDED_DRA: "0"}),
        make_node("one", allocatable={"cpu": "1", "pods": 10, EXTENDED_DRA: "1"}),
        make_node("two", allocatable={"cpu": "1", "pods": 10, EXTENDED_DRA: "2"}),
    ]
    pod = make_pod(requests={EXTENDED_DRA: "2"})
    insufficient = (f"Insufficient {EXTENDED_DRA}",)
    assert reasons_on(nodes, pod, listers_with_class()) == [(), (), insufficient, ()]
    assert reasons_on(nodes, pod, Listers()) == [insufficient, insufficient, insufficient, ()]


def test_ksched_implicit_name_of_every_class() -> None:
    implicit = "deviceclass.resource.kubernetes.io/device-class-name"
    pod = make_pod(requests={implicit: "1"})
    node = make_node("n1", allocatable=NODE)
    assert reasons_on([node], pod, listers_with_class()) == [()]
    assert reasons_on([node], pod, None) == [(f"Insufficient {implicit}",)]


def test_ksched_the_store_does_not_recheck_a_resource_dra_may_serve() -> None:
    """The store's atomic re-check is the same on every node, so a resource a
    DeviceClass serves is left out of it (DynamicResources' devices are guarded by
    the store on their own)."""
    info = PodInfo.of(make_pod(requests={"cpu": "1", EXTENDED_DRA: "1", EXTENDED_B: "1"}))
    with_class = Fit(NodeResourcesFitArgs().defaulted(), listers_with_class())
    assert with_class.checked_resources(info) == {"pods", "cpu", EXTENDED_B}
    without = Fit(NodeResourcesFitArgs().defaulted(), Listers())
    assert without.checked_resources(info) == {"pods", "cpu", EXTENDED_B, EXTENDED_DRA}


def test_ksched_a_node_added_without_the_resource_a_class_serves_may_help() -> None:
    """``isSchedulableAfterNodeChange`` with DRA: ``isFit`` leaves the resource to
    DynamicResources on a node that does not offer it."""
    pod = make_pod(requests={"cpu": "2", EXTENDED_DRA: "1"})
    added = make_node("n2", allocatable={"cpu": "4", "pods": 10})
    with_class = Fit(NodeResourcesFitArgs().defaulted(), listers_with_class())
    assert with_class.is_schedulable_after_node_change(pod, None, added) is QueueingHint.Queue
    without = Fit(NodeResourcesFitArgs().defaulted(), Listers())
    assert without.is_schedulable_after_node_change(pod, None, added) is QueueingHint.QueueSkip
    small = make_node("n2", allocatable={"cpu": "1", "pods": 10})
    assert with_class.is_schedulable_after_node_change(pod, None, small) is QueueingHint.QueueSkip
