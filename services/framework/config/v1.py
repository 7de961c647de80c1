"""``kubescheduler.config.k8s.io/v1`` as written in a file: strict wire structs.

Unknown fields are errors (upstream decodes the configuration strictly). Every field
of upstream's v1 type decodes, including those that mean nothing to ksched
(clientConnection, leaderElection, parallelism…): :mod:`.load` validates them as
upstream does, then ignores them with a warning. The healthz/metrics bind addresses
are not v1 fields (upstream dropped them before v1), so they stay unknown.
"""

from __future__ import annotations

from typing import Any

import msgspec

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


class _Strict(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    pass


class PluginV1(_Strict, kw_only=True):
    name: str
    weight: int | None = None


class PluginSetV1(_Strict, kw_only=True):
    enabled: list[PluginV1] = []
    disabled: list[PluginV1] = []


class PluginsV1(_Strict, kw_only=True):
    """The extension points ksched runs, plus upstream's placement points (workload
    scheduling, TopologyAwareWorkloadScheduling): those decode, and only disabling
    plugins there is accepted."""

    pre_enqueue: PluginSetV1 | None = None
    queue_sort: PluginSetV1 | None = None
    pre_filter: PluginSetV1 | None = None
    filter: PluginSetV1 | None = None
    post_filter: PluginSetV1 | None = None
    pre_score: PluginSetV1 | None = None
    score: PluginSetV1 | None = None
    reserve: PluginSetV1 | None = None
    permit: PluginSetV1 | None = None
    pre_bind: PluginSetV1 | None = None
    bind: PluginSetV1 | None = None
    post_bind: PluginSetV1 | None = None
    multi_point: PluginSetV1 | None = None
    placement_generate: PluginSetV1 | None = None
    placement_score: PluginSetV1 | None = None
    placement_feasible: PluginSetV1 | None = None
    pod_group_post_filter: PluginSetV1 | None = None


class PluginConfigV1(_Strict, kw_only=True):
    name: str
    args: dict[str, Any] | None = None


class KubeSchedulerProfileV1(_Strict, kw_only=True):
    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = None
    percentage_of_placements_to_score: int | None = None
    plugins: PluginsV1 | None = None
    plugin_config: list[PluginConfigV1] = []


class LeaderElectionV1(_Strict, kw_only=True):
    """component-base ``LeaderElectionConfiguration``; durations are Go durations."""

    leader_elect: bool | None = None
    lease_duration: str | None = None
    renew_deadline: str | None = None
    retry_period: str | None = None
    resource_lock: str = ""
    resource_name: str = ""
    resource_namespace: str = ""


class ClientConnectionV1(_Strict, kw_only=True):
    """component-base ``ClientConnectionConfiguration``."""

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = ""
    qps: float = 0.0
    burst: int = 0


class KubeSchedulerConfigurationV1(_Strict, kw_only=True):
    api_version: str
    kind: str
    parallelism: int | None = None
    leader_election: LeaderElectionV1 | None = None
    client_connection: ClientConnectionV1 | None = None
    enable_profiling: bool | None = None
    enable_contention_profiling: bool | None = None
    percentage_of_nodes_to_score: int | None = None
    percentage_of_placements_to_score: int | None = None
    pod_initial_backoff_seconds: int | None = None
    pod_max_backoff_seconds: int | None = None
    profiles: list[KubeSchedulerProfileV1] = []
    extenders: list[dict[str, Any]] = []
    delay_cache_until_active: bool | None = None
