"""The scheduling framework's extension points, as Protocols a plugin implements.

A plugin is one class with a ``name`` that names, as its bases, the Protocol of every
point it serves (``class NodeName(FilterPlugin, EnqueueExtensions)``), so mypy checks
each signature; :func:`implements` finds the points from those bases, as upstream checks
which interfaces a plugin implements. Filter and Score are columnar:
they see every node at once through a :class:`Snapshot` and answer with arrays.

Contracts, per point (what the framework does with the answer):

- PreFilter: Success continues; Skip skips this plugin's Filter for the pod;
  Unschedulable* ends the attempt with a FitError whose message is the status
  message; Error fails the attempt. A :class:`PreFilterResult` narrows the nodes.
- Filter: a :class:`FilterResult` per node; the first plugin, in profile order, that
  rejects a node decides its status. Raise (ideally :class:`StatusError`) on an
  internal error: the attempt fails with Error.
- PreScore: Skip skips this plugin's Score; anything else but Success is an Error.
- Score: one int64 per given row; ``normalize_score`` (NormalizeScore) maps them into
  [0, 100]; the framework multiplies by the plugin's weight and sums.
- Reserve / Unreserve, Permit, PreBind, Bind, PostBind: as upstream, per pod and node.
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Never, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from contracts.k8s import Pod
from services.framework.api.diagnosis import Diagnosis
from services.framework.api.effects import Effect
from services.framework.api.events import ClusterEventWithHint
from services.framework.api.listers import Listers
from services.framework.api.preemption import Preempting
from services.framework.api.status import Status, StatusError
from services.framework.api.types import Int64Array, PodInfo, QueuedPodInfo

if TYPE_CHECKING:
    # Annotations only: the per-cycle Snapshot is the cache's, a layer below plugins
    # and above this API (import-linter: exclude_type_checking_imports).
    from services.framework.cache.snapshot import Snapshot

T = TypeVar("T")
Rows = NDArray[np.intp]
"""Row numbers into a :class:`Snapshot` (the feasible nodes, for Score)."""


class ExtensionPoint(enum.StrEnum):
    """Extension points, spelled as in ``KubeSchedulerConfiguration`` ``plugins``."""

    PreEnqueue = "preEnqueue"
    QueueSort = "queueSort"
    PreFilter = "preFilter"
    Filter = "filter"
    PostFilter = "postFilter"
    PreScore = "preScore"
    Score = "score"
    Reserve = "reserve"
    Permit = "permit"
    PreBind = "preBind"
    Bind = "bind"
    PostBind = "postBind"


class CycleState:
    """Scratch space for one scheduling attempt (``framework.CycleState``). Values that
    have a ``clone()`` method are cloned by :meth:`clone`; others are shared.
    ``effects``: what PreBind / Bind plugins asked the binder to publish, in order."""

    def __init__(self) -> None:
        self._data: dict[str, object] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.effects: list[Effect] = []
        self.reserved_devices: list[str] = []
        """Devices Reserve allocated to the pod's claims in this attempt
        (``driver/pool/device``, DynamicResources): the store's assume takes them
        atomically with the node's room, so two replicas never hand out one device."""
        self.explain = False
        """The attempt is explained: plugins may say more (preemption's candidates)."""
        self.first_of_group = False
        """InterPodAffinity found no pod anywhere matching the pod's required affinity,
        which the pod matches itself: Filter waives the terms (the first pod of a group
        may go to any domain). Scheduler replicas guard such a decision (scheduler.domains)."""
        self.retrying = False
        """ksched: Unreserve runs because another replica's reservation got the node
        first, and the pod is scheduled again within the same attempt (upstream's single
        scheduler has no such retry): nothing failed, so a plugin that reacts to a failed
        attempt (Coscheduling rejecting the waiting siblings) leaves that out."""
        self.pods_to_activate: dict[str, Pod] = {}
        """``PodsToActivate``: pods (by ``namespace/name``) a plugin wants moved to
        activeQ once this cycle succeeds (the pod is reserved, or waits at Permit).
        Shared by clones, as upstream's."""

    def read(self, key: str, kind: type[T]) -> T:
        """The value under ``key``; raises StatusError if absent or not a ``kind``."""
        value = self._data.get(key)
        if not isinstance(value, kind):
            raise StatusError(f'error reading "{key}" from cycleState: not found')
        return value

    def write(self, key: str, value: object) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        copy = CycleState()
        for key, value in self._data.items():
            clone = getattr(value, "clone", None)
            copy._data[key] = clone() if callable(clone) else value
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.explain = self.explain
        copy.first_of_group = self.first_of_group
        copy.pods_to_activate = self.pods_to_activate
        copy.retrying = self.retrying
        return copy


@dataclass(frozen=True, slots=True)
class FilterResult:
    """One Filter plugin's verdict on every node of the table it was given.

    ``passed[i]`` says whether node ``i`` passes. For a rejected node, ``codes[i]`` is
    a small int and ``describe(code)`` the Status (Unschedulable or
    UnschedulableAndUnresolvable, with its reasons) that code stands for; nodes that
    pass may hold any code. ``describe`` is called only for codes of rejected nodes, and
    only when a message or diagnosis is needed.
    """

    passed: NDArray[np.bool_]
    codes: Int64Array
    describe: Callable[[int], Status]

    @classmethod
    def all_passed(cls, num_nodes: int) -> FilterResult:
        return cls(np.ones(num_nodes, dtype=np.bool_), np.zeros(num_nodes, np.int64), _no_status)

    @classmethod
    def uniform(cls, passed: NDArray[np.bool_], status: Status) -> FilterResult:
        """Every rejected node gets the same ``status``."""
        return cls(passed, np.zeros(len(passed), np.int64), lambda _code: status)


def _no_status(code: int) -> Status:
    raise LookupError(f"no status for code {code}: every node passed")


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """Nodes a PreFilter plugin allows; ``None`` means all (``framework.PreFilterResult``)."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """``framework.PostFilterResult``: the node nominated for the pod (None: leave the
    pod's nomination as it is; "": clear it). ksched adds what the scheduling cycle
    must publish for a preemption, since plugins do not call an API server: the
    victims to delete (most important first) and the lower-priority pods nominated to
    that node that lose their nomination."""

    nominated_node_name: str | None = None
    victims: tuple[PodInfo, ...] = ()
    num_pdb_violations: int = 0
    cleared_nominations: tuple[PodInfo, ...] = ()
    explanation: Mapping[str, Any] | None = None
    """When the attempt is explained: the candidates considered and why one won."""


class FrameworkRunner(Protocol):
    """What the framework lends its plugins of the cycle in progress (upstream's
    ``Handle`` methods and ``SnapshotSharedLister``): the PostFilter plugins that
    re-run the filters on a changed node (preemption's dry runs)."""

    def cycle_nodes(self) -> Snapshot:
        """The snapshot of the cycle that is running."""
        ...

    def nominated_pods_for(self, node: str) -> Sequence[PodInfo]:
        """``NominatedPodsForNode`` as the cycle sees it."""
        ...

    def filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, view: Snapshot) -> Status:
        """``RunFilterPluginsWithNominatedPods`` on the one node of ``view``."""
        ...

    def filter_many(
        self, state: CycleState, pod: PodInfo, view: Snapshot
    ) -> tuple[NDArray[np.bool_], Callable[[int], Status]]:
        """``RunFilterPluginsWithNominatedPods`` on every node of ``view`` at once: which
        pass, and the status of a row that does not."""
        ...

    def fits_many(
        self, state: CycleState, pod: PodInfo, view: Snapshot, rows: Sequence[int]
    ) -> NDArray[np.bool_]:
        """Whether each of ``rows`` of ``view`` passes ``RunFilterPluginsWithNominatedPods``
        (True/False per node of ``view``; False for the rows not asked about), without
        the statuses of those that do not."""
        ...

    def extensions_active(self, state: CycleState) -> bool:
        """Whether any PreFilter AddPod/RemovePod extension would change ``state``
        (else removing or adding pods changes only the nodes' own columns)."""
        ...

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: str) -> Status:
        """``RunPreFilterExtensionAddPod``."""
        ...

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: str) -> Status:
        """``RunPreFilterExtensionRemovePod``."""
        ...


class NoRunner:
    """A Handle built outside a Framework: no cycle to look into."""

    def _none(self) -> Never:
        raise StatusError("no framework runs this plugin")

    def cycle_nodes(self) -> Snapshot:
        self._none()

    def nominated_pods_for(self, node: str) -> Sequence[PodInfo]:
        return ()

    def filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, view: Snapshot) -> Status:
        self._none()

    def filter_many(
        self, state: CycleState, pod: PodInfo, view: Snapshot
    ) -> tuple[NDArray[np.bool_], Callable[[int], Status]]:
        self._none()

    def fits_many(
        self, state: CycleState, pod: PodInfo, view: Snapshot, rows: Sequence[int]
    ) -> NDArray[np.bool_]:
        self._none()

    def extensions_active(self, state: CycleState) -> bool:
        self._none()

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: str) -> Status:
        self._none()

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: str) -> Status:
        self._none()


class WaitingPod(Protocol):
    """A pod waiting at Permit (upstream's ``framework.WaitingPod``)."""

    def get_pod(self) -> Pod:
        """The pod (metadata: namespace, name, uid, labels)."""
        ...

    @property
    def node(self) -> str: ...

    def get_pending_plugins(self) -> list[str]:
        """The plugins that have not allowed the pod yet."""
        ...

    def allow(self, plugin: str) -> None:
        """``plugin`` allows the pod; once no plugin is pending, the pod binds."""
        ...

    def reject(self, plugin: str, message: str) -> None:
        """Stop every timer; the pod fails Permit with Unschedulable ``message``."""
        ...


class WaitingPods(Protocol):
    """The waiting pods a plugin sees through its Handle (``GetWaitingPod``,
    ``IterateOverWaitingPods``, ``RejectWaitingPod``), across every binder replica
    in the services, and ``add``, which the framework's Permit runner calls."""

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None: ...

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject the waiting pod ``uid`` (plugin "", message "removed"); False when no
        such pod waits."""
        ...

    def add(self, pod: PodInfo, node: str, waits: dict[str, float]) -> None:
        """A pod starts waiting on ``node``: plugin → timeout in seconds."""
        ...


class NoWaitingPods:
    """A Handle's waiting pods when nothing runs Permit waits (the queue's frameworks)."""

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return None

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None:
        return None

    def reject_waiting_pod(self, uid: str) -> bool:
        return False

    def add(self, pod: PodInfo, node: str, waits: dict[str, float]) -> None:
        raise RuntimeError(f"no waiting pods here: {pod.key} cannot wait at Permit")


class PodLister(Protocol):
    """The pods a plugin may list besides the snapshot's nodes (upstream's pod lister),
    by pod group: Coscheduling counts a group's members and those already assigned."""

    def pods_in_group(self, namespace: str, group: str) -> list[Pod]:
        """Every pod of ``namespace`` labelled ``scheduling.x-k8s.io/pod-group: group``,
        pending or not, but not Succeeded or Failed (upstream's scheduler informer leaves
        terminal pods out); one assigned to a node (bound, or assumed and through Permit)
        has ``spec.nodeName`` set."""
        ...

    def pods_in_scheduling_group(self, namespace: str, group: str) -> list[Pod]:
        """The same for the native PodGroup ``group``: every pod of ``namespace`` whose
        ``spec.schedulingGroup.podGroupName`` is ``group`` (GangScheduling)."""
        ...


class NoPods:
    """A Handle's pod lister where nothing lists pods (the binder, the queue)."""

    def pods_in_group(self, namespace: str, group: str) -> list[Pod]:
        return []

    def pods_in_scheduling_group(self, namespace: str, group: str) -> list[Pod]:
        return []


@dataclass(frozen=True, slots=True)
class Handle:
    """What a plugin factory gets from the framework that builds it."""

    profile_name: str
    listers: Listers = field(default_factory=Listers)
    """Cluster objects besides nodes and pods, kept current by the snapshot."""
    waiting_pods: WaitingPods = field(default_factory=NoWaitingPods)
    """The pods waiting at Permit (see :class:`WaitingPods`)."""
    pods: PodLister = field(default_factory=NoPods)
    now: Callable[[], float] = time.time
    """The clock plugins keep time by (backoffs); the services inject theirs."""
    runner: FrameworkRunner = field(default_factory=NoRunner)
    """The framework itself, for plugins that re-run its filters (preemption)."""
    rng: random.Random = field(default_factory=random.Random)
    """The framework's random source (seeded by ``--seed``): preemption's offset."""
    preempting: Preempting = field(default_factory=Preempting)
    """The queue's preemptors whose victims are not gone yet (DefaultPreemption's
    PreEnqueue); empty outside the queue."""


class Plugin(Protocol):
    @property
    def name(self) -> str: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Events that may make a pod this plugin rejected schedulable again."""
        ...


class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status:
        """Success lets the pod into activeQ; anything else parks it (gated)."""
        ...


class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """True if ``a`` should be scheduled before ``b``."""
        ...

    def sort_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        """A key consistent with :meth:`less` (``a`` before ``b`` ⇔ key(a) < key(b))."""
        ...


@runtime_checkable
class AttemptObserver(Protocol):
    """ksched: a QueueSort plugin whose order depends on how attempts end (Coscheduling
    sorts a group that failed by its failure time). QueueSort runs in the queue service
    and the attempts in schedulers and binders, so the queue tells the plugin how each
    attempt ended before it requeues the pod. ``outcome``: bound, unschedulable or
    error; ``message``: the attempt's FailedScheduling message; ``forgotten``: the pod
    held room and its Unreserve ran."""

    def attempt_ended(self, pod: Pod, outcome: str, message: str, forgotten: bool) -> None: ...


class PreFilterExtensions(Protocol):
    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: str) -> Status:
        """Update ``state`` as if ``to_add`` ran on ``node`` (nominated pods pass)."""
        ...

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: str
    ) -> Status: ...


class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


class FilterPlugin(Plugin, Protocol):
    def filter_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot) -> FilterResult: ...


@runtime_checkable
class ResourceFilter(Protocol):
    """A Filter plugin that compares a pod's requests with what each node has left
    (NodeResourcesFit). The scheduler's store reservation re-checks exactly these
    resources atomically (``Framework.checked_resources``), so replicas never overcommit
    what the profile filters on, and never veto on what it does not."""

    def checked_resources(self, pod: PodInfo) -> frozenset[str]:
        """The resources of ``pod`` this Filter checks; ``pods`` for the pod count."""
        ...


class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]: ...


class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Status: ...


class ScorePlugin(Plugin, Protocol):
    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows
    ) -> Int64Array: ...


@runtime_checkable
class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: Int64Array) -> Int64Array:
        """Map the raw scores (one per scored row) into [0, MAX_NODE_SCORE]."""
        ...


class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """Undo :meth:`reserve`; must be idempotent and never fail. When the binding
        cycle fails it runs in the binder, on the reference pod PreBind sees (metadata
        and schedulerName only, see :class:`PreBindPlugin`)."""
        ...


@runtime_checkable
class BindingState(Protocol):
    """A plugin that needs in the binding cycle (another process: the binder) what it
    decided in the scheduling cycle. The scheduler encodes it after Reserve and Permit;
    it travels in the BindRequest under the plugin's name (``plugin_state``), and the
    binder restores it into the binding cycle's CycleState before WaitOnPermit."""

    def binding_state(self, state: CycleState) -> bytes | None:
        """What to hand on, in the plugin's own JSON encoding (None: nothing)."""
        ...

    def restore_binding_state(self, state: CycleState, data: bytes) -> None:
        """Write into ``state`` what :meth:`binding_state` encoded."""
        ...


@runtime_checkable
class ExplainsNode(Protocol):
    """A plugin that adds to an explained attempt (``--explain``) what it decided for
    the node the pod goes to (DynamicResources: which device each request gets)."""

    def explain_node(self, state: CycleState, pod: PodInfo, node: str) -> Mapping[str, Any] | None:
        """JSON-ready details, or None when the plugin has nothing to say."""
        ...


class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]:
        """Success, Wait (with a timeout in seconds) or a rejection."""
        ...


class PreBindPlugin(Plugin, Protocol):
    """Runs in the binder, another process than the scheduler, after WaitOnPermit and
    before Bind.

    **The pod is a reference, not the scheduled pod.** The binder holds no copy of the
    cluster: ``pod.pod`` is built from the BindRequest (the binder's ``pod_reference``)
    and carries only ``metadata.namespace``, ``name``, ``uid``, ``resource_version`` (as
    the scheduler scheduled it), the ``ksched.io/explain`` annotation when the scheduler
    explained the decision, and ``spec.scheduler_name`` (the profile). Labels, owner
    references, other annotations, containers, volumes, affinity, priority and status
    are empty: ``pod.requests`` is zero and ``pod.priority`` 0. What a plugin needs of
    the pod or of its own decisions it hands on from the scheduling cycle through
    :class:`BindingState` (VolumeBinding hands its claim decisions so); it is restored
    into ``state`` before PreBind.

    PreBind and Bind plugins do not publish: they leave effects in ``state.effects``
    (watch events, :class:`BindEffect`), which the binder publishes once the pod is
    bound."""

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Success or Skip continues with the next PreBind plugin, then Bind. Anything
        else, or a raise, ends the binding cycle: Unreserve runs and the pod goes back to
        the queue, unschedulable with the status message when rejected, else as an
        error."""
        ...


class BindPlugin(Plugin, Protocol):
    """Runs in the binder after PreBind; ``pod`` is the same reference as PreBind's
    (metadata and schedulerName only, see :class:`PreBindPlugin`)."""

    async def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Success: this plugin bound the pod, and the remaining Bind plugins do not
        run; the binder publishes a Binding only from a :class:`BindEffect` the plugin
        left in ``state.effects``. Skip passes the pod to the next Bind plugin;
        when every one skips, the cycle fails with Error. Anything else fails the cycle
        as PreBind's failures do."""
        ...


class PostBindPlugin(Plugin, Protocol):
    """Runs in the binder once the pod is bound; ``pod`` is the same reference as
    PreBind's (see :class:`PreBindPlugin`)."""

    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


EXTENSION_POINTS: dict[ExtensionPoint, type] = {
    ExtensionPoint.PreEnqueue: PreEnqueuePlugin,
    ExtensionPoint.QueueSort: QueueSortPlugin,
    ExtensionPoint.PreFilter: PreFilterPlugin,
    ExtensionPoint.Filter: FilterPlugin,
    ExtensionPoint.PostFilter: PostFilterPlugin,
    ExtensionPoint.PreScore: PreScorePlugin,
    ExtensionPoint.Score: ScorePlugin,
    ExtensionPoint.Reserve: ReservePlugin,
    ExtensionPoint.Permit: PermitPlugin,
    ExtensionPoint.PreBind: PreBindPlugin,
    ExtensionPoint.Bind: BindPlugin,
    ExtensionPoint.PostBind: PostBindPlugin,
}
"""Extension point → the Protocol a plugin class names as a base to serve it."""


def implements(plugin: object, point: ExtensionPoint) -> bool:
    """Whether a plugin (class or instance) serves ``point``: its class subclasses the
    point's Protocol and defines every method of it. A misspelt method leaves the
    Protocol's stub in place, so the plugin does not serve that point (and mypy calls
    the class abstract where its factory builds it)."""
    cls = plugin if isinstance(plugin, type) else type(plugin)
    protocol = EXTENSION_POINTS[point]
    if protocol not in cls.__mro__:
        return False
    return all(getattr(cls, name) is not stub for name, stub in _methods(protocol))


def _methods(protocol: type) -> list[tuple[str, object]]:
    """The methods ``protocol`` itself declares (not those of :class:`Plugin`)."""
    return [(k, v) for k, v in vars(protocol).items() if callable(v) and not k.startswith("_")]
