"""KubeSchedulerConfiguration files as users write them (issue 7, item 3).

Every top-level v1 field decodes; the ones without meaning in ksched warn once each;
upstream plugins ksched lacks are "not implemented", not unknown, and may be
disabled; every error is one line naming the file, the line and the field.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from services.framework.api.interface import ExtensionPoint
from services.framework.config import ConfigError, load_config
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.defaultpreemption import DefaultPreemption
from services.framework.plugins.defaultpreemption.args import DefaultPreemptionArgs
from services.framework.runtime.framework import Framework

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

DOCS_MINIMAL = (
    HEAD + "clientConnection:\n  kubeconfig: /etc/srv/kubernetes/kube-scheduler/kubeconfig\n"
)
"""The "minimal configuration" of kubernetes.io's scheduler configuration page."""

TUNED_PREEMPTION = (
    HEAD
    + """\
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: DefaultPreemption
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: DefaultPreemptionArgs
          minCandidateNodesPercentage: 20
          minCandidateNodesAbsolute: 50
"""
)

EVERY_FIELD = (
    HEAD
    + """\
parallelism: 16
leaderElection:
  leaderElect: true
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
  resourceLock: leases
  resourceName: kube-scheduler
  resourceNamespace: kube-system
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
  acceptContentTypes: ""
  contentType: application/vnd.kubernetes.protobuf
  qps: 50
  burst: 100
enableProfiling: true
enableContentionProfiling: true
percentageOfNodesToScore: 0
percentageOfPlacementsToScore: 0
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
profiles:
  - schedulerName: default-scheduler
extenders: []
delayCacheUntilActive: false
"""
)

IGNORED = [
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfPlacementsToScore",
    "delayCacheUntilActive",
]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ksched.config"]


@pytest.mark.parametrize(
    ("text", "warned"),
    [
        pytest.param(DOCS_MINIMAL, ["clientConnection"], id="the docs' minimal config"),
        pytest.param(EVERY_FIELD, IGNORED, id="every top-level field"),
        pytest.param(HEAD + "parallelism: 32\n", ["parallelism"], id="parallelism"),
        pytest.param(
            HEAD + "leaderElection: {leaderElect: false}\n", ["leaderElection"], id="leaderElection"
        ),
        pytest.param(
            HEAD + "leaderElection: {leaseDuration: 1m30s, renewDeadline: 1m}\n",
            ["leaderElection"],
            id="leaderElection durations",
        ),
        pytest.param(
            HEAD + "clientConnection: {qps: 100, burst: 200}\n",
            ["clientConnection"],
            id="clientConnection",
        ),
        pytest.param(
            HEAD + "delayCacheUntilActive: true\n",
            ["delayCacheUntilActive"],
            id="delayCacheUntilActive",
        ),
        pytest.param(HEAD + "enableProfiling: false\n", ["enableProfiling"], id="enableProfiling"),
        pytest.param(
            HEAD + "enableContentionProfiling: false\n",
            ["enableContentionProfiling"],
            id="enableContentionProfiling",
        ),
        pytest.param(
            HEAD + "percentageOfPlacementsToScore: 30\n",
            ["percentageOfPlacementsToScore"],
            id="percentageOfPlacementsToScore",
        ),
        pytest.param(
            HEAD + "profiles: [{percentageOfPlacementsToScore: 30}]\n",
            ["profiles[0].percentageOfPlacementsToScore"],
            id="profile percentageOfPlacementsToScore",
        ),
        pytest.param(HEAD + "extenders: []\n", [], id="no extenders"),
        pytest.param(
            HEAD + "profiles: [{plugins: {postFilter: {disabled: [{name: DefaultPreemption}]}}}]\n",
            [],
            id="DefaultPreemption disabled at postFilter",
        ),
        pytest.param(
            HEAD + "profiles: [{plugins: {multiPoint: {disabled: [{name: DefaultPreemption}]}}}]\n",
            [],
            id="DefaultPreemption disabled in multiPoint",
        ),
        pytest.param(
            HEAD + "profiles: [{plugins: {multiPoint: {disabled: [{name: DynamicResources}]}}}]\n",
            [],
            id="DynamicResources disabled",
        ),
        pytest.param(TUNED_PREEMPTION, [], id="DefaultPreemption tuned"),
        pytest.param(
            HEAD + "profiles: [{plugins: {placementScore: {disabled: [{name: '*'}]}}}]\n",
            [],
            id="placement point disabled",
        ),
    ],
)
def test_configs_users_have_load(tmp_path, caplog, text, warned):
    with caplog.at_level(logging.WARNING, logger="ksched.config"):
        loaded = load_config(write(tmp_path, text))
    Framework(loaded.profiles[0], in_tree_registry())
    messages = warnings(caplog)
    assert [m.split(": ")[1] for m in messages] == warned  # one warning each, in order
    for message in messages:
        assert message.startswith(f"{tmp_path / 'config.yaml'}:")
        assert ": ignored: ksched " in message


def test_a_warning_names_the_line_and_says_why(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="ksched.config"):
        load_config(write(tmp_path, DOCS_MINIMAL))
    (message,) = warnings(caplog)
    assert message == (
        f"{tmp_path / 'config.yaml'}:3: clientConnection: ignored: ksched talks to no "
        "kube-apiserver: cluster state comes as watch events (on RabbitMQ, or from the file "
        "given to simulate)"
    )


def test_no_warning_when_the_configuration_is_refused(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="ksched.config"), pytest.raises(ConfigError):
        load_config(write(tmp_path, HEAD + "parallelism: 4\nprofiles: [{plugin: {}}]\n"))
    assert warnings(caplog) == []


def test_disabling_an_unknown_plugin_loads_with_a_warning(tmp_path, caplog):
    """Upstream accepts any disabled name silently; ksched warns, as it is likely a typo."""
    text = HEAD + "profiles: [{plugins: {filter: {disabled: [{name: Nope}]}}}]\n"
    with caplog.at_level(logging.WARNING, logger="ksched.config"):
        loaded = load_config(write(tmp_path, text))
    Framework(loaded.profiles[0], in_tree_registry())
    assert warnings(caplog) == [
        f"{tmp_path / 'config.yaml'}:3: profiles[0].plugins.filter.disabled[0].name: "
        "ignored: 'Nope' is not a known plugin"
    ]


def test_tuned_preemption_args_are_kept_defaulted(tmp_path):
    (profile,) = load_config(write(tmp_path, TUNED_PREEMPTION)).profiles
    assert profile.plugin_args["DefaultPreemption"] == DefaultPreemptionArgs(
        min_candidate_nodes_percentage=20, min_candidate_nodes_absolute=50
    )
    defaults = HEAD + "profiles: [{pluginConfig: [{name: DefaultPreemption}]}]\n"
    (profile,) = load_config(write(tmp_path, defaults)).profiles
    assert profile.plugin_args["DefaultPreemption"] == DefaultPreemptionArgs(
        min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100
    )


ENABLE_PREEMPTION = (
    HEAD + "profiles:\n- plugins:\n    postFilter:\n      enabled:\n      - name: {}\n"
)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param(
            ENABLE_PREEMPTION.format("PodGroupPodsCount"),
            "7: profiles[0].plugins.postFilter.enabled[0].name: "
            'Invalid value: "PodGroupPodsCount": not implemented in ksched',
            id="not-implemented plugin enabled",
        ),
        pytest.param(
            ENABLE_PREEMPTION.format("DefaultPreemptoin"),
            "7: profiles[0].plugins.postFilter.enabled[0].name: "
            'Invalid value: "DefaultPreemptoin": unknown plugin',
            id="unknown plugin enabled",
        ),
        pytest.param(
            HEAD
            + "profiles: [{plugins: {multiPoint: {enabled: [{name: NodeDeclaredFeatures}]}}}]\n",
            "3: profiles[0].plugins.multiPoint.enabled[0].name: "
            'Invalid value: "NodeDeclaredFeatures": not implemented in ksched',
            id="not-implemented plugin in multiPoint",
        ),
        pytest.param(
            HEAD + "profiles: [{plugins: {filter: {enabled: [{name: EBSLimits}]}}}]\n",
            '3: profiles[0].plugins.filter.enabled[0].name: Invalid value: "EBSLimits": '
            'was invalid in version "kubescheduler.config.k8s.io/v1" '
            '(KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")',
            id="plugin invalid in v1",
        ),
        pytest.param(
            HEAD
            + "profiles: [{plugins: {placementScore: {enabled: [{name: PodGroupPodsCount}]}}}]\n",
            "3: profiles[0].plugins.placementScore.enabled[0].name: "
            'Invalid value: "PodGroupPodsCount": not supported: ksched has no placement '
            "(workload) scheduling",
            id="placement plugin enabled",
        ),
        pytest.param(
            HEAD + "extenders:\n- urlPrefix: http://127.0.0.1:8888/\n  filterVerb: filter\n",
            "3: extenders: not supported: ksched calls no scheduler extenders; "
            "write the logic as a plugin instead",
            id="extenders",
        ),
        pytest.param(
            HEAD + "profiles:\n- schedulerName: a\n  plugins: {postFilter: {enabled: []}\n",
            "6:1: not valid YAML: expected ',' or '}', but got '<stream end>'",
            id="YAML syntax error",
        ),
        pytest.param(
            HEAD + "profiles:\n  - schedulerName: a\n    pluginConfig: [\n  - x\n",
            "6:3: not valid YAML: expected the node content, but found '-'",
            id="YAML syntax error mid-file",
        ),
        pytest.param(
            HEAD + "---\n" + HEAD,
            "3:1: not valid YAML: expected a single document in the stream, but found "
            "another document",
            id="a second document (a cluster file given as the configuration)",
        ),
        pytest.param(
            HEAD
            + """\
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
      - name: InterPodAffinity
        args:
          hardPodAffinityWeight: 2
          foo: 1
""",
            "13: profiles[0].pluginConfig[1].args.foo: unknown field",
            id="unknown args field",
        ),
        pytest.param(
            HEAD + "profiles:\n- schedulerName: a\n  plugins:\n    queueSort:\n      enabled:\n"
            "      - name: QOSSort\n",
            "6: profiles[0].plugins.queueSort: only one queue sort plugin can be enabled",
            id="error on a defaulted field takes its enclosing line",
        ),
        pytest.param(
            HEAD + "metricsBindAddress: 0.0.0.0:10259\n",
            "3: metricsBindAddress: unknown field",
            id="bind address is not a v1 field",
        ),
        pytest.param(
            HEAD + "parallelism: 0\n",
            "3: parallelism: Invalid value: 0: should be an integer value greater than zero",
            id="parallelism zero",
        ),
        pytest.param(
            HEAD + "leaderElection:\n  leaseDuration: 5s\n",
            "4: leaderElection.leaseDuration: Invalid value: 10s: must be greater than "
            "`RenewDeadline`",
            id="lease not longer than the renew deadline",
        ),
        pytest.param(
            HEAD + "leaderElection:\n  retryPeriod: -1s\n",
            "4: leaderElection.retryPeriod: Invalid value: -1s: must be greater than zero",
            id="negative retry period",
        ),
        pytest.param(
            HEAD + "leaderElection:\n  renewDeadline: 10 seconds\n",
            '4: leaderElection.renewDeadline: Invalid value: "10 seconds": time: invalid duration '
            '"10 seconds"',
            id="not a duration",
        ),
        pytest.param(
            HEAD + "leaderElection:\n  resourceLock: endpoints\n",
            '4: leaderElection.resourceLock: Invalid value: "endpoints": '
            'resourceLock value must be "leases"',
            id="resource lock",
        ),
        pytest.param(
            HEAD + "leaderElection:\n  leaderElect: false\n  electMe: true\n",
            "5: leaderElection.electMe: unknown field",
            id="unknown leaderElection field",
        ),
        pytest.param(
            HEAD + "clientConnection:\n  kubeconfig: x\n  burst: -1\n",
            "5: clientConnection.burst: Invalid value: -1: must be non-negative",
            id="negative burst",
        ),
        pytest.param(
            HEAD + "enableProfiling: yes please\n",
            "3: enableProfiling: Expected `bool | null`, got `str`",
            id="profiling not a bool",
        ),
        pytest.param(
            HEAD + "percentageOfPlacementsToScore: 101\n",
            "3: percentageOfPlacementsToScore: Invalid value: 101: not in valid range [0-100]",
            id="placements percentage",
        ),
        pytest.param(
            TUNED_PREEMPTION.replace("20", "101"),
            "10: profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 101: "
            "not in valid range [0, 100]",
            id="preemption percentage out of range",
        ),
        pytest.param(
            TUNED_PREEMPTION.replace(" 50", " -1"),
            "11: profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: -1: "
            "not in valid range [0, inf)",
            id="preemption absolute negative",
        ),
        pytest.param(
            TUNED_PREEMPTION.replace("20", "0").replace(" 50", " 0"),
            "10: profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 0: "
            "cannot be zero at the same time as minCandidateNodesAbsolute",
            id="preemption both zero",
        ),
        pytest.param(
            TUNED_PREEMPTION.replace("minCandidateNodesAbsolute", "minCandidates"),
            "11: profiles[0].pluginConfig[0].args.minCandidates: unknown field",
            id="preemption unknown arg",
        ),
        pytest.param(
            HEAD + "profiles:\n- pluginConfig:\n  - name: PodGroupPodsCount\n"
            "    args: {timeout: 5s}\n",
            "6: profiles[0].pluginConfig[0].args: not supported: PodGroupPodsCount is not "
            "implemented in ksched, so its args cannot be checked",
            id="args of a not-implemented plugin ksched cannot check",
        ),
        pytest.param(
            HEAD + "profiles:\n- pluginConfig:\n  - name: DefaultPreemptoin\n",
            "5: profiles[0].pluginConfig[0].name: "
            'Invalid value: "DefaultPreemptoin": unknown plugin',
            id="pluginConfig of an unknown plugin",
        ),
        pytest.param("- a\n- b\n", "1: the configuration must be a mapping", id="not a mapping"),
        pytest.param(
            HEAD.replace("v1", "v1beta3"),
            '1: apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": supported '
            'values: "kubescheduler.config.k8s.io/v1"',
            id="old apiVersion",
        ),
    ],
)
def test_errors_name_file_line_and_field(tmp_path, text, error):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}:{error}"
    assert "\n" not in str(caught.value)


def test_an_unreadable_file_is_one_line(tmp_path):
    path = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: cannot read the configuration: No such file or directory"


def test_a_mapping_source_has_no_location():
    with pytest.raises(ConfigError) as caught:
        load_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "x"})
    assert str(caught.value) == (
        'kind: Unsupported value: "x": supported values: "KubeSchedulerConfiguration"'
    )
    assert (caught.value.file, caught.value.line) == (None, None)


def test_default_preemption_is_registered_with_its_args(tmp_path):
    text = TUNED_PREEMPTION + "    plugins:\n      postFilter:\n        enabled:\n"
    text += "          - name: DefaultPreemption\n"
    (profile,) = load_config(write(tmp_path, text)).profiles
    framework = Framework(profile, in_tree_registry())
    # The point's own plugins first, then multiPoint's (upstream's expandMultiPointPlugins).
    assert framework.plugin_names(ExtensionPoint.PostFilter) == (
        "DefaultPreemption",
        "DynamicResources",
    )
    plugin = framework.plugins["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    assert plugin.percentage == 20


def test_the_example_config_loads(caplog):
    path = Path(__file__).parents[4] / "ops" / "examples" / "scheduler-config.yaml"
    with caplog.at_level(logging.WARNING, logger="ksched.config"):
        loaded = load_config(path)
    assert [p.scheduler_name for p in loaded.profiles] == ["default-scheduler", "bin-packer"]
    fields = [m.split(": ")[1] for m in warnings(caplog)]
    assert fields == ["clientConnection", "leaderElection", "parallelism"]
