"""``ScheduleResult``: what one run of the scheduling algorithm decided for a pod."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from services.framework.api.diagnosis import FitError
from services.framework.api.interface import CycleState, PostFilterResult
from services.framework.api.status import SUCCESS, Status
from services.framework.api.types import Int64Array, PodInfo
from services.framework.runtime.explain import Explanation


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """What one run of the algorithm decided for a pod.

    - ``node`` set, status Success: the pod fits ``node`` (the caller assumes it).
    - ``fit_error`` set, status Unschedulable: no node fits; ``message`` is upstream's
      FailedScheduling text, ``unschedulable_plugins`` the plugins that rejected.
    - status UnschedulableAndUnresolvable without a FitError: there are no nodes.
    - status Error: a plugin failed; ``message`` says which and why.
    """

    pod: PodInfo
    state: CycleState
    node: str | None = None
    status: Status = SUCCESS
    fit_error: FitError | None = None
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    scores: Mapping[str, Int64Array] = field(default_factory=dict)
    """Per Score plugin, normalized scores of the feasible nodes (only when explaining)."""
    explanation: Explanation | None = None
    """Per node filter verdicts and scores (only when explaining; not for errors)."""
    post_filter: PostFilterResult | None = None
    """What PostFilter decided for an unschedulable pod (preemption: the nominated
    node and the victims); None when it did not run or left the nomination alone."""

    @property
    def message(self) -> str:
        return str(self.fit_error) if self.fit_error is not None else self.status.message()

    @property
    def unschedulable_plugins(self) -> frozenset[str]:
        if self.fit_error is None:
            return frozenset()
        return frozenset(self.fit_error.diagnosis.unschedulable_plugins)


__all__ = ["ScheduleResult"]
