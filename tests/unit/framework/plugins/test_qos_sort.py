"""QOSSort: priority, then QoS class (Guaranteed > Burstable > BestEffort), then time."""

from __future__ import annotations

import pytest

from services.framework.api.types import PodInfo, QueuedPodInfo
from services.framework.plugins.queuesort.qos_sort import QOSSort, pod_qos
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
    ],
)
def test_pod_qos(pod, qos):
    assert pod_qos(pod) == qos


def queued(name, priority=0, qos=None, timestamp=0.0) -> QueuedPodInfo:
    requests = {"Guaranteed": [GUARANTEED], "Burstable": [BURSTABLE]}.get(qos or "")
    pod = make_pod(name, priority=priority, requests=requests)
    return QueuedPodInfo(PodInfo.of(pod), timestamp)


def test_order():
    pods = [
        queued("best-effort-early", timestamp=1),
        queued("burstable", qos="Burstable", timestamp=3),
        queued("guaranteed-late", qos="Guaranteed", timestamp=9),
        queued("high", priority=10, timestamp=10),
        queued("guaranteed-early", qos="Guaranteed", timestamp=2),
    ]
    plugin = QOSSort()
    ordered = sorted(pods, key=plugin.sort_key)
    assert [p.pod_info.pod.metadata.name for p in ordered] == [
        "high",
        "guaranteed-early",
        "guaranteed-late",
        "burstable",
        "best-effort-early",
    ]
    for a in pods:
        for b in pods:
            assert plugin.less(a, b) == (plugin.sort_key(a) < plugin.sort_key(b))
            assert not (plugin.less(a, b) and plugin.less(b, a))
