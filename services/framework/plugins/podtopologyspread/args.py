"""``PodTopologySpreadArgs`` (kubescheduler.config.k8s.io/v1), defaults and validation."""

from __future__ import annotations

from typing import Any, Final, Self

import msgspec

from contracts.k8s import TopologySpreadConstraint
from contracts.k8s.names import qualified_name_errors
from services.framework.api.registry import ConfigError, join_path
from services.framework.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
)

SYSTEM_DEFAULTING: Final = "System"
LIST_DEFAULTING: Final = "List"


class _Args(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"):
    pass


class DefaultConstraint(_Args, kw_only=True, frozen=True):
    """A ``v1.TopologySpreadConstraint`` in the args; decoded strictly, and missing
    fields take Go's zero values so that validation reports them as upstream does."""

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: dict[str, Any] | None = None
    """Must stay unset: default constraints get the pod's default selector."""
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()

    def as_constraint(self) -> TopologySpreadConstraint:
        return TopologySpreadConstraint(
            max_skew=self.max_skew,
            topology_key=self.topology_key,
            when_unsatisfiable=self.when_unsatisfiable,
            min_domains=self.min_domains,
            node_affinity_policy=self.node_affinity_policy,
            node_taints_policy=self.node_taints_policy,
            match_label_keys=list(self.match_label_keys),
        )


class PodTopologySpreadArgs(_Args, kw_only=True, frozen=True):
    default_constraints: tuple[DefaultConstraint, ...] = ()
    """Constraints for pods that have none, when ``defaultingType`` is List."""
    defaulting_type: str = ""
    """System (default): the system default constraints (hostname maxSkew 3, zone
    maxSkew 5, both ScheduleAnyway), and ``defaultConstraints`` must be empty; List:
    ``defaultConstraints``."""

    def defaulted(self) -> Self:
        """``SetDefaults_PodTopologySpreadArgs``: an unset defaultingType is System."""
        if self.defaulting_type:
            return self
        return msgspec.structs.replace(self, defaulting_type=SYSTEM_DEFAULTING)

    def constraints(self) -> tuple[TopologySpreadConstraint, ...]:
        """The default constraints in effect."""
        if self.defaulting_type == SYSTEM_DEFAULTING:
            return SYSTEM_DEFAULT_CONSTRAINTS
        return tuple(c.as_constraint() for c in self.default_constraints)

    def validate(self, path: str) -> None:
        """``ValidatePodTopologySpreadArgs``; the first error, in upstream's order."""
        kind = self.defaulting_type
        if kind not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            raise ConfigError(
                join_path(path, "defaultingType"),
                f'Unsupported value: "{kind}": supported values: "System", "List"',
            )
        if kind == SYSTEM_DEFAULTING and self.default_constraints:
            raise ConfigError(
                join_path(path, "defaultingType"),
                f'Invalid value: "{kind}": when .defaultConstraints are not empty',
            )
        listed = join_path(path, "defaultConstraints")
        for i, c in enumerate(self.default_constraints):
            _validate_constraint(c, join_path(listed, f"[{i}]"))
            for earlier in self.default_constraints[:i]:
                same = (earlier.topology_key, earlier.when_unsatisfiable)
                if same == (c.topology_key, c.when_unsatisfiable):
                    raise ConfigError(
                        join_path(listed, f"[{i}]"),
                        f'Duplicate value: "{{{c.topology_key}, {c.when_unsatisfiable}}}"',
                    )


def _validate_constraint(c: DefaultConstraint, path: str) -> None:
    if c.max_skew <= 0:
        raise ConfigError(
            join_path(path, "maxSkew"), f"Invalid value: {c.max_skew}: not in valid range (0, inf)"
        )
    key_path = join_path(path, "topologyKey")
    if not c.topology_key:
        raise ConfigError(key_path, "Required value: can not be empty")
    for error in qualified_name_errors(c.topology_key):
        raise ConfigError(key_path, f'Invalid value: "{c.topology_key}": {error}')
    action_path = join_path(path, "whenUnsatisfiable")
    if not c.when_unsatisfiable:
        raise ConfigError(action_path, "Required value: can not be empty")
    if c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise ConfigError(
            action_path,
            f'Unsupported value: "{c.when_unsatisfiable}": supported values: '
            f'"{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"',
        )
    if c.label_selector is not None:
        raise ConfigError(
            join_path(path, "labelSelector"),
            "Forbidden: constraint must not define a selector, as they deduced for each pod",
        )
