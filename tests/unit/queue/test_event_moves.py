"""Every cluster event → move rule, end to end through the event handlers: a pod parked
by some plugin, one log entry (the handlers supply the old object), moved or not as the
plugin's queueing hint decides."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from contracts.k8s import (
    Affinity,
    LabelSelector,
    Namespace,
    NodeCondition,
    ObjectMeta,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimVolumeSource,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    StorageClass,
    Taint,
    Toleration,
    Volume,
)
from services.queue.eventhandlers import EventHandlers
from services.queue.nominator import Nominator
from services.queue.types import SubQueue
from tests.builders import container, host_port, make_node, make_pod
from tests.unit.queue.helpers import logged, make_queue, with_


@dataclass
class Case:
    pod: Pod
    plugins: tuple[str, ...]
    event: Any
    """A log entry, or a callable (handlers → log entry) to build it from the cluster."""
    moved: bool
    cluster: list[Any] = field(default_factory=list)
    """Objects present before the pod was parked."""


NODE = make_node("n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110}, labels={"zone": "a"})
TAINTED = make_node("n1", labels={"zone": "a"}, taints=[("dedicated", "db", "NoSchedule")])
CORDONED = make_node("n1", unschedulable=True)
DB = make_pod("db", node_name="n1", labels={"app": "db"}, requests={"cpu": "1"})
WEB_PORT = make_pod("web", node_name="n1", requests=[container(ports=[host_port(80)])])
NEEDS_DB = make_pod(
    "needs-db",
    affinity=Affinity(
        pod_affinity=PodAffinity(
            required_during_scheduling_ignored_during_execution=[
                PodAffinityTerm(
                    label_selector=LabelSelector(match_labels={"app": "db"}),
                    topology_key="zone",
                )
            ]
        )
    ),
)
WANTS_PORT = make_pod("wants-port", requests=[container(ports=[host_port(80)])])
WITH_CLAIM = make_pod(
    "with-claim",
    volumes=[
        Volume(name="v", persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name="c"))
    ],
)
CLAIM = PersistentVolumeClaim(metadata=ObjectMeta(name="c", namespace="default"))
VOLUME = PersistentVolume(metadata=ObjectMeta(name="pv1"))
WAIT_CLASS = StorageClass(
    metadata=ObjectMeta(name="wait"), volume_binding_mode="WaitForFirstConsumer"
)
BIG = make_pod("big", requests={"cpu": "2"})
HUGE = make_pod("huge", requests={"cpu": "8"})
ZONE_B = make_pod("zone-b", node_selector={"zone": "b"})

CASES = {
    # Nodes
    "node added that fits": Case(BIG, ("NodeResourcesFit",), logged(NODE), True),
    "node added too small for the pod": Case(HUGE, ("NodeResourcesFit",), logged(NODE), False),
    "node added for NodeName": Case(BIG, ("NodeName",), logged(NODE), True),
    "node allocatable grew enough": Case(
        HUGE,
        ("NodeResourcesFit",),
        logged(with_(NODE, status__allocatable={"cpu": "16", "pods": 110}), "MODIFIED"),
        True,
        [NODE],
    ),
    "node allocatable grew, still too small": Case(
        HUGE,
        ("NodeResourcesFit",),
        logged(with_(NODE, status__allocatable={"cpu": "6", "pods": 110}), "MODIFIED"),
        False,
        [NODE],
    ),
    "node relabelled to match the selector": Case(
        ZONE_B,
        ("NodeAffinity",),
        logged(with_(NODE, metadata__labels={"zone": "b"}), "MODIFIED"),
        True,
        [NODE],
    ),
    "node relabelled, still not matching": Case(
        ZONE_B,
        ("NodeAffinity",),
        logged(with_(NODE, metadata__labels={"zone": "a", "x": "y"}), "MODIFIED"),
        False,
        [NODE],
    ),
    "node taint removed": Case(
        BIG,
        ("TaintToleration",),
        logged(with_(TAINTED, spec__taints=[]), "MODIFIED"),
        True,
        [TAINTED],
    ),
    "node taint swapped for another untolerated one": Case(
        BIG,
        ("TaintToleration",),
        logged(with_(TAINTED, spec__taints=[Taint(key="gpu", effect="NoSchedule")]), "MODIFIED"),
        False,
        [TAINTED],
    ),
    "node uncordoned": Case(
        BIG,
        ("NodeUnschedulable",),
        logged(with_(CORDONED, spec__unschedulable=False), "MODIFIED"),
        True,
        [CORDONED],
    ),
    "node heartbeat (conditions only)": Case(
        BIG,
        ("NodeResourcesFit", "TaintToleration", "NodeAffinity"),
        logged(
            with_(NODE, status__conditions=[NodeCondition(type="Ready", status="True")]),
            "MODIFIED",
        ),
        False,
        [NODE],
    ),
    "node deleted": Case(BIG, ("NodeResourcesFit",), logged(NODE, "DELETED"), False, [NODE]),
    # Assigned pods
    "assigned pod deleted frees room": Case(
        BIG, ("NodeResourcesFit",), logged(DB, "DELETED"), True, [NODE, DB]
    ),
    "assigned pod succeeded frees room": Case(
        BIG,
        ("NodeResourcesFit",),
        logged(with_(DB, status__phase="Succeeded"), "MODIFIED"),
        True,
        [NODE, DB],
    ),
    "assigned pod scaled down": Case(
        BIG,
        ("NodeResourcesFit",),
        logged(
            make_pod("db", node_name="n1", labels={"app": "db"}, requests={"cpu": "500m"}),
            "MODIFIED",
        ),
        True,
        [NODE, DB],
    ),
    "assigned pod relabelled does not help Fit": Case(
        BIG,
        ("NodeResourcesFit",),
        logged(with_(DB, metadata__labels={"app": "db", "v": "2"}), "MODIFIED"),
        False,
        [NODE, DB],
    ),
    "assigned pod with the wanted port deleted": Case(
        WANTS_PORT, ("NodePorts",), logged(WEB_PORT, "DELETED"), True, [NODE, WEB_PORT]
    ),
    "assigned pod without ports deleted": Case(
        WANTS_PORT, ("NodePorts",), logged(DB, "DELETED"), False, [NODE, DB]
    ),
    "assigned pod matching the affinity added": Case(
        NEEDS_DB, ("InterPodAffinity",), logged(DB), True, [NODE]
    ),
    "assigned pod not matching the affinity added": Case(
        NEEDS_DB,
        ("InterPodAffinity",),
        logged(make_pod("web", node_name="n1", labels={"app": "web"})),
        False,
        [NODE],
    ),
    "assigned pod relabelled to match the affinity": Case(
        NEEDS_DB,
        ("InterPodAffinity",),
        logged(with_(DB, metadata__labels={"app": "db"}), "MODIFIED"),
        True,
        [NODE, with_(DB, metadata__labels={"app": "other"})],
    ),
    "a pending pod added moves nobody": Case(
        NEEDS_DB, ("InterPodAffinity",), logged(make_pod("db2", labels={"app": "db"})), False
    ),
    # Volumes
    "claim added": Case(WITH_CLAIM, ("VolumeBinding",), logged(CLAIM), True),
    "claim added for NodeVolumeLimits, someone else's": Case(
        WITH_CLAIM,
        ("NodeVolumeLimits",),
        logged(PersistentVolumeClaim(metadata=ObjectMeta(name="other", namespace="default"))),
        False,
    ),
    "volume updated": Case(
        WITH_CLAIM,
        ("VolumeBinding",),
        logged(with_(VOLUME, metadata__labels={"x": "y"}), "MODIFIED"),
        True,
        [VOLUME],
    ),
    "volume updated, pod without claims": Case(
        BIG,
        ("VolumeBinding",),
        logged(with_(VOLUME, metadata__labels={"x": "y"}), "MODIFIED"),
        False,
        [VOLUME],
    ),
    "storage class added": Case(WITH_CLAIM, ("VolumeBinding",), logged(WAIT_CLASS), True),
    "storage class added, VolumeZone and immediate binding": Case(
        WITH_CLAIM,
        ("VolumeZone",),
        logged(StorageClass(metadata=ObjectMeta(name="now"), volume_binding_mode="Immediate")),
        False,
    ),
    # Nothing to do with scheduling
    "namespace added": Case(
        BIG, ("NodeResourcesFit",), logged(Namespace(metadata=ObjectMeta(name="x"))), False
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_event_moves_the_parked_pod_as_the_hint_decides(case: Case) -> None:
    queue, clock = make_queue()
    handlers = EventHandlers(queue, Nominator())
    for obj in case.cluster:
        handlers.handle(logged(obj))
    handlers.handle(logged(case.pod))
    popped = queue.pop(10)
    assert [i.pod.metadata.name for i in popped] == [case.pod.metadata.name]
    assert (
        queue.add_unschedulable_if_not_present(popped[0].uid, case.plugins)
        is SubQueue.UNSCHEDULABLE
    )
    clock.step(30)  # backoff over: a move goes straight to activeQ
    handlers.handle(case.event)
    info = queue.get(case.pod.metadata.uid)
    assert info is not None
    assert (info.where is SubQueue.ACTIVE) is case.moved, info.where


def test_a_pod_update_that_adds_a_toleration_moves_it() -> None:
    queue, clock = make_queue()
    handlers = EventHandlers(queue, Nominator())
    handlers.handle(logged(BIG))
    (info,) = queue.pop(1)
    queue.add_unschedulable_if_not_present(info.uid, ["TaintToleration"])
    clock.step(30)
    handlers.handle(
        logged(with_(BIG, spec__tolerations=[Toleration(operator="Exists")]), "MODIFIED")
    )
    assert info.where is SubQueue.ACTIVE
