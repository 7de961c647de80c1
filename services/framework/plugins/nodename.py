"""NodeName: a pod with ``spec.nodeName`` fits only the node of that name.

Filter only; every other node is UnschedulableAndUnresolvable with "node(s) didn't
match the requested node name". A pod without ``spec.nodeName`` fits everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from services.framework.api.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    FilterResult,
    Handle,
)
from services.framework.api.registry import PluginEntry
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.cache.snapshot import Snapshot

NAME: Final = "NodeName"
ERR_REASON: Final = "node(s) didn't match the requested node name"
_REJECTED: Final = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON,))


class NodeName(FilterPlugin, EnqueueExtensions):
    name: Final = NAME

    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return FilterResult.all_passed(nodes.num_nodes)
        passed = np.zeros(nodes.num_nodes, dtype=np.bool_)
        row = nodes.index.get(wanted)
        if row is not None:
            passed[row] = True
        return FilterResult.uniform(passed, _REJECTED)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Only a new node can be the one the pod names."""
        return (ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add)),)


def new(args: None, handle: Handle) -> NodeName:
    return NodeName()


ENTRY: Final = PluginEntry(NAME, NodeName, new)
