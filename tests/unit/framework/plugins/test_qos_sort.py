"""QOSSort: priority, then QoS class (Guaranteed > Burstable > BestEffort), then time."""

from __future__ import annotations

from services.framework.api.types import PodInfo, QueuedPodInfo
from services.framework.plugins.queuesort.qos_sort import QOSSort
from tests.builders import container, make_pod

GUARANTEED = container({"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1000m", "memory": "1Gi"})
BURSTABLE = container({"cpu": "1"})


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
