"""ExternalPermit: pods wait at Permit until someone outside ksched allows them.

A built-in Permit plugin (not in the default profile) for quotas, approvals and
maintenance windows: every pod its ``selector`` picks waits, for at most
``timeoutSeconds``, until an allow for plugin ``ExternalPermit`` arrives on
``ksched.permit`` (routing key ``allow.<namespace>``); a reject there, or the timeout,
sends the pod back to the queue with the reason. Each waiting pod is announced on
``ksched.decisions`` (``waiting.<namespace>``). The binder applies the decisions; this
plugin only asks the pods to wait.

Args (``ExternalPermitArgs``): ``timeoutSeconds`` (default 60, 1 to 900: upstream caps
any Permit wait at 15 minutes) and ``selector`` (a metav1 LabelSelector; absent or empty:
every pod).
"""

from __future__ import annotations

from typing import Final, Self

import msgspec

from contracts.k8s import LabelSelector
from services.common.k8s.labels import matches_label_selector
from services.framework.api.interface import CycleState, Handle, PermitPlugin
from services.framework.api.registry import ConfigError, PluginEntry, join_path
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo

NAME: Final = "ExternalPermit"
DEFAULT_TIMEOUT_SECONDS: Final = 60
MAX_TIMEOUT_SECONDS: Final = 900
_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


class ExternalPermitArgs(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    timeout_seconds: int | None = None
    """How long a selected pod waits for an approval; default 60, at most 900."""
    selector: LabelSelector | None = None
    """The pods that need an approval; absent or empty: every pod."""

    def defaulted(self) -> Self:
        if self.timeout_seconds is not None:
            return self
        return msgspec.structs.replace(self, timeout_seconds=DEFAULT_TIMEOUT_SECONDS)

    def validate(self, path: str) -> None:
        timeout = self.timeout_seconds
        if timeout is None or not 1 <= timeout <= MAX_TIMEOUT_SECONDS:
            raise ConfigError(
                join_path(path, "timeoutSeconds"),
                f"Invalid value: {timeout}: must be between 1 and {MAX_TIMEOUT_SECONDS}",
            )
        if self.selector is None:
            return
        for i, expr in enumerate(self.selector.match_expressions):
            where = join_path(path, f"selector.matchExpressions[{i}]")
            if expr.operator not in _OPERATORS:
                raise ConfigError(
                    join_path(where, "operator"),
                    f'Unsupported value: "{expr.operator}": supported values: '
                    '"DoesNotExist", "Exists", "In", "NotIn"',
                )
            needs_values = expr.operator in ("In", "NotIn")
            if needs_values and not expr.values:
                raise ConfigError(
                    join_path(where, "values"),
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                )
            if not needs_values and expr.values:
                raise ConfigError(
                    join_path(where, "values"),
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )


class ExternalPermit(PermitPlugin):
    name: Final = NAME

    def __init__(self, args: ExternalPermitArgs) -> None:
        self.timeout = float(args.timeout_seconds or DEFAULT_TIMEOUT_SECONDS)
        self.selector = args.selector or LabelSelector()

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]:
        """Wait (``timeoutSeconds``) for the selected pods; the others pass."""
        if matches_label_selector(self.selector, pod.pod.metadata.labels):
            return Status(Code.Wait), self.timeout
        return SUCCESS, 0.0


def new(args: ExternalPermitArgs, handle: Handle) -> ExternalPermit:
    return ExternalPermit(args)


ENTRY: Final = PluginEntry(NAME, ExternalPermit, new, ExternalPermitArgs)
