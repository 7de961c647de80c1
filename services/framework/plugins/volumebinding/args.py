"""``VolumeBindingArgs`` (kubescheduler.config.k8s.io/v1), defaults and validation."""

from __future__ import annotations

from typing import Final, Self

import msgspec

from services.framework.api.registry import ConfigError, join_path

DEFAULT_BIND_TIMEOUT_SECONDS: Final = 600
STORAGE_CAPACITY_SCORING: Final = False
"""The ``StorageCapacityScoring`` feature gate: alpha and off in the current release, so
VolumeBinding does not score and ``shape`` must not be set."""


class _Args(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"):
    pass


class UtilizationShapePoint(_Args, kw_only=True, frozen=True):
    utilization: int
    """Storage utilization in percent, 0 to 100."""
    score: int
    """Score at that utilization, 0 to 10."""


class VolumeBindingArgs(_Args, kw_only=True, frozen=True):
    bind_timeout_seconds: int | None = None
    """Seconds upstream's PreBind waits for the PV controller to finish binding;
    default 600. ksched's binder applies the binding itself and never waits, so the
    value is validated and kept, nothing more."""
    shape: tuple[UtilizationShapePoint, ...] | None = None
    """The storage-capacity score function; only with StorageCapacityScoring."""

    def defaulted(self) -> Self:
        """``SetDefaults_VolumeBindingArgs`` (the gate being off, no default shape)."""
        if self.bind_timeout_seconds is not None:
            return self
        return msgspec.structs.replace(self, bind_timeout_seconds=DEFAULT_BIND_TIMEOUT_SECONDS)

    def validate(self, path: str) -> None:
        """``ValidateVolumeBindingArgsWithOptions`` with the gate off."""
        timeout = self.bind_timeout_seconds
        if timeout is not None and timeout < 0:
            raise ConfigError(
                join_path(path, "bindTimeoutSeconds"),
                f"Invalid value: {timeout}: invalid BindTimeoutSeconds, should not be a "
                "negative value",
            )
        if self.shape is not None and not STORAGE_CAPACITY_SCORING:
            raise ConfigError(
                join_path(path, "shape"),
                "Invalid value: unexpected field `shape`, remove it or turn on the feature "
                "gate StorageCapacityScoring",
            )
