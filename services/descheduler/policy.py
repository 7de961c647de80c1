"""``DeschedulerPolicy`` (``descheduler/v1alpha2``): decoding, defaults, validation.

Decoding is strict: an unknown field anywhere, in the policy or in a plugin's args, is
a :class:`~services.framework.api.registry.ConfigError` naming the file, line and field
(``policy.yaml:9: profiles[0].pluginConfig[1].args.foo: unknown field``), and the
service exits 2 with it. Upstream decodes plugin args strictly but drops unknown
top-level fields; ksched refuses both, so a misspelt limit is never silently ignored.
The plugin sets accept upstream's keys (``presort``, ``sort``, ``deschedule``,
``balance``, ``filter``, ``preevictionfilter``) and ``preEvictionFilter`` as the
descheduler's documentation writes it.

Defaults and checks as upstream's ``decode``/``setDefaults``/
``validateDeschedulerConfiguration``: every profile gets DefaultEvictor at the front
of its filter and preEvictionFilter plugins and a DefaultEvictor pluginConfig when it
has none; a pluginConfig of an unknown plugin, and a plugin enabled at an extension
point it does not implement, are errors with upstream's words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec

from services.common.k8s.labels import SelectorError, parse
from services.descheduler.api import Registry
from services.framework.api.registry import ConfigError, convert_strict, decode_args, join_path
from services.framework.config.source import Source, check_type_meta, read_source

API_VERSION: Final = "descheduler/v1alpha2"
KIND: Final = "DeschedulerPolicy"
POINTS: Final = ("deschedule", "balance", "filter", "preEvictionFilter")


class PluginSetV1Alpha2(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    enabled: list[str] = []
    disabled: list[str] = []


class PluginsV1Alpha2(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    presort: PluginSetV1Alpha2 = PluginSetV1Alpha2()
    sort: PluginSetV1Alpha2 = PluginSetV1Alpha2()
    deschedule: PluginSetV1Alpha2 = PluginSetV1Alpha2()
    balance: PluginSetV1Alpha2 = PluginSetV1Alpha2()
    filter: PluginSetV1Alpha2 = PluginSetV1Alpha2()
    preevictionfilter: PluginSetV1Alpha2 | None = None
    preEvictionFilter: PluginSetV1Alpha2 | None = None


class PluginConfigV1Alpha2(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    name: str
    args: dict[str, Any] | None = None


class ProfileV1Alpha2(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    name: str
    plugin_config: list[PluginConfigV1Alpha2] = []
    plugins: PluginsV1Alpha2 = PluginsV1Alpha2()


class SecretReference(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    namespace: str = ""
    name: str = ""


class AuthToken(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    secret_reference: SecretReference | None = None


class Prometheus(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    url: str = ""
    auth_token: AuthToken | None = None


class MetricsProvider(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    source: str = ""
    prometheus: Prometheus | None = None


class MetricsCollector(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    enabled: bool = False


class DeschedulerPolicyV1Alpha2(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    api_version: str = ""
    kind: str = ""
    profiles: list[ProfileV1Alpha2] = []
    node_selector: str | None = None
    max_no_of_pods_to_evict_per_node: int | None = None
    max_no_of_pods_to_evict_per_namespace: int | None = None
    max_no_of_pods_to_evict_total: int | None = None
    eviction_failure_event_notification: bool | None = None
    metrics_collector: MetricsCollector | None = None
    metrics_providers: list[MetricsProvider] = []
    grace_period_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    plugins: Mapping[str, tuple[str, ...]]
    """Extension point → the enabled plugins, in order."""
    args: Mapping[str, Any]
    """Plugin name → its decoded, defaulted, validated args."""


@dataclass(frozen=True, slots=True)
class Policy:
    profiles: tuple[Profile, ...]
    node_selector: str = ""
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_total: int | None = None
    eviction_failure_event_notification: bool = False
    grace_period_seconds: int | None = None
    metrics_collector: bool = False
    metrics_providers: tuple[MetricsProvider, ...] = ()

    @property
    def collects_metrics(self) -> bool:
        """Whether the descheduler runs a metrics collector (upstream creates its
        metrics client for ``metricsCollector.enabled`` or a KubernetesMetrics
        provider); without one, metricsUtilization from metrics-server fails."""
        return self.metrics_collector or any(
            p.source == "KubernetesMetrics" for p in self.metrics_providers
        )

    @property
    def prometheus(self) -> Prometheus | None:
        """The ``Prometheus`` metrics provider's settings (``getPrometheusConfig``)."""
        for provider in self.metrics_providers:
            if provider.source == "Prometheus":
                return provider.prometheus
        return None

    def prometheus_queries(self) -> list[str]:
        """The queries of the enabled plugins whose ``metricsUtilization`` reads
        Prometheus, each once, in profile order."""
        queries = []
        for profile in self.profiles:
            enabled = {name for names in profile.plugins.values() for name in names}
            for name, args in profile.args.items():
                metrics = getattr(args, "metrics_utilization", None)
                if name not in enabled or metrics is None or metrics.source != "Prometheus":
                    continue
                if metrics.prometheus is not None and metrics.prometheus.query:
                    queries.append(metrics.prometheus.query)
        return list(dict.fromkeys(queries))


def load_policy(source: str | Path | Mapping[str, Any], registry: Registry) -> Policy:
    """Load and validate a policy file (or parsed mapping). Raises ConfigError whose
    message names the file, line and field."""
    where = Source()
    raw: object = source
    if isinstance(source, str | Path):
        raw, where = read_source(source)
    try:
        return _policy(raw, registry)
    except ConfigError as error:
        raise where.locate(error) from None


def _policy(raw: object, registry: Registry) -> Policy:
    if not isinstance(raw, Mapping):
        raise ConfigError("", "the policy must be a mapping")
    policy = convert_strict(raw, DeschedulerPolicyV1Alpha2, "")
    check_type_meta(policy.api_version, policy.kind, want_version=API_VERSION, want_kind=KIND)
    for field, value in (
        ("maxNoOfPodsToEvictPerNode", policy.max_no_of_pods_to_evict_per_node),
        ("maxNoOfPodsToEvictPerNamespace", policy.max_no_of_pods_to_evict_per_namespace),
        ("maxNoOfPodsToEvictTotal", policy.max_no_of_pods_to_evict_total),
        ("gracePeriodSeconds", policy.grace_period_seconds),
    ):
        if value is not None and value < 0:
            raise ConfigError(field, f"Invalid value: {value}: must be a non-negative integer")
    if policy.node_selector:
        try:
            parse(policy.node_selector)
        except SelectorError as error:
            raise ConfigError("nodeSelector", str(error)) from None
    _check_metrics(policy)
    names: set[str] = set()
    profiles = []
    for i, raw_profile in enumerate(policy.profiles):
        path = f"profiles[{i}]"
        if raw_profile.name in names:
            raise ConfigError(join_path(path, "name"), f'Duplicate value: "{raw_profile.name}"')
        names.add(raw_profile.name)
        profiles.append(_profile(raw_profile, registry, path))
    return Policy(
        profiles=tuple(profiles),
        node_selector=policy.node_selector or "",
        max_per_node=policy.max_no_of_pods_to_evict_per_node,
        max_per_namespace=policy.max_no_of_pods_to_evict_per_namespace,
        max_total=policy.max_no_of_pods_to_evict_total,
        eviction_failure_event_notification=bool(policy.eviction_failure_event_notification),
        grace_period_seconds=policy.grace_period_seconds,
        metrics_collector=bool(policy.metrics_collector and policy.metrics_collector.enabled),
        metrics_providers=tuple(policy.metrics_providers),
    )


def _check_metrics(policy: DeschedulerPolicyV1Alpha2) -> None:
    seen: dict[str, MetricsProvider] = {}
    for i, provider in enumerate(policy.metrics_providers):
        path = f"metricsProviders[{i}]"
        if provider.source not in ("KubernetesMetrics", "Prometheus"):
            raise ConfigError(
                join_path(path, "source"),
                f'Unsupported value: "{provider.source}": supported values: '
                '"KubernetesMetrics", "Prometheus"',
            )
        if provider.source in seen:
            raise ConfigError(
                path,
                f'metric provider "{provider.source}" is already configured, each source can '
                "be configured only once",
            )
        seen[provider.source] = provider
    collector = policy.metrics_collector
    if "KubernetesMetrics" in seen and collector is not None and collector.enabled:
        raise ConfigError(
            "metricsCollector",
            "it is not allowed to combine metrics provider when metrics collector is enabled",
        )
    prometheus = seen.get("Prometheus")
    if prometheus is not None:
        config = prometheus.prometheus
        if config is None:
            raise ConfigError(
                "metricsProviders",
                "prometheus configuration is required when prometheus source is enabled",
            )
        if not config.url:
            raise ConfigError(
                "metricsProviders", "prometheus URL is required when prometheus is enabled"
            )
        if config.auth_token is not None:
            ref = config.auth_token.secret_reference
            if ref is None:
                raise ConfigError(
                    "metricsProviders",
                    "prometheus authToken secret is expected to be set when authToken field is",
                )
            if not ref.name or not ref.namespace:
                raise ConfigError(
                    "metricsProviders",
                    "prometheus authToken secret reference does not set both namespace and name",
                )


def _profile(raw: ProfileV1Alpha2, registry: Registry, path: str) -> Profile:
    args: dict[str, Any] = {}
    for j, config in enumerate(raw.plugin_config):
        where = join_path(path, f"pluginConfig[{j}]")
        entry = registry.get(config.name)
        if entry is None:
            raise ConfigError(
                join_path(where, "name"),
                f"in profile {raw.name}: plugin {config.name} in pluginConfig not registered",
            )
        args[config.name] = decode_args(
            config.name, entry.args_type, config.args, join_path(where, "args")
        )
    sets = raw.plugins
    evictor_set = sets.preEvictionFilter or sets.preevictionfilter or PluginSetV1Alpha2()
    enabled = {
        "deschedule": list(sets.deschedule.enabled),
        "balance": list(sets.balance.enabled),
        "filter": list(sets.filter.enabled),
        "preEvictionFilter": list(evictor_set.enabled),
    }
    for point in ("filter", "preEvictionFilter"):
        if "DefaultEvictor" not in enabled[point]:
            enabled[point].insert(0, "DefaultEvictor")
    for point in POINTS:
        wrong = sorted(
            {n for n in enabled[point] if n not in registry or point not in registry[n].points()}
        )
        if wrong:
            raise ConfigError(
                join_path(path, f"plugins.{point}.enabled"),
                f'profile "{raw.name}" configures {point} extension point of non-existing '
                f"plugins: map[{' '.join(f'{n}:{{}}' for n in wrong)}]",
            )
    for point in POINTS:
        for name in enabled[point]:
            if name not in args:
                entry = registry[name]
                args[name] = decode_args(name, entry.args_type, None, "")
    return Profile(raw.name, {p: tuple(enabled[p]) for p in POINTS}, args)


__all__ = [
    "API_VERSION",
    "KIND",
    "Policy",
    "Profile",
    "Prometheus",
    "load_policy",
]
