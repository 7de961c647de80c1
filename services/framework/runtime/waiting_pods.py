"""The pods waiting at Permit, shared by every scheduler and binder replica through the
store (upstream's ``waitingPodsMap``, made durable).

A :class:`SharedWaitingPods` is what a framework's Handle gives its plugins
(``GetWaitingPod``, ``IterateOverWaitingPods``, ``RejectWaitingPod``) in a service. Plugin
calls are synchronous, as upstream's are: they act on this process's view at once (so
the next pod of the same batch sees them) and are journaled; the service then
:meth:`~SharedWaitingPods.flush`\\ es the journal to the store, where each step is atomic
(``allow_waiting``, ``reject_waiting``: exactly one outcome per waiting pod, whichever
replica acts). The view is read from the store at the start of each batch
(:meth:`~SharedWaitingPods.refresh`), so a plugin sees the pods waiting on every replica.

What a flush resolves (the last plugin allowed, or one rejected) comes back to the caller,
which hands the pod on to a binder (its BindRequest, kept in the record, is published
again on ``ksched.bind``).

Rejections a scheduling cycle decided on its view of the others' reservations (a
PostFilter that found no room and gives up its pod group: :meth:`~SharedWaitingPods.on_view`)
are made only if no release came since that view (``ClusterStore.release_waiting``, which
also gives their room back in the same step); a refused one names its pod in
:attr:`Flushed.refused`, to be scheduled again on a fresh view, as one scheduler whose
cycles run one after another would have seen the room the other release freed.

The map reaches the store through :class:`WaitingStore`, the five calls it makes (a
``ClusterStore`` is one). :func:`go_duration` words a wait as upstream's timeout message
does (``rejected due to timeout after waiting 1m0s at plugin …``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from contracts.k8s import ObjectMeta, Pod
from services.common.clock import Clock
from services.common.store import WaitingRecord
from services.framework.api.interface import WaitingPod
from services.framework.api.types import PodInfo

REMOVED = "removed"
"""``RejectWaitingPod``'s message (upstream rejects with plugin "" and this message)."""


class WaitingStore(Protocol):
    """What the waiting-pods map needs of the store (``ClusterStore``'s waiting-pod calls;
    their contracts are documented there)."""

    async def put_waiting(self, records: Sequence[WaitingRecord]) -> None: ...

    async def waiting(self) -> dict[str, WaitingRecord]: ...

    async def allow_waiting(self, uid: str, plugin: str, now: float) -> WaitingRecord | None: ...

    async def reject_waiting(
        self, uid: str, plugin: str, message: str, now: float
    ) -> WaitingRecord | None: ...

    async def release_waiting(
        self, rejections: Sequence[tuple[str, str, str]], seen: int, now: float
    ) -> list[WaitingRecord] | None: ...


@dataclass(slots=True)
class _Added:
    pod: PodInfo
    node: str
    waits: dict[str, float]
    at: float


@dataclass(frozen=True, slots=True)
class _Allowed:
    uid: str
    plugin: str


@dataclass(frozen=True, slots=True)
class _Rejected:
    uid: str
    plugin: str
    message: str


@dataclass(frozen=True, slots=True)
class _OnView:
    """Rejections decided (for pod ``by``) on a view counting the releases up to ``seen``."""

    by: str
    seen: int | None
    rejected: tuple[_Rejected, ...]


_Step = _Added | _Allowed | _Rejected | _OnView


@dataclass(slots=True)
class Flushed:
    """What a :meth:`SharedWaitingPods.flush` did."""

    resolved: list[WaitingRecord] = field(default_factory=list)
    """The records it resolved (allowed or rejected), to hand on to a binder."""
    refused: list[str] = field(default_factory=list)
    """The pods whose rejections on their view (``on_view``) the store refused: a
    release came since; nothing of theirs was made."""
    released: int | None = None
    """The release version after its own releases (None: it made none)."""


@dataclass(slots=True)
class _View:
    """A waiting pod as this process sees it."""

    uid: str
    namespace: str
    name: str
    node: str
    labels: Mapping[str, str]
    pending: dict[str, float]
    resolved: bool = False


@dataclass(slots=True)
class SharedWaitingPod:
    """One waiting pod (api.WaitingPod): ``allow`` / ``reject`` act on the view and are
    journaled for the store."""

    _view: _View
    _journal: list[_Step] = field(repr=False)

    def get_pod(self) -> Pod:
        v = self._view
        return Pod(
            metadata=ObjectMeta(
                name=v.name, namespace=v.namespace, uid=v.uid, labels=dict(v.labels)
            )
        )

    @property
    def node(self) -> str:
        return self._view.node

    def get_pending_plugins(self) -> list[str]:
        return sorted(self._view.pending)

    def pending_deadlines(self) -> dict[str, float]:
        """Pending plugin → its deadline (clock seconds)."""
        return dict(self._view.pending)

    def allow(self, plugin: str) -> None:
        view = self._view
        if view.resolved:
            return
        view.pending.pop(plugin, None)
        self._journal.append(_Allowed(view.uid, plugin))
        if not view.pending:
            view.resolved = True

    def reject(self, plugin: str, message: str) -> None:
        view = self._view
        if view.resolved:
            return
        view.resolved = True
        self._journal.append(_Rejected(view.uid, plugin, message))


class SharedWaitingPods:
    """api.WaitingPods over the store; see the module docstring."""

    def __init__(self, store: WaitingStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._pods: dict[str, SharedWaitingPod] = {}
        self._journal: list[_Step] = []

    # -- api.WaitingPods ---------------------------------------------------------------

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        pod = self._pods.get(uid)
        return pod if pod is not None and not pod._view.resolved else None

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None:
        for pod in list(self._pods.values()):
            if not pod._view.resolved:
                callback(pod)

    def reject_waiting_pod(self, uid: str) -> bool:
        pod = self.get_waiting_pod(uid)
        if pod is None:
            return False
        pod.reject("", REMOVED)
        return True

    def add(self, pod: PodInfo, node: str, waits: dict[str, float]) -> None:
        now = self._clock.now()
        meta = pod.pod.metadata
        view = _View(
            uid=pod.uid,
            namespace=meta.namespace or "default",
            name=meta.name,
            node=node,
            labels=dict(meta.labels),
            pending={plugin: now + wait for plugin, wait in waits.items()},
        )
        self._pods[pod.uid] = SharedWaitingPod(view, self._journal)
        self._journal.append(_Added(pod, node, dict(waits), now))

    # -- the service's side ------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        """Whether steps wait to be flushed."""
        return bool(self._journal)

    async def refresh(self) -> None:
        """Read the pods still waiting on any replica (drops this process's view; call it
        with an empty journal)."""
        records = await self._store.waiting()
        self._pods = {
            uid: SharedWaitingPod(_view_of(record), self._journal)
            for uid, record in records.items()
            if record.state == "waiting" and record.point == "Permit"
        }

    def mark(self) -> int:
        """Where the journal ends now (for :meth:`on_view`)."""
        return len(self._journal)

    def on_view(self, mark: int, by: str, seen: int | None) -> None:
        """The rejections journaled since ``mark`` were decided, for the pod ``by``, on
        a view that counts the store's releases up to ``seen`` (None: unknown): the
        flush makes them only if none came since, else names ``by`` in
        :attr:`Flushed.refused` (see the module docstring)."""
        tail = self._journal[mark:]
        rejected = tuple(s for s in tail if isinstance(s, _Rejected))
        if rejected:
            self._journal[mark:] = [s for s in tail if not isinstance(s, _Rejected)]
            self._journal.append(_OnView(by, seen, rejected))

    async def flush(self, added: Mapping[str, tuple[int, str, bytes]] | None = None) -> Flushed:
        """Write the journal to the store, in order. ``added``: for each pod that started
        waiting here, (attempt, profile, encoded BindRequest) for its record (a pod
        missing from it is not recorded: its attempt ended otherwise)."""
        journal, self._journal[:] = list(self._journal), []
        added = added or {}
        flushed = Flushed()
        resolved = flushed.resolved
        now = self._clock.now()
        batch: list[WaitingRecord] = []
        for step in journal:
            if isinstance(step, _Added):
                extra = added.get(step.pod.uid)
                if extra is not None:
                    batch.append(_record(step, *extra))
                continue
            if batch:
                await self._store.put_waiting(batch)
                batch = []
            if isinstance(step, _OnView):
                await self._release(step, now, flushed)
                continue
            if isinstance(step, _Allowed):
                record = await self._store.allow_waiting(step.uid, step.plugin, now)
            else:
                record = await self._store.reject_waiting(step.uid, step.plugin, step.message, now)
            if record is not None and record.state != "waiting":
                resolved.append(record)
        if batch:
            await self._store.put_waiting(batch)
        return flushed

    async def _release(self, step: _OnView, now: float, flushed: Flushed) -> None:
        rejections = [(r.uid, r.plugin, r.message) for r in step.rejected]
        seen = step.seen
        records = None if seen is None else await self._store.release_waiting(rejections, seen, now)
        if records is None or seen is None:  # a view of unknown releases: refused too
            flushed.refused.append(step.by)
        elif records:
            flushed.resolved += records
            flushed.released = seen + 1

    def discard(self, uids: Sequence[str]) -> None:
        """Forget the journal's steps about ``uids`` (their attempt ended before the
        flush, so they never waited)."""
        gone = set(uids)
        self._journal[:] = [s for s in self._journal if _uid(s) not in gone]
        for uid in gone:
            self._pods.pop(uid, None)


def _uid(step: _Step) -> str:
    if isinstance(step, _OnView):
        return step.by
    return step.pod.uid if isinstance(step, _Added) else step.uid


def _view_of(record: WaitingRecord) -> _View:
    return _View(
        uid=record.uid,
        namespace=record.namespace,
        name=record.name,
        node=record.node,
        labels=record.labels,
        pending=dict(record.pending),
    )


def _record(step: _Added, attempt: int, profile: str, request: bytes) -> WaitingRecord:
    meta = step.pod.pod.metadata
    return WaitingRecord(
        uid=step.pod.uid,
        namespace=meta.namespace or "default",
        name=meta.name,
        node=step.node,
        attempt=attempt,
        profile=profile,
        pending={plugin: step.at + wait for plugin, wait in step.waits.items()},
        waits=dict(step.waits),
        request=request,
        labels=dict(meta.labels),
        since=step.at,
    )


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration.String()``: ``1m0s``, ``1.5s``, ``500ms``,
    ``2h0m0s``, ``0s`` (upstream's timeout message prints the wait this way)."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size or unit == "ns":
                return sign + _fraction(nanos, size) + unit
    whole, frac = divmod(nanos, 1_000_000_000)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = _fraction(secs * 1_000_000_000 + frac, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _fraction(value: int, unit: int) -> str:
    """``value / unit`` in decimal without trailing zeros (Go's ``fmtFrac``)."""
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")
