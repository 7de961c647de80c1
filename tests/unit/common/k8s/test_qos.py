"""``GetPodQOS``: status.qosClass, else computed from the containers' cpu and memory.
The rows named as upstream's come from ``TestComputePodQOS``
(pkg/apis/core/v1/helper/qos/qos_test.go)."""

from __future__ import annotations

import pytest

from services.common.k8s.qos import get_pod_qos
from tests.builders import container, make_pod

GUARANTEED = container({"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1000m", "memory": "1Gi"})
BURSTABLE = container({"cpu": "1"})


@pytest.mark.parametrize(
    ("pod", "qos"),
    [
        pytest.param(make_pod(), "BestEffort", id="no containers"),
        pytest.param(make_pod(containers=2), "BestEffort", id="no requests or limits"),
        pytest.param(make_pod(requests=[GUARANTEED]), "Guaranteed", id="equal requests and limits"),
        pytest.param(make_pod(requests=[BURSTABLE]), "Burstable", id="requests only"),
        pytest.param(
            make_pod(requests=[container(limits={"cpu": "1", "memory": "1Gi"})]),
            "Burstable",
            id="limits only (not defaulted)",
        ),
        pytest.param(
            make_pod(requests=[container({"cpu": "1"}, limits={"cpu": "1"})]),
            "Burstable",
            id="cpu only",
        ),
        pytest.param(
            make_pod(requests=[GUARANTEED], containers=1), "Burstable", id="mixed containers"
        ),
        pytest.param(
            make_pod(requests=[GUARANTEED], init=[GUARANTEED]), "Guaranteed", id="init too"
        ),
        pytest.param(
            make_pod(requests=[container({"example.com/gpu": "1"})]),
            "BestEffort",
            id="only cpu and memory count",
        ),
        pytest.param(make_pod(qos_class="Guaranteed"), "Guaranteed", id="status.qosClass wins"),
        pytest.param(
            make_pod(requests=[GUARANTEED, GUARANTEED]), "Guaranteed", id="guaranteed-guaranteed"
        ),
        pytest.param(
            make_pod(requests=[container(), GUARANTEED]), "Burstable", id="best-effort-guaranteed"
        ),
        pytest.param(
            make_pod(
                requests=[
                    container(
                        {"cpu": "100m", "memory": "100Mi"}, limits={"cpu": "1", "memory": "100Mi"}
                    )
                ]
            ),
            "Burstable",
            id="burstable-cpu-guaranteed-memory",
        ),
        pytest.param(
            make_pod(requests=[container({"hugepages-2Mi": "1Gi"})]),
            "BestEffort",
            id="best-effort-hugepages",
        ),
        pytest.param(
            make_pod(
                requests=[
                    container(
                        {"cpu": "100m", "memory": "100Mi", "nvidia.com/gpu": "2"},
                        limits={"cpu": "100m", "memory": "100Mi", "nvidia.com/gpu": "2"},
                    )
                ]
            ),
            "Guaranteed",
            id="guaranteed-with-gpu",
        ),
    ],
)
def test_get_pod_qos(pod, qos):
    assert get_pod_qos(pod) == qos
