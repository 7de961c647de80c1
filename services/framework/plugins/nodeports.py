"""NodePorts: a pod's host ports must be free on the node.

PreFilter collects the pod's host ports (``util.GetHostPorts``: every container port
with ``hostPort > 0``, of the containers and the restartable init containers) and
returns Skip when there are none. Filter rejects, Unschedulable with "node(s) didn't
have free ports for the requested pod ports", a node where a pod already uses a
conflicting ``(hostIP, protocol, hostPort)``: same protocol and port, and the same IP
or either side binding ``0.0.0.0`` (an empty IP means ``0.0.0.0``, an empty protocol
TCP), as ``HostPortInfo.CheckConflict`` decides.

Used ports depend on the pods on each node, which change every cycle, so Filter walks
the pods of the table (each pod's ports computed once and cached); the walk happens only
for the pods that ask for host ports, as the others are skipped at PreFilter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from contracts.k8s import Pod
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from services.framework.api.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    FilterResult,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SKIP, SUCCESS, Code, Status, StatusError
from services.framework.api.types import PodInfo
from services.framework.cache.snapshot import Snapshot

NAME: Final = "NodePorts"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
ERR_REASON: Final = "node(s) didn't have free ports for the requested pod ports"
DEFAULT_BIND_ALL_HOST_IP: Final = "0.0.0.0"
_REJECTED: Final = Status(Code.Unschedulable, (ERR_REASON,))

HostPort = tuple[str, str, int]
"""(hostIP, protocol, hostPort), sanitized: ``0.0.0.0`` and ``TCP`` for empty fields."""


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """``util.GetHostPorts``: restartable init containers first, then containers."""
    spec = pod.spec
    containers = [c for c in spec.init_containers if c.restart_policy == "Always"]
    containers += spec.containers
    return tuple(
        (port.host_ip or DEFAULT_BIND_ALL_HOST_IP, port.protocol or "TCP", port.host_port)
        for container in containers
        for port in container.ports
        if port.host_port is not None and port.host_port > 0
    )


def conflict(wanted: HostPort, used: HostPort) -> bool:
    """Does ``used`` make ``wanted`` unavailable (``CheckConflict``, one entry)?"""
    if wanted[1:] != used[1:]:
        return False
    ip, used_ip = wanted[0], used[0]
    return DEFAULT_BIND_ALL_HOST_IP in (ip, used_ip) or ip == used_ip


def fits_ports(wanted: Sequence[HostPort], used: Iterable[HostPort]) -> bool:
    """``fitsPorts``: no wanted port conflicts with a used one."""
    return not any(conflict(w, u) for u in used for w in wanted)


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    ports: tuple[HostPort, ...]

    def clone(self) -> _PreFilterState:
        return self


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name: Final = NAME

    def __init__(self) -> None:
        self._ports: dict[int, tuple[PodInfo, tuple[HostPort, ...]]] = {}
        """id(PodInfo) → (that PodInfo, its host ports): a PodInfo is immutable, so its
        ports are computed once (the PodInfo kept in the entry guards against id reuse)."""

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        ports = host_ports(pod.pod)
        if not ports:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(ports))
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        try:
            wanted = state.read(PRE_FILTER_STATE_KEY, _PreFilterState).ports
        except StatusError as err:
            raise StatusError(
                f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
            ) from err
        passed = np.ones(nodes.num_nodes, dtype=np.bool_)
        cache, scanned = self._ports, 0
        for row, on_node in enumerate(nodes.pods):
            scanned += len(on_node)
            for other in on_node.values():
                entry = cache.get(id(other))
                if entry is None or entry[0] is not other:
                    entry = cache[id(other)] = (other, host_ports(other.pod))
                if entry[1] and not fits_ports(wanted, entry[1]):
                    passed[row] = False
                    break
        if len(cache) > 2 * scanned + 1024:  # mostly pods that are gone
            cache.clear()
        return FilterResult.uniform(passed, _REJECTED)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A pod that held a port going away; a new node."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.Pod, ActionType.Delete), after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add)),
        )


def after_pod_deleted(pod: Pod, old: object | None, new: object | None) -> QueueingHint:
    """``isSchedulableAfterPodDeleted``: queue only if the deleted pod was on a node
    (or nominated to one) and held a port the pod wants."""
    if not isinstance(old, Pod):
        return QueueingHint.Queue
    if not old.spec.node_name and not old.status.nominated_node_name:
        return QueueingHint.QueueSkip
    used = host_ports(old)
    if not used or fits_ports(host_ports(pod), used):
        return QueueingHint.QueueSkip
    return QueueingHint.Queue


def fits(pod: Pod, pods_on_node: Iterable[Pod]) -> bool:
    """``nodeports.Fits`` for one node given the pods on it (preemption uses it)."""
    wanted = host_ports(pod)
    return all(fits_ports(wanted, host_ports(other)) for other in pods_on_node)


def new(args: None, handle: Handle) -> NodePorts:
    return NodePorts()


ENTRY: Final = PluginEntry(NAME, NodePorts, new)
