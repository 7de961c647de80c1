"""``ksched bench --mode cycle``: the scheduling cycle alone, in this process.

No bus, store or queue: a :class:`Cache` holds the workload's nodes and its init
pods (bound), and each measured pod, in order, goes through what the scheduler does
for it in its cycle: ``PodInfo.of``, :meth:`Framework.schedule_pod` with the default
profile (whatever plugins it has), and the local assume of the chosen node, so the
next pod sees it. Each pod's latency is the time of those three steps.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

import msgspec

from bench.workload import Workload
from contracts.k8s import Node, Pod
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.config import default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.framework import Framework


@dataclass(slots=True)
class CycleRun:
    latencies: list[float] = field(default_factory=list)
    """Seconds per measured pod, in scheduling order."""
    elapsed: float = 0.0
    """Seconds from the first measured pod to the last."""
    unschedulable: int = 0
    """Measured pods no node fit (or that failed with an error)."""
    placed: dict[str, str] = field(default_factory=dict)
    """The node each placed measured pod was assumed on, by pod uid."""
    cycle_cpu: float = 0.0
    """CPU seconds spent inside ``schedule_pod`` (this thread's), over every pod: the
    span the scheduler's ``ksched_scheduling_cycle_cpu_seconds_total`` counts."""


def _decode(obj: dict[str, Any], kind: type[Any]) -> Any:
    return msgspec.json.decode(msgspec.json.encode(obj), type=kind)


def build_snapshot(workload: Workload, nodes: int, init: int) -> Cache:
    """The workload's nodes with its ``init`` pods bound (as upstream's initPods)."""
    snapshot = Cache()
    for node in workload.all_nodes(nodes):
        snapshot.add_node(_decode(node, Node))
    for i in range(init):
        snapshot.add_pod(_decode(workload.init(i, nodes), Pod))
    return snapshot


def run_cycle(workload: Workload, nodes: int, init: int, pods: int, seed: int = 0) -> CycleRun:
    """Schedule ``pods`` measured pods one after the other; see the module docstring."""
    snapshot = build_snapshot(workload, nodes, init)
    framework = Framework(
        default_profile(), in_tree_registry(), rng=random.Random(seed), listers=snapshot.listers
    )
    measured: list[Pod] = [_decode(workload.measured(i), Pod) for i in range(pods)]
    run = CycleRun()
    clock = time.perf_counter
    started = clock()
    for pod in measured:
        begin = clock()
        info = PodInfo.of(pod)
        cpu = time.thread_time()
        result = framework.schedule_pod(snapshot, info)
        run.cycle_cpu += time.thread_time() - cpu
        if result.node is not None:
            snapshot.assume(info, result.node)
            run.placed[info.uid] = result.node
        else:
            run.unschedulable += 1
        run.latencies.append(clock() - begin)
    run.elapsed = clock() - started
    return run
