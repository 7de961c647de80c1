"""Coscheduling, from scheduler-plugins' coscheduling_test.go and core_test.go tables:
QueueSort order, PreFilter, PostFilter, Permit, Unreserve (and its binding state)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from contracts.k8s import (
    POD_GROUP_LABEL,
    ObjectMeta,
    Pod,
    PodGroup,
    PodGroupSpec,
    PodSchedulingGate,
)
from services.framework.api.diagnosis import Diagnosis
from services.framework.api.interface import CycleState, Handle
from services.framework.api.listers import Listers
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo, QueuedPodInfo
from services.framework.plugins.coscheduling import Coscheduling, CoschedulingArgs
from tests.builders import make_node, make_pod
from tests.unit.framework.helpers import snapshot_of


def pg(
    name: str, min_member: int, *, created: str = "2026-01-01T00:00:00Z", **spec: Any
) -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace="default", creation_timestamp=created),
        spec=PodGroupSpec(min_member=min_member, **spec),
    )


def member(name: str, group: str, *, node: str = "", priority: int = 0, cpu: str = "1") -> Pod:
    pod = make_pod(name, node_name=node or None, priority=priority, requests={"cpu": cpu})
    labels = {**pod.metadata.labels, POD_GROUP_LABEL: group}
    return msgspec.structs.replace(
        pod, metadata=msgspec.structs.replace(pod.metadata, labels=labels)
    )


def gated(pod: Pod) -> Pod:
    spec = msgspec.structs.replace(pod.spec, scheduling_gates=[PodSchedulingGate(name="hold")])
    return msgspec.structs.replace(pod, spec=spec)


@dataclass
class Waiting:
    pod: Pod
    pending: list[str] = field(default_factory=lambda: ["Coscheduling"])
    outcome: tuple[str, str] | None = None

    def get_pod(self) -> Pod:
        return self.pod

    @property
    def node(self) -> str:
        return "n1"

    def get_pending_plugins(self) -> list[str]:
        return list(self.pending)

    def allow(self, plugin: str) -> None:
        self.outcome = ("allow", plugin)

    def reject(self, plugin: str, message: str) -> None:
        self.outcome = ("reject", message)


@dataclass
class World:
    """The plugin's Handle: PodGroups, the pods of each group, the waiting pods, time."""

    groups: list[PodGroup] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    waiting: list[Waiting] = field(default_factory=list)
    now: float = 1000.0

    def pods_in_group(self, namespace: str, group: str) -> list[Pod]:
        return [p for p in self.pods if p.metadata.labels.get(POD_GROUP_LABEL) == group]

    def pods_in_scheduling_group(self, namespace: str, group: str) -> list[Pod]:
        return []

    def get_waiting_pod(self, uid: str) -> Waiting | None:
        return next((w for w in self.waiting if w.pod.metadata.uid == uid), None)

    def iterate_over_waiting_pods(self, callback: Any) -> None:
        for w in self.waiting:
            callback(w)

    def reject_waiting_pod(self, uid: str) -> bool:
        return False

    def add(self, pod: PodInfo, node: str, waits: dict[str, float]) -> None:
        raise AssertionError("the framework adds waiting pods, not the plugin")

    def plugin(self, **args: int) -> Coscheduling:
        listers = Listers()
        for group in self.groups:
            listers.put(group)
        handle = Handle("default-scheduler", listers, self, self, lambda: self.now)
        return Coscheduling(CoschedulingArgs(**args).defaulted(), handle)


def queued(pod: Pod, timestamp: float) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo.of(pod), timestamp, initial_attempt_timestamp=timestamp)


def test_queue_sort_priority_then_group_time_then_group_name() -> None:
    world = World(
        groups=[
            pg("early", 2, created="2026-01-01T00:00:00Z"),
            pg("late", 2, created="2026-01-02T00:00:00Z"),
        ]
    )
    plugin = world.plugin()
    infos = {
        "late-0": queued(member("late-0", "late"), 1.0),
        "early-1": queued(member("early-1", "early"), 50.0),
        "early-0": queued(member("early-0", "early"), 99.0),
        "lonely": queued(make_pod("lonely"), 1_767_225_601.0),  # after early, before late
        "urgent": queued(member("urgent", "late", priority=10), 100.0),
    }
    ordered = sorted(infos, key=lambda n: plugin.sort_key(infos[n]))
    assert ordered == ["urgent", "early-0", "early-1", "lonely", "late-0"]
    assert plugin.less(infos["early-0"], infos["late-0"])
    assert not plugin.less(infos["late-0"], infos["early-0"])


@pytest.mark.parametrize(
    ("pods", "groups", "backed_off", "want"),
    [
        pytest.param([make_pod("p")], [], False, SUCCESS, id="no-group"),
        pytest.param([member("p", "ghost")], [], False, SUCCESS, id="group-not-found-passes"),
        pytest.param(
            [member("p", "g"), member("q", "g")],
            [pg("g", 3)],
            False,
            Status(
                Code.UnschedulableAndUnresolvable,
                (
                    "pre-filter pod p cannot find enough sibling pods, current pods number: 2, "
                    "minMember of group: 3",
                ),
            ),
            id="not-enough-siblings",
        ),
        pytest.param(
            [member("p", "g"), member("q", "g")], [pg("g", 2)], False, SUCCESS, id="enough"
        ),
        pytest.param(
            [member("p", "g"), gated(member("q", "g"))],
            [pg("g", 2)],
            False,
            Status(
                Code.UnschedulableAndUnresolvable,
                ("pre-filter pod p cannot proceed due to gated pods in the same PodGroup",),
            ),
            id="gated-member-below-quorum",
        ),
        pytest.param(
            [member("p", "g"), member("q", "g"), gated(member("r", "g"))],
            [pg("g", 2)],
            False,
            SUCCESS,
            id="gated-member-above-quorum",
        ),
        pytest.param(
            [member("p", "g"), gated(member("q", "g")), gated(member("r", "g"))],
            [pg("g", 2)],
            False,
            Status(
                Code.UnschedulableAndUnresolvable,
                ("pre-filter pod p cannot proceed due to gated pods in the same PodGroup",),
            ),
            id="all-siblings-gated",
        ),
        pytest.param(
            [member("p", "g"), member("q", "g")],
            [pg("g", 2)],
            True,
            Status(Code.UnschedulableAndUnresolvable, ("podGroup default/g failed recently",)),
            id="backed-off",
        ),
        pytest.param(
            [member("p", "g"), member("q", "g")],
            [pg("g", 2, min_resources={"cpu": "3"})],
            False,
            SUCCESS,
            id="min-resources-fit",
        ),
        pytest.param(
            [member("p", "g"), member("q", "g")],
            [pg("g", 2, min_resources={"cpu": "10"})],
            False,
            Status(Code.UnschedulableAndUnresolvable, ("resource gap: map[cpu:4000]",)),
            id="min-resources-gap",
        ),
    ],
)
def test_pre_filter(
    pods: list[Pod], groups: list[PodGroup], backed_off: bool, want: Status
) -> None:
    world = World(groups=groups, pods=pods)
    plugin = world.plugin()
    if backed_off:
        plugin._backed_off["default/g"] = world.now + 5
    nodes = snapshot_of(
        [
            make_node("n1", allocatable={"cpu": "3", "pods": 110}),
            make_node("n2", allocatable={"cpu": "3", "pods": 110}),
        ]
    )
    _, status = plugin.pre_filter(CycleState(), PodInfo.of(pods[0]), nodes.snapshot())
    assert status == want


@pytest.mark.parametrize(
    ("assigned", "min_member", "timeout", "want", "allowed"),
    [
        (0, 3, None, (Status(Code.Wait), 60.0), False),
        (1, 3, 7, (Status(Code.Wait), 7.0), False),
        (2, 3, None, (SUCCESS, 0.0), True),
        (5, 3, None, (SUCCESS, 0.0), True),
    ],
)
def test_permit(
    assigned: int, min_member: int, timeout: int | None, want: Any, allowed: bool
) -> None:
    pods = [member(f"m{i}", "g", node="n1") for i in range(assigned)] + [member("me", "g")]
    sibling = Waiting(member("m0-waiting", "g"))
    stranger = Waiting(member("other", "h"))
    world = World(
        groups=[pg("g", min_member, schedule_timeout_seconds=timeout)],
        pods=pods,
        waiting=[sibling, stranger],
    )
    assert world.plugin().permit(CycleState(), PodInfo.of(pods[-1]), "n1") == want
    assert sibling.outcome == (("allow", "Coscheduling") if allowed else None)
    assert stranger.outcome is None


def test_permit_without_group_passes_and_an_unknown_group_is_rejected() -> None:
    world = World()
    plugin = world.plugin()
    assert plugin.permit(CycleState(), PodInfo.of(make_pod("p")), "n1") == (SUCCESS, 0.0)
    assert plugin.permit(CycleState(), PodInfo.of(member("p", "ghost")), "n1") == (
        Status(Code.Unschedulable, ("PodGroup not found",)),
        0.0,
    )


@pytest.mark.parametrize(
    ("assigned", "min_member", "backoff", "rejected", "message"),
    [
        (3, 3, 0, False, ()),
        (9, 10, 0, False, ()),  # a gap of 10 %: later members may still make it
        (
            1,
            3,
            0,
            True,
            (
                "PodGroup default/g gets rejected due to Pod me is unschedulable even after "
                "PostFilter",
            ),
        ),
        (
            1,
            3,
            30,
            True,
            (
                "PodGroup default/g gets rejected due to Pod me is unschedulable even after "
                "PostFilter",
            ),
        ),
    ],
)
def test_post_filter(
    assigned: int, min_member: int, backoff: int, rejected: bool, message: tuple[str, ...]
) -> None:
    pods = [member(f"m{i}", "g", node="n1") for i in range(assigned)]
    pods += [member(f"p{i}", "g") for i in range(min_member - assigned)]
    me = member("me", "g")
    sibling = Waiting(member("w", "g"))
    world = World(groups=[pg("g", min_member)], pods=pods, waiting=[sibling])
    plugin = world.plugin(pod_group_backoff_seconds=backoff) if backoff else world.plugin()
    _, status = plugin.post_filter(CycleState(), PodInfo.of(me), Diagnosis())
    assert status == Status(Code.Unschedulable, message)
    assert sibling.outcome == (
        ("reject", "optimistic rejection in PostFilter") if rejected else None
    )
    assert ("default/g" in plugin._backed_off) == (rejected and backoff > 0)
    if backoff:
        nodes = snapshot_of([make_node("n1")]).snapshot()
        _, again = plugin.pre_filter(CycleState(), PodInfo.of(me), nodes)
        assert again.reasons == ("podGroup default/g failed recently",)
        world.now += backoff + 1
        _, later = plugin.pre_filter(CycleState(), PodInfo.of(me), nodes)
        assert (
            later.code != Code.UnschedulableAndUnresolvable
            or "failed recently" not in later.message()
        )


def test_unreserve_rejects_waiting_siblings_even_without_listers() -> None:
    sibling, stranger = Waiting(member("w", "g")), Waiting(member("x", "h"))
    scheduler_side = World(groups=[pg("g", 2)], pods=[member("me", "g")], waiting=[])
    state = CycleState()
    plugin = scheduler_side.plugin()
    assert plugin.permit(state, PodInfo.of(member("me", "g")), "n1")[0].code == Code.Wait
    handed_on = plugin.binding_state(state)
    assert handed_on is not None
    binder_side = World(waiting=[sibling, stranger])  # no PodGroups: another process
    binder_plugin, binder_state = binder_side.plugin(), CycleState()
    binder_plugin.restore_binding_state(binder_state, handed_on)
    binder_plugin.unreserve(binder_state, PodInfo.of(member("me", "g")), "n1")
    assert sibling.outcome == ("reject", "rejection in Unreserve")
    assert stranger.outcome is None


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"permit_waiting_time_seconds": -1}, "permitWaitingTimeSeconds: Invalid value: -1: "
         "must be greater than 0"),
        ({"pod_group_backoff_seconds": -2}, "podGroupBackoffSeconds: Invalid value: -2: "
         "must be greater than 0"),
        ({"pod_group_reject_percentage": 101}, "podGroupRejectPercentage: Invalid value: 101: "
         "must be between 0 and 100"),
        ({"pod_group_reject_percentage": -1}, "podGroupRejectPercentage: Invalid value: -1: "
         "must be between 0 and 100"),
        ({"pod_group_reject_percentage": 0}, None),
        ({"pod_group_reject_percentage": 100}, None),
    ],
)  # fmt: skip
def test_args_are_validated(args: dict[str, int], error: str | None) -> None:
    from services.framework.api.registry import ConfigError

    defaulted = CoschedulingArgs(**args).defaulted()
    if error is None:
        defaulted.validate("args")
    else:
        with pytest.raises(ConfigError, match=re.escape(error)):
            defaulted.validate("args")


def test_args_defaults() -> None:
    defaulted = CoschedulingArgs().defaulted()
    assert defaulted.permit_waiting_time_seconds == 60
    assert defaulted.pod_group_backoff_seconds == 0
    assert defaulted.pod_group_reject_percentage == 10


@pytest.mark.parametrize(
    ("assigned", "min_member", "percentage", "rejected"),
    [
        (9, 10, 10, False),  # 10 % unassigned: later members may still make it
        (8, 10, 10, True),
        (8, 10, 20, False),
        (9, 10, 0, True),  # 0: every shortfall rejects the group
        (0, 4, 100, False),  # 100: never rejected at PostFilter
    ],
)
def test_post_filter_reject_percentage(
    assigned: int, min_member: int, percentage: int, rejected: bool
) -> None:
    pods = [member(f"m{i}", "g", node="n1") for i in range(assigned)]
    pods += [member(f"p{i}", "g") for i in range(min_member - assigned)]
    sibling = Waiting(member("w", "g"))
    world = World(groups=[pg("g", min_member)], pods=pods, waiting=[sibling])
    plugin = world.plugin(pod_group_reject_percentage=percentage)
    plugin.post_filter(CycleState(), PodInfo.of(member("me", "g")), Diagnosis())
    assert (sibling.outcome is not None) == rejected


def test_a_group_that_failed_sorts_by_its_failure_time_until_permitted() -> None:
    """lastFailedSchedulePG: PostFilter's rejection, or a member's Unreserve, moves the
    group behind pods queued before the failure; the gang's Permit clears it. The queue's
    instance learns the same from the results (attempt_ended)."""
    world = World(groups=[pg("g", 2, created="2026-01-01T00:00:00Z")], now=1_800_000_000.0)
    plugin = world.plugin()
    gang = queued(member("m0", "g"), 1_767_225_600.0)
    lonely = queued(make_pod("lonely"), 1_790_000_000.0)  # queued after the group's creation
    assert plugin.less(gang, lonely)
    plugin.unreserve(CycleState(), PodInfo.of(member("m0", "g")), "n1")
    assert plugin.less(lonely, gang)
    world.pods = [member("m1", "g", node="n1"), member("m0", "g")]
    assert plugin.permit(CycleState(), PodInfo.of(member("m0", "g")), "n1")[0] == SUCCESS
    assert plugin.less(gang, lonely)

    queue_side = world.plugin()
    queue_side.attempt_ended(member("m0", "g"), "unschedulable", "no", forgotten=False)
    assert queue_side.less(gang, lonely)
    rejected = (
        "PodGroup default/g gets rejected due to Pod m0 is unschedulable even after PostFilter"
    )
    queue_side.attempt_ended(member("m0", "g"), "unschedulable", rejected, forgotten=False)
    assert queue_side.less(lonely, gang)
    queue_side.attempt_ended(member("m1", "g"), "bound", "", forgotten=False)
    assert queue_side.less(gang, lonely)
    queue_side.attempt_ended(member("m0", "g"), "error", "", forgotten=True)
    assert queue_side.less(lonely, gang)


def test_the_first_member_to_wait_activates_its_siblings() -> None:
    pods = [member("m0", "g"), member("m1", "g"), member("m2", "g")]
    world = World(groups=[pg("g", 3)], pods=pods)
    plugin = world.plugin()
    first = CycleState()
    assert plugin.permit(first, PodInfo.of(pods[0]), "n1")[0].code == Code.Wait
    assert sorted(first.pods_to_activate) == ["default/m1", "default/m2"]
    world.pods = [member("m0", "g", node="n1"), pods[1], pods[2]]
    second = CycleState()
    assert plugin.permit(second, PodInfo.of(pods[1]), "n1")[0].code == Code.Wait
    assert second.pods_to_activate == {}


@pytest.mark.parametrize("retrying", [False, True])
def test_unreserve_for_a_retry_within_the_attempt_keeps_the_siblings_waiting(
    retrying: bool,
) -> None:
    """ksched: a reservation another replica got first is scheduled again within the
    same attempt; its Unreserve is no failure of the gang."""
    sibling = Waiting(member("w", "g"))
    world = World(groups=[pg("g", 3)], pods=[member("me", "g")], waiting=[sibling])
    state = CycleState()
    state.retrying = retrying
    world.plugin().unreserve(state, PodInfo.of(member("me", "g")), "n1")
    assert sibling.outcome == (None if retrying else ("reject", "rejection in Unreserve"))
