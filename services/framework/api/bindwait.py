"""ksched: a PreBind plugin that waits for the cluster after its PreBind (upstream's
DynamicResources polls the claims' binding conditions inside PreBind).

In ksched the binder runs many binding cycles per batch, one batch at a time, and
publishes a batch's decisions together; a PreBind that slept there would hold up every
pod behind it. So such a plugin's PreBind only leaves its effects and asks to wait
(:meth:`WaitsAfterPreBind.binding_wait`); the binder publishes those effects at once,
records the pod as waiting at PreBind (a ``WaitingRecord`` with ``point="PreBind"``,
shared by every binder replica as Permit's waiting pods are) and, every poll, asks the
plugin whether the objects it waits on are ready (:meth:`WaitsAfterPreBind.binding_ready`)::

    PreBind ─▶ effects published, record "waiting" ─┬─ ready ─▶ PreBind again (resumed
                                                    │           state: nothing left to
                                                    │           do) ─▶ Bind ─▶ PostBind
                                                    └─ failed, or the timeout passed ─▶
                                                       Unreserve, the pod back to the
                                                       queue (error)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from services.framework.api.interface import CycleState
from services.framework.api.status import Status


@dataclass(frozen=True, slots=True)
class BindingWait:
    """What a PreBind plugin waits for after its PreBind."""

    timeout: float
    """Seconds from now after which the binding cycle fails."""
    state: bytes
    """The plugin's binding state to resume with (replaces its part of the BindRequest's
    ``plugin_state``): PreBind run on it again has nothing left to publish."""
    reason: str
    message: str
    """The Normal Event the binder publishes about the pod when it starts waiting
    (upstream's ``BindingConditionsPending``)."""


@runtime_checkable
class WaitsAfterPreBind(Protocol):
    """A PreBind plugin whose PreBind may ask the binder to wait (see the module)."""

    @property
    def name(self) -> str: ...

    @property
    def waits_on(self) -> str:
        """The kind (``resourceclaim``) whose stored objects :meth:`binding_ready` reads."""
        ...

    def binding_wait(self, state: CycleState, node: str) -> BindingWait | None:
        """After a successful PreBind in ``state``: what to wait for (None: bind now)."""
        ...

    def binding_ready(
        self, resumed: CycleState, objects: Mapping[str, bytes], now: float, deadline: float
    ) -> Status | None:
        """``resumed``: a CycleState restored from :attr:`BindingWait.state`;
        ``objects``: the store's objects of :attr:`waits_on` (key → JSON); ``deadline``:
        when the wait runs out (clock seconds). None: keep waiting; Success: bind;
        anything else fails the binding cycle with its message (an Error, as upstream's
        PreBind errors)."""
        ...
