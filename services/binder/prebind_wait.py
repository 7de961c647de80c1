"""Pods waiting at PreBind (:mod:`services.framework.api.bindwait`): the binder's side.

A binding cycle whose PreBind asked to wait is parked, not held: the binder publishes
the PreBind effects (DynamicResources' claims) and the plugin's Event with the batch,
and records the pod in the store as a waiting pod at ``PreBind`` (:func:`parked`), with
the BindRequest it resumes with (``permit`` set, the plugin's resumed state). Other
pods' binding cycles go on meanwhile, and any binder replica resumes it:

    parked ──▶ poll (every timer tick, any replica): ``binding_ready`` on the stored
               objects ─┬─ None ──────────▶ still waiting
                        ├─ Success ───────▶ allowed  ─▶ BindRequest again: PreBind
                        │                               (nothing left), Bind, PostBind
                        └─ Error ─────────▶ rejected ─▶ BindRequest again: Unreserve,
                                                        the pod back to the queue (error)

The store's own deadline (``pending``) is :data:`GRACE` later than the plugin's, so the
poll words the timeout; the store's expiry only catches a wait no binder polled.
"""

from __future__ import annotations

from typing import Final, cast

import msgspec

from contracts.messages import BindRequest
from services.common.store import ClusterStore, WaitingRecord
from services.framework.api.bindwait import BindingWait, WaitsAfterPreBind
from services.framework.api.implements import implements
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status, as_status
from services.framework.runtime.framework import Framework

GRACE: Final = 10.0
"""Seconds the store waits past the plugin's deadline before it expires the record."""

_encoder = msgspec.json.Encoder()
_request_decoder = msgspec.json.Decoder(BindRequest)


def asked(framework: Framework, state: CycleState, node: str) -> tuple[str, BindingWait] | None:
    """The first PreBind plugin that asks to wait after a successful PreBind."""
    for plugin in framework.pre_bind_plugins:
        if implements(plugin, WaitsAfterPreBind):
            wait = cast(WaitsAfterPreBind, plugin).binding_wait(state, node)
            if wait is not None:
                return plugin.name, wait
    return None


def parked(request: BindRequest, plugin: str, wait: BindingWait, now: float) -> WaitingRecord:
    """The waiting record of a pod whose PreBind (``plugin``) waits."""
    state = {**request.plugin_state, plugin: msgspec.Raw(wait.state)}
    resumed = msgspec.structs.replace(request, permit=True, plugin_state=state)
    return WaitingRecord(
        uid=request.uid,
        namespace=request.namespace or "default",
        name=request.name,
        node=request.node,
        attempt=request.attempt,
        profile=request.profile,
        pending={plugin: now + wait.timeout + GRACE},
        waits={plugin: wait.timeout},
        request=_encoder.encode(resumed),
        since=now,
        point="PreBind",
    )


def failure(record: WaitingRecord) -> Status:
    """How a rejected wait at PreBind fails the binding cycle: upstream's PreBind
    error, as ``RunPreBindPlugins`` words it."""
    message = record.message or "the wait at PreBind expired"
    text = f'running PreBind plugin "{record.plugin}": {message}'
    return Status(Code.Error, (text,), record.plugin)


async def poll(
    store: ClusterStore, frameworks: dict[str, Framework], now: float
) -> list[WaitingRecord]:
    """Ask each pod's plugin about the pods waiting at PreBind; allow or reject those it
    decided. Returns the records this resolved (to hand on to a binder)."""
    records = await store.waiting()
    waiting = [r for r in records.values() if r.state == "waiting" and r.point == "PreBind"]
    objects: dict[str, dict[str, bytes]] = {}
    resolved: list[WaitingRecord] = []
    for record in waiting:
        for plugin in record.waits:
            verdict = await _verdict(store, frameworks, objects, record, plugin, now)
            if verdict is None:
                continue
            if verdict.is_success():
                after = await store.allow_waiting(record.uid, plugin, now)
            else:
                after = await store.reject_waiting(record.uid, plugin, verdict.message(), now)
            if after is not None and after.state != "waiting":
                resolved.append(after)
    return resolved


async def _verdict(
    store: ClusterStore,
    frameworks: dict[str, Framework],
    objects: dict[str, dict[str, bytes]],
    record: WaitingRecord,
    name: str,
    now: float,
) -> Status | None:
    framework = frameworks.get(record.profile)
    plugin = framework.plugins.get(name) if framework is not None else None
    if framework is None or not isinstance(plugin, WaitsAfterPreBind):
        return None  # another binder's profile: its replicas poll it
    kind = plugin.waits_on
    if kind not in objects:
        objects[kind] = await store.objects(kind)
    deadline = record.since + record.waits[name]
    try:
        request = _request_decoder.decode(record.request)
        state = CycleState()
        raw = request.plugin_state.get(name)
        if raw is not None:
            framework.restore_binding_state(state, {name: bytes(raw)})
        return plugin.binding_ready(state, objects[kind], now, deadline)
    except Exception as err:  # the plugin's failure fails this pod, not the timers
        return as_status(err)
