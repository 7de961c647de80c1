"""The extension points after the algorithm chose a node, run over a profile's plugins:
Reserve and Permit (the end of the scheduling cycle) and the binding cycle's PreBind, Bind and
PostBind, with the state the binding cycle carries to another process. Upstream's
``RunReservePluginsReserve``, ``RunPermitPlugins``, ``RunPreBindPlugins``, ``RunBindPlugins`` and
``RunPostBindPlugins``; :class:`~services.framework.runtime.framework.Framework`
calls these with its plugins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from services.framework.api.interface import (
    BindingState,
    BindPlugin,
    CycleState,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PreBindPlugin,
    ReservePlugin,
    WaitingPods,
)
from services.framework.api.status import SKIP, SUCCESS, Code, Status, as_status
from services.framework.api.types import PodInfo
from services.framework.runtime.results import message, results_of


class StatefulPlugin(Plugin, BindingState, Protocol):
    """A plugin that hands state on to the binding cycle, by its name."""


MAX_PERMIT_TIMEOUT: float = 15 * 60.0
"""Seconds a Permit plugin may make a pod wait at most (upstream's ``maxTimeout``)."""


def run_reserve_plugins(
    plugins: Sequence[ReservePlugin], state: CycleState, pod: PodInfo, node: str
) -> Status:
    """``RunReservePluginsReserve``: the first failure, with its plugin (an error as
    ``running Reserve plugin "X": …``)."""
    recorded = results_of(state)
    if recorded is not None:
        recorded.selected_node = node
    for plugin in plugins:
        try:
            status = plugin.reserve(state, pod, node)
        except Exception as err:
            status = as_status(err)
        if recorded is not None:
            recorded.reserve[plugin.name] = message(status)
        if not status.is_success():
            if not status.is_rejected():
                reason = f'running Reserve plugin "{plugin.name}": {status.message()}'
                status = Status(Code.Error, (reason,))
            return status.with_plugin(plugin.name)
    return SUCCESS


def run_permit_plugins(
    plugins: Sequence[PermitPlugin],
    waiting_pods: WaitingPods,
    state: CycleState,
    pod: PodInfo,
    node: str,
) -> Status:
    """``RunPermitPlugins``: every Permit plugin in order. A rejection is returned at
    once with its plugin; an error as ``running Permit plugin "X": …``; Skip counts as
    Success. If any asked to wait (each timeout capped at :data:`MAX_PERMIT_TIMEOUT`),
    the pod is added to ``waiting_pods`` with one timeout per waiting plugin and the
    status is Wait."""
    waits: dict[str, float] = {}
    recorded = results_of(state)
    for plugin in plugins:
        try:
            status, timeout = plugin.permit(state, pod, node)
        except Exception as err:
            status, timeout = as_status(err), 0.0
        if recorded is not None:
            recorded.permitted(plugin.name, status, timeout)
        if status.is_success() or status.is_skip():
            continue
        if status.is_rejected():
            return status.with_plugin(plugin.name)
        if status.is_wait():
            waits[plugin.name] = min(max(float(timeout), 0.0), MAX_PERMIT_TIMEOUT)
            continue
        reason = f'running Permit plugin "{plugin.name}": {status.message()}'
        return Status(Code.Error, (reason,), plugin.name)
    if waits:
        waiting_pods.add(pod, node, waits)
        name = pod.pod.metadata.name
        reason = f'one or more plugins asked to wait and no plugin rejected pod "{name}"'
        return Status(Code.Wait, (reason,))
    return SUCCESS


async def run_pre_bind_plugins(
    plugins: Sequence[PreBindPlugin], state: CycleState, pod: PodInfo, node: str
) -> Status:
    """``RunPreBindPlugins``: in order; the first failure (an error as ``running
    PreBind plugin "X": …``), with its plugin. Skip counts as Success."""
    recorded = results_of(state)
    for plugin in plugins:
        try:
            status = await plugin.pre_bind(state, pod, node)
        except Exception as err:
            status = as_status(err)
        if recorded is not None:
            recorded.pre_bind[plugin.name] = message(status)
        if status.is_success() or status.is_skip():
            continue
        if status.is_rejected():
            return status.with_plugin(plugin.name)
        reason = f'running PreBind plugin "{plugin.name}": {status.message()}'
        return Status(Code.Error, (reason,), plugin.name)
    return SUCCESS


async def run_bind_plugins(
    plugins: Sequence[BindPlugin], state: CycleState, pod: PodInfo, node: str
) -> Status:
    """``RunBindPlugins``: Skip without Bind plugins; else the first plugin that does
    not Skip decides (an error as ``running Bind plugin "X": …``)."""
    status = SKIP
    recorded = results_of(state)
    for plugin in plugins:
        try:
            status = await plugin.bind(state, pod, node)
        except Exception as err:
            status = as_status(err)
        if recorded is not None:
            recorded.bind[plugin.name] = message(status)
        if status.is_skip():
            continue
        if status.is_success():
            return status
        if status.is_rejected():
            return status.with_plugin(plugin.name)
        reason = f'running Bind plugin "{plugin.name}": {status.message()}'
        return Status(Code.Error, (reason,), plugin.name)
    return status


def run_post_bind_plugins(
    plugins: Sequence[PostBindPlugin], state: CycleState, pod: PodInfo, node: str
) -> None:
    """``RunPostBindPlugins``: informational, every one in order."""
    for plugin in plugins:
        plugin.post_bind(state, pod, node)


def binding_state(plugins: Sequence[StatefulPlugin], state: CycleState) -> dict[str, bytes]:
    """What the plugins need in the binding cycle (another process), by plugin name,
    each in its own encoding (:class:`BindingState`)."""
    out: dict[str, bytes] = {}
    for plugin in plugins:
        data = plugin.binding_state(state)
        if data is not None:
            out[plugin.name] = data
    return out


def restore_binding_state(
    plugins: Sequence[StatefulPlugin], state: CycleState, data: Mapping[str, bytes]
) -> None:
    """Put back into ``state`` what :func:`binding_state` handed on (plugins the
    profile does not run are ignored)."""
    for plugin in plugins:
        encoded = data.get(plugin.name)
        if encoded is not None:
            plugin.restore_binding_state(state, encoded)


__all__ = [
    "MAX_PERMIT_TIMEOUT",
    "StatefulPlugin",
    "binding_state",
    "restore_binding_state",
    "run_bind_plugins",
    "run_permit_plugins",
    "run_post_bind_plugins",
    "run_pre_bind_plugins",
]
