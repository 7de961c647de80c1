"""KubeSchedulerConfiguration loading: strict errors with field paths, upstream's merging."""

from __future__ import annotations

from typing import Any

import pytest

from services.framework.api.interface import ExtensionPoint
from services.framework.config import (
    ConfigError,
    PluginRef,
    PluginSet,
    default_profile,
    load_config,
    load_profiles,
)
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.noderesources.fit import Fit
from services.framework.runtime.framework import Framework
from services.framework.runtime.profile import merge_plugin_set

P = ExtensionPoint
HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def config(**fields: Any) -> dict[str, Any]:
    return {**HEAD, **fields}


def framework(raw: dict[str, Any], index: int = 0) -> Framework:
    return Framework(load_config(raw).profiles[index], in_tree_registry())


def test_no_profiles_means_the_default_profile():
    loaded = load_config(config())
    assert [p.scheduler_name for p in loaded.profiles] == ["default-scheduler"]
    fw = Framework(loaded.profiles[0], in_tree_registry())
    assert fw.plugin_names(P.QueueSort) == ("PrioritySort",)
    # Upstream's getDefaultPlugins order, as multiPoint expands it per extension point.
    assert fw.plugin_names(P.Filter) == (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    )
    # DynamicResources (DynamicResourceAllocation is GA) sits just before DefaultPreemption,
    # at every point it serves.
    assert fw.plugin_names(P.PostFilter) == ("DynamicResources", "DefaultPreemption")
    for point in (P.PreEnqueue, P.PreFilter, P.Score, P.Reserve, P.PreBind):
        assert "DynamicResources" in fw.plugin_names(point), point
    assert fw.plugin_names(P.PreFilter)[:3] == ("NodeAffinity", "NodePorts", "NodeResourcesFit")
    assert fw.plugin_names(P.Bind) == ("DefaultBinder",)
    weights = {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "DynamicResources": 1,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert {k: v for k, v in fw.score_weights.items() if k in weights} == weights
    assert (loaded.pod_initial_backoff_seconds, loaded.pod_max_backoff_seconds) == (1.0, 10.0)
    assert load_profiles(None) == (default_profile(),)


def test_load_from_a_yaml_file(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: bin-packer\n"
        "  pluginConfig:\n"
        "  - name: NodeResourcesFit\n"
        "    args:\n"
        "      scoringStrategy:\n"
        "        type: MostAllocated\n"
        "        resources: [{name: cpu, weight: 2}, {name: memory}]\n"
    )
    (profile,) = load_profiles(path)
    assert profile.scheduler_name == "bin-packer"
    fit = Framework(profile, in_tree_registry()).plugins["NodeResourcesFit"]
    assert isinstance(fit, Fit)
    assert fit.scorer.name == "MostAllocated"
    assert [(r.name, r.weight) for r in fit.scorer.resources] == [("cpu", 2), ("memory", 1)]


def test_score_weight_overrides_multi_point_and_disabling_one_point():
    raw = config(
        profiles=[
            {
                "schedulerName": "a",
                "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]}},
            },
            {
                "schedulerName": "b",
                "plugins": {"score": {"disabled": [{"name": "NodeResourcesFit"}]}},
            },
        ]
    )
    weighted, unscored = framework(raw, 0), framework(raw, 1)
    assert weighted.score_weights["NodeResourcesFit"] == 5
    assert weighted.score_weights["TaintToleration"] == 3  # the other defaults keep theirs
    assert "NodeResourcesFit" in weighted.plugin_names(P.Score)
    assert "NodeResourcesFit" not in unscored.plugin_names(P.Score)
    assert "NodeResourcesFit" in unscored.plugin_names(P.Filter)


def test_merge_plugin_set_like_upstream():
    default = PluginSet((PluginRef("A"), PluginRef("B", 1), PluginRef("C")))
    custom = PluginSet((PluginRef("D"), PluginRef("B", 7)), (PluginRef("C"),))
    merged = merge_plugin_set(default, custom)
    assert merged.enabled == (PluginRef("A"), PluginRef("B", 7), PluginRef("D"))
    assert merged.disabled == (PluginRef("C"),)
    everything_off = merge_plugin_set(default, PluginSet((PluginRef("D"),), (PluginRef("*"),)))
    assert everything_off.enabled == (PluginRef("D"),)


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        pytest.param(
            config(healthzBindAddress=""),
            "healthzBindAddress",
            "unknown field",
            id="unknown top field",
        ),
        pytest.param(
            {"kind": "KubeSchedulerConfiguration"},
            "apiVersion",
            "Required value",
            id="no apiVersion",
        ),
        pytest.param(
            {**config(), "apiVersion": "kubescheduler.config.k8s.io/v1beta3"},
            "apiVersion",
            "Unsupported value",
            id="old apiVersion",
        ),
        pytest.param(
            config(profiles=[{"schedulerName": "a", "plugin": {}}]),
            "profiles[0].plugin",
            "unknown field",
            id="unknown profile field",
        ),
        pytest.param(
            config(
                profiles=[
                    {
                        "plugins": {
                            "filter": {"enabled": [{"name": "NodeResourcesFit"}, {"name": "Nope"}]}
                        }
                    }
                ]
            ),
            "profiles[0].plugins.filter.enabled[1].name",
            "unknown plugin",
            id="unknown plugin",
        ),
        pytest.param(
            config(profiles=[{"plugins": {"filter": {"enabled": [{"name": "PrioritySort"}]}}}]),
            "profiles[0].plugins.filter",
            "does not extend filter",
            id="plugin at a point it lacks",
        ),
        pytest.param(
            config(profiles=[{"plugins": {"multiPoint": {"disabled": [{"name": "*"}]}}}]),
            "profiles[0].plugins.queueSort",
            "no queue sort plugin is enabled",
            id="no queue sort",
        ),
        pytest.param(
            config(profiles=[{"plugins": {"bind": {"disabled": [{"name": "DefaultBinder"}]}}}]),
            "profiles[0].plugins.bind",
            "at least one bind plugin is needed",
            id="no bind plugin",
        ),
        pytest.param(
            config(profiles=[{"pluginConfig": [{"name": "Nope", "args": {}}]}]),
            "profiles[0].pluginConfig[0].name",
            "unknown plugin",
            id="pluginConfig for unknown plugin",
        ),
        pytest.param(
            config(
                profiles=[
                    {"pluginConfig": [{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]}
                ]
            ),
            "profiles[0].pluginConfig[1].name",
            "Duplicate value",
            id="repeated pluginConfig",
        ),
        pytest.param(
            config(
                profiles=[
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {"scoringStrategy": {"type": "Balanced"}},
                            }
                        ]
                    }
                ]
            ),
            "profiles[0].pluginConfig[0].args.scoringStrategy.type",
            "Unsupported value",
            id="bad strategy",
        ),
        pytest.param(
            config(
                profiles=[
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {"scoringStrategy": {"resource": []}},
                            }
                        ]
                    }
                ]
            ),
            "profiles[0].pluginConfig[0].args.scoringStrategy.resource",
            "unknown field",
            id="unknown args field",
        ),
        pytest.param(
            config(
                profiles=[
                    {
                        "pluginConfig": [
                            {"name": "NodeResourcesFit", "args": {"ignoredResourceGroups": ["a/b"]}}
                        ]
                    }
                ]
            ),
            "profiles[0].pluginConfig[0].args.ignoredResourceGroups[0]",
            "can't contain '/'",
            id="bad group",
        ),
        pytest.param(
            config(profiles=[{"pluginConfig": [{"name": "PrioritySort", "args": {"x": 1}}]}]),
            "profiles[0].pluginConfig[0].args",
            "takes no args",
            id="args for a plugin without args",
        ),
        pytest.param(
            config(profiles=[{"schedulerName": "a"}, {}]),
            "profiles[1].schedulerName",
            "Required value",
            id="unnamed second profile",
        ),
        pytest.param(
            config(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
            "profiles[1].schedulerName",
            "Duplicate value",
            id="duplicate profile",
        ),
        pytest.param(
            config(percentageOfNodesToScore=101),
            "percentageOfNodesToScore",
            "not in valid range",
            id="percentage out of range",
        ),
        pytest.param(
            config(podInitialBackoffSeconds=5, podMaxBackoffSeconds=1),
            "podMaxBackoffSeconds",
            "greater than or equal",
            id="backoff bounds",
        ),
    ],
)
def test_strict_errors_name_the_field(raw, field, reason):
    with pytest.raises(ConfigError) as err:
        load_config(raw)
    assert err.value.field == field
    assert reason in err.value.reason


def test_args_may_carry_api_version_and_kind():
    args = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs"}
    load_config(config(profiles=[{"pluginConfig": [{"name": "NodeResourcesFit", "args": args}]}]))
    with pytest.raises(ConfigError) as err:
        load_config(
            config(
                profiles=[
                    {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"kind": "Other"}}]}
                ]
            )
        )
    assert err.value.field == "profiles[0].pluginConfig[0].args.kind"
