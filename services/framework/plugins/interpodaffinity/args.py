"""``InterPodAffinityArgs`` (kubescheduler.config.k8s.io/v1), defaults and validation."""

from __future__ import annotations

from typing import Final, Self

import msgspec

from services.framework.api.registry import ConfigError, join_path

DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1
MIN_HARD_POD_AFFINITY_WEIGHT: Final = 0
MAX_HARD_POD_AFFINITY_WEIGHT: Final = 100


class InterPodAffinityArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    hard_pod_affinity_weight: int | None = None
    """Score weight (0-100) an existing pod's *required* affinity term adds to the nodes
    of its topology when it selects the incoming pod. Default 1; 0 ignores such terms."""
    ignore_preferred_terms_of_existing_pods: bool = False
    """Skip scoring existing pods' terms when the incoming pod has no preferred
    (anti-)affinity terms: faster, at the cost of ignoring their preferences. Default
    false."""

    @property
    def hard_weight(self) -> int:
        """The hard pod affinity weight, defaulted."""
        weight = self.hard_pod_affinity_weight
        return DEFAULT_HARD_POD_AFFINITY_WEIGHT if weight is None else weight

    def defaulted(self) -> Self:
        """``SetDefaults_InterPodAffinityArgs``."""
        return msgspec.structs.replace(self, hard_pod_affinity_weight=self.hard_weight)

    def validate(self, path: str) -> None:
        """``ValidateInterPodAffinityArgs``."""
        weight = self.hard_weight
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            raise ConfigError(
                join_path(path, "hardPodAffinityWeight"),
                f"Invalid value: {weight}: not in valid range "
                f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
            )
