"""NodeResourcesFit's Filter: every insufficient resource is a reason, as fit.go reports."""

from __future__ import annotations

import pytest

from services.framework.api.interface import CycleState
from services.framework.api.status import Code
from services.framework.api.types import PodInfo
from services.framework.plugins.noderesources.args import NodeResourcesFitArgs
from services.framework.plugins.noderesources.fit import Fit
from tests.builders import make_node, make_pod
from tests.unit.framework.helpers import snapshot_of

NODE = {"cpu": "10", "memory": "20", "pods": 32}
EXISTING = {"cpu": "5", "memory": "5"}  # the node runs one pod using 5 cpu, 5 bytes


def filter_node(pod, allocatable=NODE, existing=(EXISTING,), args=None):
    """Run Fit's PreFilter and Filter for ``pod`` on one node; the node's reasons."""
    node = make_node("n1", allocatable=allocatable)
    bound = [make_pod(f"e{i}", node_name="n1", requests=r) for i, r in enumerate(existing)]
    table = snapshot_of([node], bound).snapshot()
    fit = Fit((args or NodeResourcesFitArgs()).defaulted())
    state, info = CycleState(), PodInfo.of(pod)
    _, status = fit.pre_filter(state, info, table)
    assert status.is_success()
    result = fit.filter_all(state, info, table)
    if result.passed[0]:
        return ()
    verdict = result.describe(int(result.codes[0]))
    assert verdict.code == Code.Unschedulable
    return verdict.reasons


@pytest.mark.parametrize(
    ("pod", "reasons"),
    [
        pytest.param(make_pod(), (), id="no resources requested always fits"),
        pytest.param(make_pod(requests={"cpu": "3", "memory": "1"}), (), id="fits"),
        pytest.param(make_pod(requests={"cpu": "5", "memory": "15"}), (), id="fits exactly"),
        pytest.param(
            make_pod(requests={"cpu": "6", "memory": "1"}), ("Insufficient cpu",), id="too much cpu"
        ),
        pytest.param(
            make_pod(requests={"cpu": "1", "memory": "16"}),
            ("Insufficient memory",),
            id="too much memory",
        ),
        pytest.param(
            make_pod(requests={"cpu": "6", "memory": "16"}),
            ("Insufficient cpu", "Insufficient memory"),
            id="both reasons are kept",
        ),
        pytest.param(
            make_pod(requests={"cpu": "1"}, init=[{"cpu": "6"}]),
            ("Insufficient cpu",),
            id="init container larger than the room",
        ),
        pytest.param(
            make_pod(requests={"cpu": "1"}, overhead={"cpu": "5"}),
            ("Insufficient cpu",),
            id="overhead counts",
        ),
        pytest.param(
            make_pod(requests={"example.com/gpu": "1"}),
            ("Insufficient example.com/gpu",),
            id="extended resource the node lacks",
        ),
        pytest.param(
            make_pod(requests={"ephemeral-storage": "1"}),
            ("Insufficient ephemeral-storage",),
            id="ephemeral storage",
        ),
        pytest.param(
            make_pod(requests={"hugepages-2Mi": "2Mi", "cpu": "6"}),
            ("Insufficient cpu", "Insufficient hugepages-2Mi"),
            id="hugepages after the builtin resources",
        ),
        pytest.param(
            make_pod(requests={"cpu": "0", "memory": "0"}), (), id="explicit zero requests"
        ),
    ],
)
def test_filter_reasons(pod, reasons):
    assert filter_node(pod) == reasons


def test_too_many_pods_even_without_requests():
    full = {"cpu": "10", "memory": "20", "pods": 1}
    assert filter_node(make_pod(), allocatable=full) == ("Too many pods",)
    assert filter_node(make_pod(requests={"cpu": "6"}), allocatable=full) == (
        "Too many pods",
        "Insufficient cpu",
    )
    no_pods = {"cpu": "10", "memory": "20"}  # allocatable without pods allows none
    assert filter_node(make_pod(), allocatable=no_pods, existing=()) == ("Too many pods",)


def test_extended_resource_on_the_node():
    allocatable = {**NODE, "example.com/gpu": "2"}
    assert filter_node(make_pod(requests={"example.com/gpu": "2"}), allocatable) == ()
    assert filter_node(make_pod(requests={"example.com/gpu": "3"}), allocatable) == (
        "Insufficient example.com/gpu",
    )


@pytest.mark.parametrize(
    "args",
    [
        NodeResourcesFitArgs(ignored_resources=("example.com/gpu",)),
        NodeResourcesFitArgs(ignored_resource_groups=("example.com",)),
    ],
    ids=["ignoredResources", "ignoredResourceGroups"],
)
def test_ignored_extended_resources(args):
    pod = make_pod(requests={"example.com/gpu": "1", "other.io/x": "1"})
    assert filter_node(pod, args=args) == ("Insufficient other.io/x",)


def test_hugepages_cannot_be_ignored():
    args = NodeResourcesFitArgs(ignored_resources=("hugepages-2Mi",))
    pod = make_pod(requests={"hugepages-2Mi": "2Mi"})
    assert filter_node(pod, args=args) == ("Insufficient hugepages-2Mi",)


def test_filter_is_columnar_over_many_nodes():
    nodes = [make_node(f"n{i}", allocatable={"cpu": str(i), "pods": 110}) for i in range(6)]
    table = snapshot_of(nodes).snapshot()
    fit = Fit(NodeResourcesFitArgs().defaulted())
    state, info = CycleState(), PodInfo.of(make_pod(requests={"cpu": "3"}))
    fit.pre_filter(state, info, table)
    result = fit.filter_all(state, info, table)
    assert result.passed.tolist() == [False, False, False, True, True, True]
