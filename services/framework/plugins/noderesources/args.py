"""``NodeResourcesFitArgs`` and ``NodeResourcesBalancedAllocationArgs``
(kubescheduler.config.k8s.io/v1), defaults and validation."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final, Self

import msgspec

from contracts.k8s.names import qualified_name_errors
from services.framework.api.registry import ConfigError, join_path

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"
SUPPORTED_STRATEGIES: Final = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)


class _Args(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"):
    pass


class ResourceSpec(_Args, kw_only=True, frozen=True):
    name: str
    weight: int = 0


class UtilizationShapePoint(_Args, kw_only=True, frozen=True):
    utilization: int
    """Percent of the node's capacity requested, 0 to 100."""
    score: int
    """Score at that utilization, 0 to 10 (scaled by 10 onto MaxNodeScore)."""


class RequestedToCapacityRatioParam(_Args, kw_only=True, frozen=True):
    shape: tuple[UtilizationShapePoint, ...] = ()
    """Points of the broken-linear scoring function, by increasing utilization."""


class ScoringStrategy(_Args, kw_only=True, frozen=True):
    type: str = ""
    resources: tuple[ResourceSpec, ...] = ()
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None
    """The function shape, for the RequestedToCapacityRatio type."""


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
        resources = _defaulted_resources(strategy.resources)
        return msgspec.structs.replace(
            self, scoring_strategy=msgspec.structs.replace(strategy, resources=resources)
        )

    def validate(self, path: str) -> None:
        """``ValidateNodeResourcesFitArgs``."""
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
        for resource, rpath in _unique_resources(strategy.resources, spath):
            if not 1 <= resource.weight <= 100:
                raise ConfigError(
                    join_path(rpath, "weight"),
                    f"Invalid value: {resource.weight}: resource weight of {resource.name} "
                    "not in valid range [1, 100]",
                )
        ratio = strategy.requested_to_capacity_ratio
        if ratio is not None:  # upstream reports a bad shape at scoringStrategy.shape
            validate_function_shape(ratio.shape, join_path(spath, "shape"))
        elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            # Upstream would dereference the missing parameter (a nil pointer) in NewFit.
            raise ConfigError(join_path(spath, "requestedToCapacityRatio"), "Required value")


MAX_CUSTOM_PRIORITY_SCORE: Final = 10
"""``config.MaxCustomPriorityScore``: the top of a shape's score range."""


def validate_function_shape(shape: tuple[UtilizationShapePoint, ...], path: str) -> None:
    """``validateFunctionShape``: at least one point, utilizations strictly increasing
    and within [0, 100], scores within [0, 10]."""
    if not shape:
        raise ConfigError(path, "Required value: at least one point must be specified")
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            raise ConfigError(
                join_path(path, f"[{i}].utilization"),
                f"Invalid value: {shape[i].utilization}: values must be sorted in increasing order",
            )
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            raise ConfigError(
                join_path(path, f"[{i}].utilization"),
                f"Invalid value: {point.utilization}: not in valid range [0, 100]",
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(
                join_path(path, f"[{i}].score"),
                f"Invalid value: {point.score}: "
                f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
            )


class NodeResourcesBalancedAllocationArgs(_Args, kw_only=True, frozen=True):
    resources: tuple[ResourceSpec, ...] = ()
    """Resources whose requested fractions should be balanced; cpu and memory by default."""

    def defaulted(self) -> Self:
        """``SetDefaults_NodeResourcesBalancedAllocationArgs``: cpu and memory when
        empty; a weight of 0 means 1."""
        return msgspec.structs.replace(self, resources=_defaulted_resources(self.resources))

    def validate(self, path: str) -> None:
        """``ValidateNodeResourcesBalancedAllocationArgs``: names unique, weights 1."""
        for resource, rpath in _unique_resources(self.resources, path):
            if resource.weight != 1:
                raise ConfigError(
                    join_path(rpath, "weight"), f"Invalid value: {resource.weight}: must be 1"
                )


def _defaulted_resources(resources: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
    """``resources``, cpu and memory when empty; a weight of 0 means 1."""
    return tuple(
        r if r.weight else ResourceSpec(name=r.name, weight=1)
        for r in resources or DEFAULT_RESOURCES
    )


def _unique_resources(
    resources: Sequence[ResourceSpec], path: str
) -> Iterator[tuple[ResourceSpec, str]]:
    """Each of ``resources`` with its field path (``<path>.resources[i]``), in order;
    ConfigError "Duplicate value" at the first name seen before."""
    seen: set[str] = set()
    for i, resource in enumerate(resources):
        rpath = join_path(path, f"resources[{i}]")
        if resource.name in seen:
            raise ConfigError(join_path(rpath, "name"), f'Duplicate value: "{resource.name}"')
        seen.add(resource.name)
        yield resource, rpath


def _label_name(name: str, field: str) -> None:
    if qualified_name_errors(name):
        raise ConfigError(field, f"Invalid value: {name!r}: must be a qualified name")
