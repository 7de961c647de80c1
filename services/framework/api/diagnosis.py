"""``Diagnosis`` and ``FitError``: why no node fits, and upstream's message for it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from services.framework.api.status import Code, Status

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
"""``framework.NoNodeAvailableMsg``."""
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
"""``ErrNoNodesAvailable``: the snapshot has no node at all."""
MESSAGE_LIMIT = 1024
"""``validation.NoteLengthLimit``: longer Event messages are cut with " ..."."""


@dataclass(slots=True)
class Diagnosis:
    """What the filters said about every node (``framework.Diagnosis``).

    ``node_status(row)`` gives the rejecting Status of node ``row``; ``reason_counts``
    counts each reason over all nodes (a node rejected for cpu and memory adds to
    both), which is what the FitError message shows.
    """

    node_status: Callable[[int], Status | None] = lambda _row: None
    reason_counts: Counter[str] = field(default_factory=Counter)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    all_unresolvable: bool = False
    """True when every node was rejected UnschedulableAndUnresolvable: preemption
    cannot help anywhere."""
    num_nodes: int = 0
    """Rows ``node_status`` answers for (the snapshot's nodes)."""
    rows_with: Callable[[Code], list[int]] | None = None
    """Rows whose status has that code, in row order (``NodesForStatusCode``), when
    the filters computed it for all rows at once; else :meth:`rows_with_code` asks
    ``node_status`` row by row."""

    def rows_with_code(self, code: Code) -> list[int]:
        if self.rows_with is not None:
            return self.rows_with(code)
        rows = []
        for row in range(self.num_nodes):
            status = self.node_status(row)
            if status is not None and status.code == code:
                rows.append(row)
        return rows

    def add_plugin_status(self, status: Status) -> None:
        """``Diagnosis.AddPluginStatus``: remember which plugin rejected (or pended)."""
        if not status.plugin:
            return
        if status.code == Code.Pending:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)


@dataclass(eq=False)
class FitError(Exception):
    """No node fits the pod. ``str()`` is upstream's ``FitError.Error()``:
    ``0/5 nodes are available: 2 Insufficient cpu, 3 Too many pods.``"""

    pod_key: str
    num_all_nodes: int
    diagnosis: Diagnosis

    def __str__(self) -> str:
        message = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        diagnosis = self.diagnosis
        if diagnosis.pre_filter_msg:
            message += f" {diagnosis.pre_filter_msg}."
        else:
            # Go formats "<count> <reason>" and sorts those strings, so "10 …" < "2 …".
            histogram = sorted(f"{n} {reason}" for reason, n in diagnosis.reason_counts.items())
            if histogram:
                message += f" {', '.join(histogram)}."
        if diagnosis.post_filter_msg:
            # Upstream adds PostFilter's message as it is (no period: preemption's
            # message is itself a FitError, which ends with one).
            message += f" {diagnosis.post_filter_msg}"
        return message


def truncate_message(message: str) -> str:
    """``truncateMessage``: what fits in an Event's note."""
    if len(message) <= MESSAGE_LIMIT:
        return message
    suffix = " ..."
    return message[: MESSAGE_LIMIT - len(suffix)] + suffix
