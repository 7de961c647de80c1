"""The v1 fields that mean nothing to ksched: validated as upstream validates them,
then ignored with one warning each that says why; ``extenders`` is refused.

``check_ignored`` returns ``(field, why)`` notes; :func:`load_config` logs them on
logger ``ksched.config`` once the whole configuration is valid.
"""

from __future__ import annotations

from typing import Final

from services.common.k8s.durations import parse_go_duration
from services.framework.api.registry import ConfigError, join_path
from services.framework.config.v1 import (
    ClientConnectionV1,
    KubeSchedulerConfigurationV1,
    LeaderElectionV1,
)

NO_APISERVER: Final = (
    "ksched talks to no kube-apiserver: cluster state comes as watch events (on "
    "RabbitMQ, or from the file given to simulate)"
)
WHY_IGNORED: Final = {
    "clientConnection": NO_APISERVER,
    "leaderElection": (
        "ksched elects no leader: scheduler replicas all run at once and reserve "
        "nodes atomically in Redis"
    ),
    "parallelism": "ksched filters and scores all nodes at once (NumPy), with no worker pool",
    "delayCacheUntilActive": "ksched elects no leader, so no standby delays its cache",
    "enableProfiling": "ksched serves no /debug/pprof endpoint (profile it with py-spy)",
    "enableContentionProfiling": "ksched serves no /debug/pprof endpoint",
    "percentageOfPlacementsToScore": (
        "ksched has no placement (workload) scheduling, upstream's alpha "
        "TopologyAwareWorkloadScheduling"
    ),
}
"""Top-level field → why ksched ignores it."""

LEASE_DURATION: Final = 15.0
RENEW_DEADLINE: Final = 10.0
RETRY_PERIOD: Final = 2.0
"""``RecommendedDefaultLeaderElectionConfiguration``, in seconds."""


def check_ignored(config: KubeSchedulerConfigurationV1) -> list[tuple[str, str]]:
    """Validate the ignored fields (ConfigError as upstream's validation would fail)
    and return one ``(field, why ignored)`` note per field the file sets."""
    if config.extenders:
        raise ConfigError(
            "extenders",
            "not supported: ksched calls no scheduler extenders; write the logic as a "
            "plugin instead",
        )
    if config.parallelism is not None and config.parallelism <= 0:
        raise ConfigError(
            "parallelism",
            f"Invalid value: {config.parallelism}: should be an integer value greater than zero",
        )
    if config.leader_election is not None:
        _check_leader_election(config.leader_election, "leaderElection")
    if config.client_connection is not None:
        _check_client_connection(config.client_connection, "clientConnection")
    placements = config.percentage_of_placements_to_score
    if placements is not None and not 0 <= placements <= 100:
        raise ConfigError(
            "percentageOfPlacementsToScore",
            f"Invalid value: {placements}: not in valid range [0-100]",
        )
    present = {
        "clientConnection": config.client_connection,
        "leaderElection": config.leader_election,
        "parallelism": config.parallelism,
        "delayCacheUntilActive": config.delay_cache_until_active,
        "enableProfiling": config.enable_profiling,
        "enableContentionProfiling": config.enable_contention_profiling,
        "percentageOfPlacementsToScore": placements,
    }
    return [(name, WHY_IGNORED[name]) for name, value in present.items() if value is not None]


def parse_duration(text: str, path: str) -> float:
    """A Go duration (``1m30s``, ``-2.5h``, ``0``) in seconds, as ``time.ParseDuration``."""
    seconds = parse_go_duration(text)
    if seconds is None:
        raise ConfigError(path, f'Invalid value: "{text}": time: invalid duration "{text}"')
    return seconds


def _check_leader_election(raw: LeaderElectionV1, path: str) -> None:
    """Upstream's defaults, then ``ValidateLeaderElectionConfiguration`` and the
    scheduler's own "leases only" rule."""
    durations: dict[str, float] = {}
    for name, text, default in (
        ("leaseDuration", raw.lease_duration, LEASE_DURATION),
        ("renewDeadline", raw.renew_deadline, RENEW_DEADLINE),
        ("retryPeriod", raw.retry_period, RETRY_PERIOD),
    ):
        value = parse_duration(text, join_path(path, name)) if text is not None else 0.0
        durations[name] = value if value != 0 else default
    if raw.leader_elect is False:
        return
    for name, value in durations.items():
        if value <= 0:
            raise ConfigError(
                join_path(path, name), f"Invalid value: {value:g}s: must be greater than zero"
            )
    if durations["leaseDuration"] <= durations["renewDeadline"]:
        raise ConfigError(
            join_path(path, "leaseDuration"),
            f"Invalid value: {durations['renewDeadline']:g}s: must be greater than `RenewDeadline`",
        )
    lock = raw.resource_lock or "leases"
    if lock != "leases":
        raise ConfigError(
            join_path(path, "resourceLock"),
            f'Invalid value: "{lock}": resourceLock value must be "leases"',
        )


def _check_client_connection(raw: ClientConnectionV1, path: str) -> None:
    """``ValidateClientConnectionConfiguration``."""
    if raw.burst < 0:
        raise ConfigError(
            join_path(path, "burst"), f"Invalid value: {raw.burst}: must be non-negative"
        )
