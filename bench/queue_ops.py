"""Raw speed of the queue core (no bus, no store): operations per second with a large
backlog, on upstream's default profile.

- ``add``: new pending pods into activeQ (PreEnqueue, QueueSort).
- ``update``: each pod in activeQ updated (a label change: classified, repositioned).
- ``pop``: activeQ drained in dispatch batches of 128.
- ``failed+move``: each pod in flight fails on NodeResourcesFit and is parked, then one
  NodeAdd moves them all back (NodeResourcesFit's hint runs once per pod); one op is
  one pod's failure and move.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from contracts.k8s import (
    Container,
    Node,
    NodeStatus,
    ObjectMeta,
    Pod,
    PodSpec,
    Quantity,
    ResourceRequirements,
)
from services.common.clock import FakeClock
from services.queue.cluster_events import NODE_ADD
from services.queue.profiles import QueueProfile
from services.queue.scheduling_queue import SchedulingQueue
from services.queue.types import QueueEntry

BATCH = 128


def _pod(i: int, labels: dict[str, str]) -> Pod:
    requests: dict[str, Quantity] = {"cpu": f"{100 + i % 400}m", "memory": "128Mi"}
    return Pod(
        metadata=ObjectMeta(name=f"p{i}", namespace="bench", uid=f"bench-{i}", labels=labels),
        spec=PodSpec(
            priority=i % 7,
            containers=[Container(name="c", resources=ResourceRequirements(requests=requests))],
        ),
    )


def _rate(count: int, run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return count / max(time.perf_counter() - start, 1e-9)


@dataclass(slots=True)
class QueueOpsRun:
    rates: dict[str, float] = field(default_factory=dict)
    """Operations per second, by kind of operation."""
    popped: list[tuple[str, int]] = field(default_factory=list)
    """(uid, priority) of each pod the ``pop`` phase returned, in pop order."""
    counts: dict[str, int] = field(default_factory=dict)
    """Pods per sub-queue at the end (all back in activeQ after the move)."""


def queue_ops(pods: int = 100_000) -> dict[str, float]:
    """Operations per second for each kind of operation, ``pods`` pods pending."""
    return run_queue_ops(pods).rates


def run_queue_ops(pods: int) -> QueueOpsRun:
    """:func:`queue_ops`, with what the queue did: see :class:`QueueOpsRun`."""
    run = QueueOpsRun()
    clock = FakeClock()
    queue = SchedulingQueue([QueueProfile.default()], clock)
    created = [_pod(i, {"app": "bench"}) for i in range(pods)]
    changed = [_pod(i, {"app": "bench", "rev": "2"}) for i in range(pods)]
    node = Node(
        metadata=ObjectMeta(name="big"),
        status=NodeStatus(allocatable={"cpu": "64", "memory": "256Gi", "pods": "110"}),
    )

    def add() -> None:
        for i, pod in enumerate(created):
            queue.add(pod, priority=i % 7, order=i)

    def update() -> None:
        for i, (old, new) in enumerate(zip(created, changed, strict=True)):
            queue.update(old, new, priority=i % 7)

    batches: list[list[QueueEntry]] = []

    def pop() -> None:
        while batch := queue.pop(BATCH):
            batches.append(batch)

    def failed_and_move() -> None:
        for i in range(pods):
            queue.add_unschedulable_if_not_present(f"bench-{i}", ("NodeResourcesFit",))
        clock.step(20.0)  # past every backoff: the move goes to activeQ
        queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)

    run.rates = {
        "add": _rate(pods, add),
        "update": _rate(pods, update),
        "pop": _rate(pods, pop),
        "failed+move": _rate(pods, failed_and_move),
    }
    run.popped = [(info.uid, info.pod_info.priority) for batch in batches for info in batch]
    run.counts = queue.counts()
    assert run.counts["active"] == pods, run.counts
    return run


if __name__ == "__main__":
    for name, rate in queue_ops().items():
        print(f"{name:12} {rate:12,.0f} ops/s")
