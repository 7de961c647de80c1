"""``DynamicResourcesArgs`` (kubescheduler.config.k8s.io/v1): defaults and validation
as upstream's, with the feature gates read once when the args are decoded."""

from __future__ import annotations

from typing import Final, Self

import msgspec

from services.common import features
from services.common.k8s.durations import format_go_duration, parse_go_duration
from services.framework.api.registry import ConfigError, join_path

FILTER_TIMEOUT_DEFAULT: Final = "10s"
"""``DynamicResourcesFilterTimeoutDefault``."""
BINDING_TIMEOUT_DEFAULT: Final = "600s"
"""``DynamicResourcesBindingTimeoutDefault``."""


def binding_conditions_enabled() -> bool:
    """DRADeviceBindingConditions and DRAResourceClaimDeviceStatus, both needed."""
    return features.enabled("DRADeviceBindingConditions") and features.enabled(
        "DRAResourceClaimDeviceStatus"
    )


class DynamicResourcesArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    filter_timeout: str | None = None
    """A Go duration (``10s``): how long Filter may spend allocating devices for one
    node before the node is rejected with "timed out trying to allocate devices";
    ``0`` turns the limit off. Default 10s (DRASchedulerFilterTimeout)."""
    binding_timeout: str | None = None
    """A Go duration, at least 1s: how long a claim's devices may wait for their
    binding conditions after allocation before Filter calls the claim unavailable
    (and PostFilter frees it). Default 600s (DRADeviceBindingConditions)."""

    def defaulted(self) -> Self:
        """``SetDefaults_DynamicResourcesArgs``: each default only with its gate on."""
        filter_timeout, binding_timeout = self.filter_timeout, self.binding_timeout
        if filter_timeout is None and features.enabled("DRASchedulerFilterTimeout"):
            filter_timeout = FILTER_TIMEOUT_DEFAULT
        if binding_timeout is None and binding_conditions_enabled():
            binding_timeout = BINDING_TIMEOUT_DEFAULT
        return msgspec.structs.replace(
            self, filter_timeout=filter_timeout, binding_timeout=binding_timeout
        )

    def validate(self, path: str) -> None:
        """``ValidateDynamicResourcesArgs``: setting a field whose gate is off is an
        error too."""
        filter_path = join_path(path, "filterTimeout")
        if self.filter_timeout is not None:
            if not features.enabled("DRASchedulerFilterTimeout"):
                raise ConfigError(
                    filter_path, "Forbidden: DRASchedulingFilterTimeout feature gate is disabled"
                )
            seconds = _parse(self.filter_timeout, filter_path)
            if seconds < 0:
                raise ConfigError(
                    filter_path,
                    f"Invalid value: {format_go_duration(seconds)}: must be zero or positive",
                )
        binding_path = join_path(path, "bindingTimeout")
        if self.binding_timeout is not None:
            if not binding_conditions_enabled():
                raise ConfigError(
                    binding_path,
                    "Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus "
                    "feature gate is disabled",
                )
            seconds = _parse(self.binding_timeout, binding_path)
            if seconds < 1:
                raise ConfigError(
                    binding_path,
                    f"Invalid value: {format_go_duration(seconds)}: must be at least 1 second",
                )

    @property
    def filter_timeout_seconds(self) -> float:
        """0 when there is no limit (unset, ``0``, or the gate off)."""
        if self.filter_timeout is None or not features.enabled("DRASchedulerFilterTimeout"):
            return 0.0
        return _parse(self.filter_timeout, "filterTimeout")

    @property
    def binding_timeout_seconds(self) -> float:
        text = self.binding_timeout or BINDING_TIMEOUT_DEFAULT
        return _parse(text, "bindingTimeout")


def _parse(text: str, path: str) -> float:
    seconds = parse_go_duration(text)
    if seconds is None:
        raise ConfigError(path, f'Invalid value: "{text}": time: invalid duration "{text}"')
    return seconds
