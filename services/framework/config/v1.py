"""``kubescheduler.config.k8s.io/v1`` as written in a file: strict wire structs.

Unknown fields are errors (upstream decodes the configuration strictly). Only the
fields ksched understands today are accepted; the rest of the upstream schema
(leaderElection, clientConnection, extenders…) is refused by name rather than ignored.
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


class PluginConfigV1(_Strict, kw_only=True):
    name: str
    args: dict[str, Any] | None = None


class KubeSchedulerProfileV1(_Strict, kw_only=True):
    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = None
    plugins: PluginsV1 | None = None
    plugin_config: list[PluginConfigV1] = []


class KubeSchedulerConfigurationV1(_Strict, kw_only=True):
    api_version: str
    kind: str
    profiles: list[KubeSchedulerProfileV1] = []
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int | None = None
    pod_max_backoff_seconds: int | None = None
