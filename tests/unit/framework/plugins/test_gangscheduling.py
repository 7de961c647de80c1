"""GangScheduling, from upstream's gangscheduling_test.go (1.36: schedulingGroup and
PodGroup): the queueing hints, and TestGangSchedulingFlow's cases through PreEnqueue,
Reserve and Permit; plus the group's scheduling deadline and the profile's gate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from contracts.k8s import ObjectMeta, Pod, PodSchedulingGroup, SchedulingPodGroup
from contracts.k8s.workload import (
    BasicSchedulingPolicy,
    GangSchedulingPolicy,
    PodGroupSchedulingPolicy,
    SchedulingPodGroupSpec,
)
from services.common import features
from services.framework.api.events import QueueingHint
from services.framework.api.interface import CycleState, Handle
from services.framework.api.listers import Listers
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo
from services.framework.config import default_profile
from services.framework.plugins.gangscheduling import (
    DEFAULT_SCHEDULING_TIMEOUT,
    NAME,
    GangScheduling,
    after_pod_added,
    after_pod_group_added,
    after_pod_group_updated,
)
from tests.builders import make_pod


def pod_group(name: str, min_count: int | None = None, *, namespace: str = "default") -> Any:
    """``st.MakePodGroup()``: a gang of ``min_count``, or a basic group without one."""
    policy = (
        PodGroupSchedulingPolicy(basic=BasicSchedulingPolicy())
        if min_count is None
        else PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=min_count))
    )
    return SchedulingPodGroup(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=SchedulingPodGroupSpec(scheduling_policy=policy),
    )


def member(name: str, group: str | None, *, namespace: str = "default") -> Pod:
    pod = make_pod(name, namespace=namespace, uid=name)
    if group is None:
        return pod
    spec = msgspec.structs.replace(
        pod.spec, scheduling_group=PodSchedulingGroup(pod_group_name=group)
    )
    return msgspec.structs.replace(pod, spec=spec)


def on_node(pod: Pod, node: str = "some-node") -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))


@dataclass
class Waiting:
    pod: Pod
    allowed_by: list[str] = field(default_factory=list)

    def get_pod(self) -> Pod:
        return self.pod

    @property
    def node(self) -> str:
        return "some-node"

    def get_pending_plugins(self) -> list[str]:
        return [NAME]

    def allow(self, plugin: str) -> None:
        self.allowed_by.append(plugin)

    def reject(self, plugin: str, message: str) -> None:
        raise AssertionError("GangScheduling never rejects a waiting pod")


@dataclass
class World:
    """The plugin's Handle: the PodGroups, the pods of each group (one waiting at Permit
    shows on its node, as the scheduler's group pods show it), the waiting pods, time."""

    groups: list[SchedulingPodGroup] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    waiting: list[Waiting] = field(default_factory=list)
    now: float = 1000.0
    listers: Listers = field(default_factory=Listers)

    def pods_in_group(self, namespace: str, group: str) -> list[Pod]:
        return []

    def pods_in_scheduling_group(self, namespace: str, group: str) -> list[Pod]:
        waiting = {w.pod.metadata.uid for w in self.waiting}
        return [
            on_node(p) if p.metadata.uid in waiting else p
            for p in self.pods
            if p.spec.scheduling_group is not None
            and p.spec.scheduling_group.pod_group_name == group
            and (p.metadata.namespace or "default") == namespace
        ]

    def get_waiting_pod(self, uid: str) -> Waiting | None:
        return next((w for w in self.waiting if w.pod.metadata.uid == uid), None)

    def iterate_over_waiting_pods(self, callback: Any) -> None:
        for w in self.waiting:
            callback(w)

    def reject_waiting_pod(self, uid: str) -> bool:
        return False

    def add(self, pod: PodInfo, node: str, waits: dict[str, float]) -> None:
        raise AssertionError("the framework adds waiting pods, not the plugin")

    def plugin(self) -> GangScheduling:
        for group in self.groups:
            self.listers.put(group)
        self.listers.scheduling_group_members.load(self.pods)
        handle = Handle("default-scheduler", self.listers, self, self, lambda: self.now)
        return GangScheduling(handle)


# -- queueing hints (Test_isSchedulableAfterPodAdded, ..PodGroupAdded, ..PodGroupUpdated) --


@pytest.mark.parametrize(
    ("pod", "added", "want"),
    [
        pytest.param(member("p", "pg"), member("q", "pg"), QueueingHint.Queue, id="same-group"),
        pytest.param(
            member("p", "pg"),
            member("q", "pg", namespace="foo"),
            QueueingHint.QueueSkip,
            id="other-namespace",
        ),
        pytest.param(
            member("p", "pg1"), member("q", "pg2"), QueueingHint.QueueSkip, id="other-group"
        ),
    ],
)
def test_hint_after_pod_added(pod: Pod, added: Pod, want: QueueingHint) -> None:
    assert after_pod_added(pod, None, added) == want


@pytest.mark.parametrize(
    ("pod", "added", "want"),
    [
        pytest.param(member("p", "pg"), pod_group("pg", 1), QueueingHint.Queue, id="its-group"),
        pytest.param(
            member("p", "pg1"), pod_group("pg2", 1), QueueingHint.QueueSkip, id="other-name"
        ),
        pytest.param(
            member("p", "pg", namespace="ns1"),
            pod_group("pg", 1, namespace="ns2"),
            QueueingHint.QueueSkip,
            id="other-namespace",
        ),
    ],
)
def test_hint_after_pod_group_added(
    pod: Pod, added: SchedulingPodGroup, want: QueueingHint
) -> None:
    assert after_pod_group_added(pod, None, added) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(pod_group("pg", 4), pod_group("pg", 3), QueueingHint.Queue, id="lowered"),
        pytest.param(pod_group("pg", 3), pod_group("pg", 3), QueueingHint.QueueSkip, id="same"),
        pytest.param(pod_group("pg", 3), pod_group("pg", 5), QueueingHint.QueueSkip, id="raised"),
        pytest.param(pod_group("pg"), pod_group("pg"), QueueingHint.QueueSkip, id="basic"),
        pytest.param(
            pod_group("other", 4), pod_group("other", 1), QueueingHint.QueueSkip, id="other"
        ),
    ],
)
def test_hint_after_pod_group_updated(
    old: SchedulingPodGroup, new: SchedulingPodGroup, want: QueueingHint
) -> None:
    assert after_pod_group_updated(member("p", "pg"), old, new) == want


# -- TestGangSchedulingFlow ---------------------------------------------------------------

GANG_1 = pod_group("pg1", 3)
GANG_2 = pod_group("pg2", 4)
BASIC = pod_group("pg3")
P1, P2, P3 = (member(n, "pg1") for n in ("p1", "p2", "p3"))
P4, P5 = (member(n, "pg2") for n in ("p4", "p5"))
BASIC_POD = member("basic-pod", "pg3")
NON_GANG = member("non-gang", None)
WAITING_ON_PERMIT = Status(
    Code.Wait, ("waiting for minCount pods from a gang to be waiting on permit",)
)


@dataclass(frozen=True)
class Flow:
    pod: Pod
    initial_pods: tuple[Pod, ...] = ()
    groups: tuple[SchedulingPodGroup, ...] = (GANG_1, GANG_2, BASIC)
    waiting_on_permit: tuple[Pod, ...] = ()
    pre_enqueue: Status = SUCCESS
    permit: Status = SUCCESS
    activated: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()


FLOWS = {
    "non-gang pod succeeds immediately": Flow(NON_GANG),
    "basic policy pod succeeds immediately": Flow(BASIC_POD),
    "gang pod fails PreEnqueue when pod group is not yet created": Flow(
        P1,
        initial_pods=(P2, P3, P4, P5),
        groups=(),
        pre_enqueue=Status(
            Code.UnschedulableAndUnresolvable,
            ('waiting for pod\'s pod group "pg1" to appear in scheduling queue',),
        ),
    ),
    "gang pod fails PreEnqueue when quorum is not met": Flow(
        P1,
        initial_pods=(P2, P4, P5),
        groups=(GANG_1, GANG_2),
        pre_enqueue=Status(
            Code.UnschedulableAndUnresolvable,
            ("waiting for minCount pods from a gang to appear in scheduling queue",),
        ),
    ),
    "gang pod passes PreEnqueue, but waits at Permit": Flow(
        P1,
        initial_pods=(P2, P3, P4, P5),
        groups=(GANG_1, GANG_2),
        waiting_on_permit=(P2, P4, P5),
        permit=WAITING_ON_PERMIT,
        activated=("default/p3",),
    ),
    "final gang pod arrives at Permit and allows all waiting pods from a gang": Flow(
        P1,
        initial_pods=(P2, P3, P4, P5),
        groups=(GANG_1, GANG_2),
        waiting_on_permit=(P2, P3, P4, P5),
        allowed=("p2", "p3"),
    ),
}


@pytest.mark.parametrize("flow", FLOWS.values(), ids=FLOWS.keys())
def test_gang_scheduling_flow(flow: Flow) -> None:
    world = World(groups=list(flow.groups), pods=[*flow.initial_pods, flow.pod])
    plugin = world.plugin()

    assert plugin.pre_enqueue(PodInfo.of(flow.pod)) == flow.pre_enqueue
    if not flow.pre_enqueue.is_success():
        return

    for pod in flow.waiting_on_permit:  # they reserved and wait at Permit already
        info = PodInfo.of(pod)
        assert plugin.reserve(CycleState(), info, "some-node").is_success()
        status, timeout = plugin.permit(CycleState(), info, "some-node")
        assert status.code == Code.Wait, pod.metadata.name
        assert 0 < timeout <= DEFAULT_SCHEDULING_TIMEOUT
        world.waiting.append(Waiting(pod))

    state, info = CycleState(), PodInfo.of(flow.pod)
    assert plugin.reserve(state, info, "some-node").is_success()
    status, _ = plugin.permit(state, info, "some-node")
    assert status == flow.permit
    assert tuple(state.pods_to_activate) == flow.activated
    allowed = tuple(w.pod.metadata.name for w in world.waiting if w.allowed_by == [NAME])
    assert allowed == flow.allowed
    if status.code == Code.Wait:
        plugin.unreserve(state, info, "some-node")


def test_permit_counts_bound_members() -> None:
    """A member already bound counts as assigned: two bound and this one make three."""
    world = World(groups=[GANG_1], pods=[on_node(P2, "n1"), on_node(P3, "n2"), P1])
    status, _ = world.plugin().permit(CycleState(), PodInfo.of(P1), "n3")
    assert status == SUCCESS


def test_permit_without_its_pod_group_is_an_error() -> None:
    world = World(groups=[], pods=[P1])
    status, _ = world.plugin().permit(CycleState(), PodInfo.of(P1), "n1")
    assert status.code == Code.Error
    assert status.message() == "failed to get pod group default/pg1"


def test_the_group_shares_one_deadline_and_gets_a_new_one_after_it() -> None:
    world = World(groups=[GANG_1], pods=[P1, P2, P3])
    plugin = world.plugin()
    _, first = plugin.permit(CycleState(), PodInfo.of(P1), "n1")
    assert first == DEFAULT_SCHEDULING_TIMEOUT == 300.0
    world.waiting.append(Waiting(P1))
    world.now += 100
    _, second = plugin.permit(CycleState(), PodInfo.of(P2), "n1")
    assert second == 200.0
    world.waiting.clear()
    world.now += 201  # the deadline passed: the pods timed out, a new attempt starts
    _, third = plugin.permit(CycleState(), PodInfo.of(P2), "n1")
    assert third == 300.0


@pytest.mark.parametrize(
    ("gates", "in_profile"),
    [
        ("", False),
        ("GenericWorkload=true", False),
        ("GenericWorkload=true,GangScheduling=true", True),
    ],
)
def test_in_the_default_profile_only_with_its_gates(gates: str, in_profile: bool) -> None:
    features.install(features.parse(gates))
    try:
        names = [p.name for p in default_profile().plugins.multi_point.enabled]
    finally:
        features.install(features.DEFAULTS)
    assert (NAME in names) == in_profile
