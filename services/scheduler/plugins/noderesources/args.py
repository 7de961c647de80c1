"""``NodeResourcesFitArgs`` (kubescheduler.config.k8s.io/v1), defaults and validation."""

from __future__ import annotations

import re
from typing import Any, Final, Self

import msgspec

from services.scheduler.framework.registry import ConfigError, join_path

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"
SUPPORTED_STRATEGIES: Final = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
_LABEL_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)


class _Args(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"):
    pass


class ResourceSpec(_Args, kw_only=True, frozen=True):
    name: str
    weight: int = 0


class ScoringStrategy(_Args, kw_only=True, frozen=True):
    type: str = ""
    resources: tuple[ResourceSpec, ...] = ()
    requested_to_capacity_ratio: dict[str, Any] | None = None


DEFAULT_RESOURCES: Final = (
    ResourceSpec(name="cpu", weight=1),
    ResourceSpec(name="memory", weight=1),
)


class NodeResourcesFitArgs(_Args, kw_only=True, frozen=True):
    ignored_resources: tuple[str, ...] = ()
    """Extended resources the Filter does not check."""
    ignored_resource_groups: tuple[str, ...] = ()
    """Extended resource groups (the part before ``/``) the Filter does not check."""
    scoring_strategy: ScoringStrategy | None = None
    """How Score ranks nodes; defaults to LeastAllocated over cpu and memory, weight 1."""

    def defaulted(self) -> Self:
        """``SetDefaults_NodeResourcesFitArgs``."""
        strategy = self.scoring_strategy or ScoringStrategy(
            type=LEAST_ALLOCATED, resources=DEFAULT_RESOURCES
        )
        resources = strategy.resources or DEFAULT_RESOURCES
        resources = tuple(r if r.weight else ResourceSpec(name=r.name, weight=1) for r in resources)
        return msgspec.structs.replace(
            self, scoring_strategy=msgspec.structs.replace(strategy, resources=resources)
        )

    def validate(self, path: str) -> None:
        """``ValidateNodeResourcesFitArgs``; RequestedToCapacityRatio is not supported yet."""
        for i, name in enumerate(self.ignored_resources):
            _label_name(name, join_path(path, f"ignoredResources[{i}]"))
        for i, group in enumerate(self.ignored_resource_groups):
            field = join_path(path, f"ignoredResourceGroups[{i}]")
            if "/" in group:
                raise ConfigError(
                    field, f"Invalid value: {group!r}: resource group name can't contain '/'"
                )
            _label_name(group, field)
        strategy = self.scoring_strategy
        if strategy is None:
            return
        spath = join_path(path, "scoringStrategy")
        if strategy.type not in SUPPORTED_STRATEGIES:
            supported = ", ".join(f'"{s}"' for s in SUPPORTED_STRATEGIES)
            raise ConfigError(
                join_path(spath, "type"),
                f'Unsupported value: "{strategy.type}": supported values: {supported}',
            )
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            raise ConfigError(
                join_path(spath, "type"), "RequestedToCapacityRatio is not supported by ksched yet"
            )
        seen: set[str] = set()
        for i, resource in enumerate(strategy.resources):
            rpath = join_path(spath, f"resources[{i}]")
            if resource.name in seen:
                raise ConfigError(join_path(rpath, "name"), f'Duplicate value: "{resource.name}"')
            seen.add(resource.name)
            if not 1 <= resource.weight <= 100:
                raise ConfigError(
                    join_path(rpath, "weight"),
                    f"Invalid value: {resource.weight}: resource weight of {resource.name} "
                    "not in valid range [1, 100]",
                )


def _label_name(name: str, field: str) -> None:
    if len(name.rpartition("/")[2]) > 63 or not _LABEL_NAME.match(name):
        raise ConfigError(field, f"Invalid value: {name!r}: must be a qualified name")
