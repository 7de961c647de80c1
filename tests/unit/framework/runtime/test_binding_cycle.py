"""The binding-cycle runners, ported from upstream's framework_test.go tables (Reserve,
Permit, PreBind, Bind, PostBind, PostFilter), and the timeout message's duration format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from services.framework.api.diagnosis import Diagnosis
from services.framework.api.effects import BindEffect
from services.framework.api.interface import (
    BindPlugin,
    CycleState,
    ExtensionPoint,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    ReservePlugin,
    WaitingPods,
    implements,
)
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Code, Status
from services.framework.api.types import PodInfo
from services.framework.config.in_tree import in_tree_registry
from services.framework.runtime.binding import MAX_PERMIT_TIMEOUT
from services.framework.runtime.framework import Framework, rejection_message
from services.framework.runtime.profile import PluginRef, Plugins, PluginSet, Profile
from services.framework.runtime.waiting_pods import go_duration
from tests.builders import make_pod

INJECTED = "injected because the test said so"


@dataclass
class Injected(ReservePlugin, PermitPlugin, PreBindPlugin, BindPlugin, PostBindPlugin):
    """A plugin at every binding-cycle point that answers with the injected codes and
    records the calls (upstream's TestPlugin with injectedResult)."""

    plugin_name: str
    reserve_code: Code = Code.Success
    permit_code: Code = Code.Success
    permit_timeout: float = 0.0
    pre_bind_code: Code = Code.Success
    bind_code: Code = Code.Success
    calls: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.plugin_name

    def _status(self, code: Code) -> Status:
        return SUCCESS if code == Code.Success else Status(code, (INJECTED,))

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.calls.append("reserve")
        return self._status(self.reserve_code)

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self.calls.append("unreserve")
        state.write("order", [*_order(state), self.plugin_name])

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]:
        self.calls.append("permit")
        return self._status(self.permit_code), self.permit_timeout

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.calls.append("pre_bind")
        return self._status(self.pre_bind_code)

    async def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.calls.append("bind")
        if self.bind_code == Code.Success:
            state.effects.append(BindEffect(node))
        return self._status(self.bind_code)

    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self.calls.append("post_bind")


@dataclass
class Rejector(PostFilterPlugin):
    plugin_name: str
    code: Code
    reason: str = INJECTED

    @property
    def name(self) -> str:
        return self.plugin_name

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        return None, (SUCCESS if self.code == Code.Success else Status(self.code, (self.reason,)))


def _order(state: CycleState) -> list[str]:
    try:
        return list(state.read("order", list))
    except Exception:
        return []


@dataclass
class Recorder:
    """WaitingPods that records what Permit adds."""

    added: list[tuple[str, str, dict[str, float]]] = field(default_factory=list)

    def get_waiting_pod(self, uid: str) -> None:
        return None

    def iterate_over_waiting_pods(self, callback: object) -> None:
        return None

    def reject_waiting_pod(self, uid: str) -> bool:
        return False

    def add(self, pod: PodInfo, node: str, waits: dict[str, float]) -> None:
        self.added.append((pod.key, node, dict(waits)))


def framework_of(
    plugins: Sequence[object], *, bind_default: bool = False, waiting: WaitingPods | None = None
) -> Framework:
    registry = dict(in_tree_registry())
    names = []
    for plugin in plugins:
        name = plugin.name  # type: ignore[attr-defined]
        names.append(PluginRef(name))
        registry[name] = PluginEntry(name, type(plugin), lambda _a, _h, p=plugin: p)
    binders = [*(n for n in names if implements(_by(plugins, n.name), ExtensionPoint.Bind))]
    if bind_default or not binders:
        binders.append(PluginRef("DefaultBinder"))
    post_filters = tuple(
        n for n in names if implements(_by(plugins, n.name), ExtensionPoint.PostFilter)
    )
    others = tuple(n for n in names if isinstance(_by(plugins, n.name), Injected))
    profile = Profile(
        plugins=Plugins(
            queue_sort=PluginSet((PluginRef("PrioritySort"),)),
            post_filter=PluginSet(post_filters),
            reserve=PluginSet(others),
            permit=PluginSet(others),
            pre_bind=PluginSet(others),
            bind=PluginSet(tuple(binders)),
            post_bind=PluginSet(others),
        )
    )
    return Framework(profile, registry, waiting_pods=waiting)


def _by(plugins: Sequence[object], name: str) -> object:
    return next(p for p in plugins if p.name == name)  # type: ignore[attr-defined]


POD = PodInfo.of(make_pod("web"))


@pytest.mark.parametrize(
    ("codes", "want"),
    [
        ([], SUCCESS),
        ([Code.Success, Code.Success], SUCCESS),
        ([Code.Unschedulable], Status(Code.Unschedulable, (INJECTED,), "p0")),
        (
            [Code.UnschedulableAndUnresolvable],
            Status(Code.UnschedulableAndUnresolvable, (INJECTED,), "p0"),
        ),
        ([Code.Error], Status(Code.Error, (f'running Reserve plugin "p0": {INJECTED}',), "p0")),
        (
            [Code.Success, Code.Error],
            Status(Code.Error, (f'running Reserve plugin "p1": {INJECTED}',), "p1"),
        ),
    ],
)
def test_reserve(codes: list[Code], want: Status) -> None:
    plugins = [Injected(f"p{i}", reserve_code=c) for i, c in enumerate(codes)]
    assert framework_of(plugins).run_reserve_plugins_reserve(CycleState(), POD, "n1") == want


def test_unreserve_runs_in_reverse_order() -> None:
    plugins = [Injected(f"p{i}") for i in range(3)]
    state = CycleState()
    framework_of(plugins).run_reserve_plugins_unreserve(state, POD, "n1")
    assert _order(state) == ["p2", "p1", "p0"]


WAIT_MESSAGE = 'one or more plugins asked to wait and no plugin rejected pod "web"'


@pytest.mark.parametrize(
    ("codes", "want", "waits"),
    [
        ([], SUCCESS, None),
        ([Code.Success, Code.Success], SUCCESS, None),
        ([Code.Skip], SUCCESS, None),
        ([Code.Unschedulable], Status(Code.Unschedulable, (INJECTED,), "p0"), None),
        (
            [Code.UnschedulableAndUnresolvable],
            Status(Code.UnschedulableAndUnresolvable, (INJECTED,), "p0"),
            None,
        ),
        (
            [Code.Error],
            Status(Code.Error, (f'running Permit plugin "p0": {INJECTED}',), "p0"),
            None,
        ),
        (
            [Code.Error, Code.Error],
            Status(Code.Error, (f'running Permit plugin "p0": {INJECTED}',), "p0"),
            None,
        ),
        ([Code.Wait], Status(Code.Wait, (WAIT_MESSAGE,)), {"p0": 10.0}),
        (
            [Code.Wait, Code.Success, Code.Wait],
            Status(Code.Wait, (WAIT_MESSAGE,)),
            {"p0": 10.0, "p2": 10.0},
        ),
        # A rejection after a wait wins: the pod is not added.
        ([Code.Wait, Code.Unschedulable], Status(Code.Unschedulable, (INJECTED,), "p1"), None),
    ],
)
def test_permit(codes: list[Code], want: Status, waits: dict[str, float] | None) -> None:
    plugins = [Injected(f"p{i}", permit_code=c, permit_timeout=10) for i, c in enumerate(codes)]
    recorder = Recorder()
    assert (
        framework_of(plugins, waiting=recorder).run_permit_plugins(CycleState(), POD, "n1") == want
    )
    assert recorder.added == ([] if waits is None else [("default/web", "n1", waits)])


def test_permit_timeout_is_capped_at_15_minutes() -> None:
    plugins = [Injected("long", permit_code=Code.Wait, permit_timeout=3600)]
    recorder = Recorder()
    framework_of(plugins, waiting=recorder).run_permit_plugins(CycleState(), POD, "n1")
    assert recorder.added == [("default/web", "n1", {"long": MAX_PERMIT_TIMEOUT})]
    assert go_duration(MAX_PERMIT_TIMEOUT) == "15m0s"


def test_permit_wait_without_waiting_pods_is_an_error_of_the_caller() -> None:
    plugins = [Injected("p0", permit_code=Code.Wait, permit_timeout=1)]
    with pytest.raises(RuntimeError, match="cannot wait at Permit"):
        framework_of(plugins).run_permit_plugins(CycleState(), POD, "n1")


@pytest.mark.parametrize(
    ("codes", "want"),
    [
        ([], SUCCESS),
        ([Code.Success, Code.Skip], SUCCESS),
        ([Code.Unschedulable], Status(Code.Unschedulable, (INJECTED,), "p0")),
        ([Code.Error], Status(Code.Error, (f'running PreBind plugin "p0": {INJECTED}',), "p0")),
        (
            [Code.Success, Code.Error],
            Status(Code.Error, (f'running PreBind plugin "p1": {INJECTED}',), "p1"),
        ),
    ],
)
async def test_pre_bind(codes: list[Code], want: Status) -> None:
    plugins = [Injected(f"p{i}", pre_bind_code=c) for i, c in enumerate(codes)]
    assert await framework_of(plugins).run_pre_bind_plugins(CycleState(), POD, "n1") == want


@pytest.mark.parametrize(
    ("codes", "default", "want", "bound_by"),
    [
        ([Code.Success], False, SUCCESS, "p0"),
        ([Code.Skip, Code.Success], False, SUCCESS, "p1"),
        ([Code.Skip, Code.Skip], True, SUCCESS, "DefaultBinder"),
        ([Code.Skip, Code.Skip], False, Status(Code.Skip, (INJECTED,)), None),
        (
            [Code.Error, Code.Success],
            False,
            Status(Code.Error, (f'running Bind plugin "p0": {INJECTED}',), "p0"),
            None,
        ),
        ([Code.Unschedulable], False, Status(Code.Unschedulable, (INJECTED,), "p0"), None),
    ],
)
async def test_bind_first_plugin_that_does_not_skip_decides(
    codes: list[Code], default: bool, want: Status, bound_by: str | None
) -> None:
    plugins = [Injected(f"p{i}", bind_code=c) for i, c in enumerate(codes)]
    state = CycleState()
    framework = framework_of(plugins, bind_default=default)
    assert await framework.run_bind_plugins(state, POD, "n1") == want
    bound = [p.name for p in plugins if p.calls.count("bind") and p.bind_code == Code.Success]
    if bound_by == "DefaultBinder":
        assert state.effects == [BindEffect("n1")] and bound == []
    elif bound_by is not None:
        assert state.effects == [BindEffect("n1")] and bound == [bound_by]
    else:
        assert state.effects == []
    called = [p.name for p in plugins if "bind" in p.calls]
    stop = next((i for i, c in enumerate(codes) if c != Code.Skip), len(codes) - 1)
    assert called == [f"p{i}" for i in range(stop + 1)]


def test_post_bind_runs_every_plugin() -> None:
    plugins = [Injected(f"p{i}") for i in range(3)]
    framework_of(plugins).run_post_bind_plugins(CycleState(), POD, "n1")
    assert [p.calls for p in plugins] == [["post_bind"]] * 3


@pytest.mark.parametrize(
    ("codes", "want"),
    [
        ([Code.Success], SUCCESS),
        ([Code.Unschedulable, Code.Success], SUCCESS),
        (
            [Code.Unschedulable, Code.Unschedulable],
            Status(Code.Unschedulable, (INJECTED, INJECTED), "f0"),
        ),
        (
            [Code.UnschedulableAndUnresolvable, Code.Success],
            Status(Code.UnschedulableAndUnresolvable, (INJECTED,), "f0"),
        ),
        ([Code.Unschedulable, Code.Error], Status(Code.Error, (INJECTED,), "f1")),
    ],
)
def test_post_filter(codes: list[Code], want: Status) -> None:
    plugins = [Rejector(f"f{i}", c) for i, c in enumerate(codes)]
    assert framework_of(plugins).run_post_filter_plugins(CycleState(), POD, Diagnosis())[1] == want


def test_rejection_is_a_fit_error_of_one_node() -> None:
    status = Status(
        Code.Unschedulable, ("rejected due to timeout after waiting 1s at plugin X",), "X"
    )
    assert rejection_message(POD, "n1", status) == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 1s at plugin X."
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1, "1s"),
        (1.5, "1.5s"),
        (10, "10s"),
        (60, "1m0s"),
        (90, "1m30s"),
        (900, "15m0s"),
        (3600, "1h0m0s"),
        (3661.5, "1h1m1.5s"),
        (0.5, "500ms"),
        (0.0015, "1.5ms"),
        (0.000001, "1µs"),
        (0.000000001, "1ns"),
        (-2, "-2s"),
    ],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
