"""DeschedulerPolicy decoding: upstream's defaults (DefaultEvictor everywhere), its
validation messages, strict fields named with the file and line, and the limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contracts.k8s import LabelSelector, LabelSelectorRequirement
from services.descheduler.plugins.defaultevictor import DefaultEvictorArgs
from services.descheduler.podutil import check_selector
from services.descheduler.policy import load_policy
from services.descheduler.registry import in_tree_registry
from services.framework.api.registry import ConfigError
from tests.builders.selectors import exists

REGISTRY = in_tree_registry()


def policy(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", **fields}


def profile(
    plugins: dict[str, Any] | None = None, config: list[Any] | None = None
) -> dict[str, Any]:
    return {"name": "p", "pluginConfig": config or [], "plugins": plugins or {}}


def test_every_profile_gets_the_default_evictor_first() -> None:
    loaded = load_policy(
        policy(profiles=[profile({"deschedule": {"enabled": ["RemoveFailedPods"]}})]), REGISTRY
    )
    [only] = loaded.profiles
    assert only.plugins["filter"] == ("DefaultEvictor",)
    assert only.plugins["preEvictionFilter"] == ("DefaultEvictor",)
    assert only.plugins["deschedule"] == ("RemoveFailedPods",)
    assert only.args["DefaultEvictor"] == DefaultEvictorArgs()
    assert only.args["RemoveFailedPods"].min_pod_lifetime_seconds == 3600


def test_limits_and_selector_are_kept() -> None:
    loaded = load_policy(
        policy(
            maxNoOfPodsToEvictPerNode=2,
            maxNoOfPodsToEvictPerNamespace=3,
            maxNoOfPodsToEvictTotal=4,
            nodeSelector="zone=a",
            gracePeriodSeconds=5,
        ),
        REGISTRY,
    )
    assert (loaded.max_per_node, loaded.max_per_namespace, loaded.max_total) == (2, 3, 4)
    assert (loaded.node_selector, loaded.grace_period_seconds) == ("zone=a", 5)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            policy(profiles=[profile(config=[{"name": "Nope", "args": {}}])]),
            "profiles[0].pluginConfig[0].name: in profile p: plugin Nope in pluginConfig not "
            "registered",
        ),
        (
            policy(profiles=[profile({"balance": {"enabled": ["RemoveFailedPods"]}})]),
            'profiles[0].plugins.balance.enabled: profile "p" configures balance extension point '
            "of non-existing plugins: map[RemoveFailedPods:{}]",
        ),
        (policy(maxNoOfPodsToEvictPerNod=1), "maxNoOfPodsToEvictPerNod: unknown field"),
        (
            policy(
                profiles=[profile(config=[{"name": "RemoveFailedPods", "args": {"reason": []}}])]
            ),
            "profiles[0].pluginConfig[0].args.reason: unknown field",
        ),
        (
            policy(
                profiles=[
                    profile(
                        config=[
                            {
                                "name": "RemovePodsHavingTooManyRestarts",
                                "args": {"podRestartThreshold": 0},
                            }
                        ]
                    )
                ]
            ),
            "profiles[0].pluginConfig[0].args.podRestartThreshold: invalid "
            "PodsHavingTooManyRestarts threshold",
        ),
        (
            policy(
                profiles=[
                    profile(
                        config=[
                            {
                                "name": "DefaultEvictor",
                                "args": {"priorityThreshold": {"value": 1, "name": "x"}},
                            }
                        ]
                    )
                ]
            ),
            "profiles[0].pluginConfig[0].args.priorityThreshold: priority threshold misconfigured, "
            "only one of priorityThreshold fields can be set",
        ),
        (
            policy(
                profiles=[
                    profile(
                        config=[
                            {
                                "name": "DefaultEvictor",
                                "args": {
                                    "evictLocalStoragePods": True,
                                    "podProtections": {"defaultDisabled": ["DaemonSetPods"]},
                                },
                            }
                        ]
                    )
                ]
            ),
            "profiles[0].pluginConfig[0].args.podProtections: cannot use Deprecated fields "
            "alongside PodProtections.ExtraEnabled or PodProtections.DefaultDisabled",
        ),
        (
            policy(
                profiles=[
                    profile(
                        config=[
                            {
                                "name": "RemovePodsViolatingNodeTaints",
                                "args": {"includedTaints": ["a"], "excludedTaints": ["b"]},
                            }
                        ]
                    )
                ]
            ),
            "profiles[0].pluginConfig[0].args: either includedTaints or excludedTaints can be set, "
            "but not both",
        ),
        (
            policy(
                profiles=[profile(config=[{"name": "RemovePodsViolatingNodeAffinity", "args": {}}])]
            ),
            "profiles[0].pluginConfig[0].args.nodeAffinityType: nodeAffinityType needs to be set",
        ),
        (
            policy(profiles=[profile(config=[{"name": "PodLifeTime", "args": {}}])]),
            "profiles[0].pluginConfig[0].args: at least one filtering criterion must be specified "
            "(maxPodLifeTimeSeconds, states, conditions, or exitCodes)",
        ),
        (
            policy(maxNoOfPodsToEvictTotal=-1),
            "maxNoOfPodsToEvictTotal: Invalid value: -1: must be a non-negative integer",
        ),
        (
            {"apiVersion": "descheduler/v1alpha1", "kind": "DeschedulerPolicy"},
            'apiVersion: Unsupported value: "descheduler/v1alpha1": supported values: '
            '"descheduler/v1alpha2"',
        ),
        (
            policy(metricsProviders=[{"source": "Prometheus"}]),
            "metricsProviders: prometheus configuration is required when prometheus source is "
            "enabled",
        ),
        (
            policy(
                metricsCollector={"enabled": True},
                metricsProviders=[{"source": "KubernetesMetrics"}],
            ),
            "metricsCollector: it is not allowed to combine metrics provider when metrics "
            "collector is enabled",
        ),
    ],
)
def test_refused_with_upstreams_words(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_policy(raw, REGISTRY)
    assert str(caught.value) == message


def test_the_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n"
        "  pluginConfig:\n  - name: RemoveFailedPods\n    args:\n      minPodLifetimeSecond: 1\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_policy(path, REGISTRY)
    assert str(caught.value) == (
        f"{path}:8: profiles[0].pluginConfig[0].args.minPodLifetimeSecond: unknown field"
    )


def test_pre_eviction_filter_is_accepted_as_documented() -> None:
    loaded = load_policy(
        policy(profiles=[profile({"preEvictionFilter": {"enabled": ["DefaultEvictor"]}})]), REGISTRY
    )
    assert loaded.profiles[0].plugins["preEvictionFilter"] == ("DefaultEvictor",)


GT_B = LabelSelectorRequirement(key="b", operator="Gt")


@pytest.mark.parametrize(
    ("selector", "where", "error"),
    [
        (
            LabelSelector(match_expressions=[LabelSelectorRequirement(key="a", operator="In")]),
            "matchExpressions[0]",
            "values: Invalid value: []string(nil): "
            "for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            LabelSelector(
                match_expressions=[exists("a"), LabelSelectorRequirement(key="b", operator="Gt")]
            ),
            "matchExpressions[1]",
            '"Gt" is not a valid label selector operator',
        ),
        (
            LabelSelector(match_labels={"a": "x" * 64}),
            "matchLabels",
            f'values[0][a]: Invalid value: "{"x" * 64}": must be no more than 63 characters',
        ),
    ],
)
def test_a_label_selector_upstream_refuses_is_a_config_error(selector, where, error):
    with pytest.raises(ConfigError) as refused:
        check_selector(selector, "args.labelSelector")
    assert str(refused.value) == (
        f"args.labelSelector.{where}: failed to get label selectors from strategy's params: {error}"
    )
    check_selector(LabelSelector(match_labels={"a": "b"}, match_expressions=[exists("c")]), "")
