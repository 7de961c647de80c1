"""services.common.resources: pod requests as component-helpers' PodRequests computes them."""

from __future__ import annotations

import msgspec
import pytest

from contracts.k8s import Pod
from services.common.resources import (
    ResourceError,
    is_scalar_resource_name,
    node_allocatable,
    pod_nonzero_requests,
    pod_requests,
    validate_node,
    validate_pod,
)
from tests.builders import container, make_node, make_pod, sidecar

MI = 1024 * 1024


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(make_pod(), {}, id="no containers"),
        pytest.param(make_pod(containers=2), {}, id="containers without requests"),
        pytest.param(
            make_pod(requests=[{"cpu": "2", "memory": "1G"}, {"cpu": "1", "memory": "1G"}]),
            {"cpu": 3000, "memory": 2 * 10**9},
            id="app containers add up",
        ),
        pytest.param(
            # fit.go's computePodResourceRequest example: result CPU 3, memory 3G
            make_pod(
                requests=[{"cpu": "2", "memory": "1G"}, {"cpu": "1", "memory": "1G"}],
                init=[{"cpu": "2", "memory": "1G"}, {"cpu": "2", "memory": "3G"}],
            ),
            {"cpu": 3000, "memory": 3 * 10**9},
            id="init containers are maxed with the app sum",
        ),
        pytest.param(
            make_pod(requests={"cpu": "1"}, init=[{"cpu": "2"}]),
            {"cpu": 2000},
            id="init larger than app",
        ),
        pytest.param(
            make_pod(requests={"cpu": "1"}, init=[sidecar({"cpu": "1"}), {"cpu": "2"}]),
            {"cpu": 3000},
            id="sidecar runs during the later init container and with the app",
        ),
        pytest.param(
            make_pod(requests={"cpu": "1"}, init=[{"cpu": "2"}, sidecar({"cpu": "1"})]),
            {"cpu": 2000},
            id="init container before the sidecar does not overlap it",
        ),
        pytest.param(
            make_pod(
                requests={"cpu": "1"},
                init=[sidecar({"cpu": "1"}), sidecar({"cpu": "2"}), {"cpu": "1500m"}],
            ),
            {"cpu": 4500},
            id="sidecars accumulate",
        ),
        pytest.param(
            make_pod(requests={"cpu": "500m", "memory": "1Gi"}, overhead={"cpu": "250m"}),
            {"cpu": 750, "memory": 1024 * MI},
            id="overhead is added",
        ),
        pytest.param(
            make_pod(requests={"cpu": "1", "example.com/gpu": "2", "hugepages-2Mi": "4Mi"}),
            {"cpu": 1000, "example.com/gpu": 2, "hugepages-2Mi": 4 * MI},
            id="scalar resources",
        ),
        pytest.param(
            make_pod(requests={"cpu": "1", "foo": "3", "pods": "2"}),
            {"cpu": 1000},
            id="non-scalar unknown names are not accounted",
        ),
        pytest.param(
            make_pod(requests=[{"memory": "0.5"}, {"memory": "0.5"}]),
            {"memory": 1},
            id="exact sum then round up",
        ),
        pytest.param(make_pod(requests={"cpu": "0"}), {}, id="explicit zero"),
    ],
)
def test_pod_requests(pod, expected):
    assert pod_requests(pod) == expected


@pytest.mark.parametrize(
    ("pod", "cpu", "memory"),
    [
        pytest.param(make_pod(), 0, 0, id="no containers: nothing"),
        pytest.param(make_pod(containers=1), 100, 200 * MI, id="defaults for a bare container"),
        pytest.param(make_pod(containers=2), 200, 400 * MI, id="defaults per container"),
        pytest.param(
            make_pod(requests={"cpu": "0", "memory": "0"}), 0, 0, id="explicit zero stays zero"
        ),
        pytest.param(make_pod(requests={"cpu": "1"}), 1000, 200 * MI, id="only missing defaults"),
        pytest.param(
            make_pod(containers=1, init=[{}]), 100, 200 * MI, id="init container defaults too"
        ),
        pytest.param(
            make_pod(containers=1, init=[sidecar()]), 200, 400 * MI, id="sidecar defaults add"
        ),
        pytest.param(
            make_pod(containers=1, overhead={"cpu": "10m"}), 110, 200 * MI, id="plus overhead"
        ),
    ],
)
def test_pod_nonzero_requests(pod, cpu, memory):
    got = pod_nonzero_requests(pod)
    assert (got.get("cpu", 0), got.get("memory", 0)) == (cpu, memory)


def test_node_allocatable_includes_pods_and_falls_back_to_capacity():
    node = make_node(allocatable={"cpu": "3500m", "memory": "1Gi", "pods": 110, "x.io/y": "2"})
    assert node_allocatable(node) == {
        "cpu": 3500,
        "memory": 1024 * MI,
        "pods": 110,
        "x.io/y": 2,
    }
    only_capacity = make_node(capacity={"cpu": "2", "pods": "10"}, allocatable={})
    assert node_allocatable(only_capacity) == {"cpu": 2000, "pods": 10}


def test_invalid_quantity_names_the_field():
    pod = make_pod(requests=[{"cpu": "1"}, {"memory": "-1Gi"}])
    with pytest.raises(ResourceError) as err:
        pod_requests(pod)
    assert err.value.field == "spec.containers[1].resources.requests.memory"
    assert "greater than or equal to 0" in err.value.reason


def test_validate_pod_lists_every_problem():
    pod = make_pod(
        requests={"cpu": "lots"},
        init=[container({"example.com/gpu": "0.5"}, limits={"memory": "-1"})],
        overhead={"cpu": "-1m"},
    )
    fields = [field for field, _ in validate_pod(pod)]
    assert fields == [
        "spec.containers[0].resources.requests.cpu",
        "spec.initContainers[0].resources.requests.example.com/gpu",
        "spec.initContainers[0].resources.limits.memory",
        "spec.overhead.cpu",
    ]
    assert validate_pod(make_pod(requests={"cpu": "1"})) == []


def test_validate_node():
    node = make_node(allocatable={"cpu": "1", "memory": "x"}, capacity={"pods": "-3"})
    problems = validate_node(node)
    assert [field for field, _ in problems] == ["status.capacity.pods", "status.allocatable.memory"]
    assert problems[0][1] == "must be greater than or equal to 0"
    assert "regular expression" in problems[1][1]


@pytest.mark.parametrize(
    ("name", "scalar"),
    [
        ("example.com/gpu", True),
        ("hugepages-1Gi", True),
        ("kubernetes.io/batch-cpu", True),
        ("attachable-volumes-aws-ebs", True),
        ("cpu", False),
        ("pods", False),
        ("foo", False),
        ("requests.example.com/gpu", False),
        ("Bad_Domain.com/gpu", False),
    ],
)
def test_is_scalar_resource_name(name, scalar):
    assert is_scalar_resource_name(name) is scalar


@pytest.mark.parametrize(
    ("first", "second", "shared"),
    [
        (("u1", "7", "1"), ("u1", "7", "1"), True),  # the same version: computed once
        (("u1", "7", "1"), ("u1", "8", "2"), False),  # a new version: computed again
        # Without a resourceVersion or a uid the version is not kept, but the shape is:
        (("u1", None, "1"), ("u1", None, "1"), True),
        ((None, "7", "1"), (None, "7", "1"), True),
        (("u1", None, "1"), ("u1", None, "2"), False),  # another shape: computed again
    ],
    ids=["same-version", "new-version", "no-resource-version", "no-uid", "another-shape"],
)
def test_requests_are_computed_once_per_pod_version_and_shape(
    first: tuple[str | None, str | None, str],
    second: tuple[str | None, str | None, str],
    shared: bool,
) -> None:
    def pod(uid: str | None, version: str | None, cpu: str) -> Pod:
        built = make_pod("p", requests={"cpu": cpu}, resource_version=version)
        return msgspec.structs.replace(
            built, metadata=msgspec.structs.replace(built.metadata, uid=uid)
        )

    a, b = pod(*first), pod(*second)
    assert (pod_requests(a) is pod_requests(b)) is shared
    assert (pod_nonzero_requests(a) is pod_nonzero_requests(b)) is shared
    assert pod_requests(b) == {"cpu": int(second[2]) * 1000}
