"""The descheduler's metrics keep upstream's names, labels and buckets, fed by the
cycle: each eviction's result, each plugin's duration, the cycle's duration."""

from __future__ import annotations

from prometheus_client import generate_latest

from services.descheduler.api import ClusterView
from services.descheduler.metrics import DeschedulerMetrics
from services.descheduler.policy import load_policy
from services.descheduler.profile import run_cycle
from services.descheduler.registry import in_tree_registry
from tests.unit.descheduler.support import NOW, build_node, build_pod, with_

POLICY = {
    "apiVersion": "descheduler/v1alpha2",
    "kind": "DeschedulerPolicy",
    "maxNoOfPodsToEvictPerNode": 1,
    "profiles": [
        {
            "name": "failed",
            "pluginConfig": [{"name": "RemoveFailedPods", "args": {"minPodLifetimeSeconds": 0}}],
            "plugins": {"deschedule": {"enabled": ["RemoveFailedPods"]}},
        }
    ],
}


def test_evictions_and_durations_are_counted_with_upstreams_names() -> None:
    metrics = DeschedulerMetrics("1.2.3")
    failed = [with_(build_pod(f"f{i}", node="n1"), status_phase="Failed") for i in range(2)]
    cluster = ClusterView([build_node("n1"), build_node("n2")], failed, NOW)
    registry = in_tree_registry()
    run_cycle(
        load_policy(POLICY, registry),
        registry,
        cluster,
        lambda pod, nodes: True,
        on_result=lambda pod, options, result: metrics.evicted(
            result, options.plugin, options.profile, "default", pod.spec.node_name or ""
        ),
        on_plugin=metrics.ran,
    )
    metrics.cycle(0.3)
    sample = metrics.registry.get_sample_value
    labels = {
        "strategy": "RemoveFailedPods",
        "profile": "failed",
        "namespace": "default",
        "node": "n1",
    }
    assert sample("descheduler_pods_evicted_total", {"result": "success", **labels}) == 1
    # The deprecated name carries the same series.
    assert sample("descheduler_pods_evicted", {"result": "success", **labels}) == 1
    # RemoveFailedPods stops the node at its limit: the second pod's refusal is counted.
    refused = {"result": "maximum number of evicted pods per node reached", **labels}
    assert sample("descheduler_pods_evicted_total", refused) == 1
    strategy = {"strategy": "RemoveFailedPods", "profile": "failed"}
    assert sample("descheduler_strategy_duration_seconds_count", strategy) == 1
    assert sample("descheduler_descheduler_strategy_duration_seconds_count", strategy) == 1
    assert sample("descheduler_loop_duration_seconds_bucket", {"le": "0.5"}) == 1
    assert sample("descheduler_loop_duration_seconds_bucket", {"le": "0.25"}) == 0
    assert sample("descheduler_descheduler_loop_duration_seconds_count") == 1
    text = generate_latest(metrics.registry).decode()
    assert (
        'descheduler_build_info{AppVersion="1.2.3",DeschedulerVersion="ksched-1.2.3"} 1.0' in text
    )
    assert 'le="500.0"' in text  # the loop's last finite bucket


def test_the_exposition_is_valid_with_both_names() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    metrics = DeschedulerMetrics("1")
    metrics.evicted("success", "PodLifeTime", "p", "ns", "n1")
    text = generate_latest(metrics.registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["descheduler_pods_evicted"].samples[0].value == 1
    assert families["descheduler_pods_evicted"].samples[0].labels["strategy"] == "PodLifeTime"
    assert [s.value for s in families["descheduler_pods_evicted"].samples] == [1.0]
    assert text.count("# TYPE descheduler_pods_evicted_total counter") == 1
    assert text.count("# TYPE descheduler_pods_evicted untyped") == 1
