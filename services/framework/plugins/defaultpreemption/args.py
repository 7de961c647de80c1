"""``DefaultPreemptionArgs`` (kubescheduler.config.k8s.io/v1), defaults and validation."""

from __future__ import annotations

from typing import Final, Self

import msgspec

from services.framework.api.registry import ConfigError, join_path

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE: Final = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE: Final = 100


class DefaultPreemptionArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    min_candidate_nodes_percentage: int | None = None
    """Fewest candidate nodes to dry-run preemption on, as a percentage (0-100) of the
    nodes; default 10."""
    min_candidate_nodes_absolute: int | None = None
    """Fewest candidate nodes as a count (>= 0); default 100. Candidates are
    ``max(nodes * percentage / 100, absolute)``, capped at the node count."""

    def defaulted(self) -> Self:
        """``SetDefaults_DefaultPreemptionArgs``."""
        percentage, absolute = (
            self.min_candidate_nodes_percentage,
            self.min_candidate_nodes_absolute,
        )
        return msgspec.structs.replace(
            self,
            min_candidate_nodes_percentage=(
                DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE if percentage is None else percentage
            ),
            min_candidate_nodes_absolute=(
                DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE if absolute is None else absolute
            ),
        )

    def validate(self, path: str) -> None:
        """``ValidateDefaultPreemptionArgs`` (the first of its errors)."""
        percentage = self.min_candidate_nodes_percentage or 0
        absolute = self.min_candidate_nodes_absolute or 0
        percentage_path = join_path(path, "minCandidateNodesPercentage")
        absolute_path = join_path(path, "minCandidateNodesAbsolute")
        if not 0 <= percentage <= 100:
            raise ConfigError(
                percentage_path, f"Invalid value: {percentage}: not in valid range [0, 100]"
            )
        if absolute < 0:
            raise ConfigError(
                absolute_path, f"Invalid value: {absolute}: not in valid range [0, inf)"
            )
        if percentage == 0 and absolute == 0:
            raise ConfigError(
                percentage_path,
                "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
            )
