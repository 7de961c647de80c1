"""The store edge: the shared cluster cache (Redis, or in memory for the embedded mode).

State of a pod in the store (upstream's cache draws the same machine)::

                 assume (scheduler)           begin_bind (binder)
    Pending ───────────────────────▶ Assumed ─────────────────▶ Binding
       ▲   ◀──── forget / expiry ────┘   │                        │
       │                                 │ apply: pod has nodeName │ apply: pod has nodeName
       │                                 ▼                        ▼
       └──── apply: pod deleted ──── Bound (charged to the node by the projection)

- The node's *usage* is the sum of the requests of its bound pods (from the event log)
  plus those of pods assumed or binding on it. ``assume`` adds a pod to a node's usage
  only if every resource the profile's filters check (``Reservation.checked``) still
  fits under the node's allocatable, in one atomic step: two schedulers racing for the
  last slot cannot both win. A resource no enabled filter checks never vetoes (as
  upstream's AssumePod never does): what the profile does not filter on, it may
  overcommit.
- An assumption expires at its deadline (a scheduler that died after assume must not
  hold the capacity forever); ``begin_bind`` freezes it (no expiry) until the binding is
  recorded in the log. When ``apply`` sees the pod bound to the node it was assumed on,
  the assumption becomes the bound charge: the pod is never counted twice.
- Placement versions (scheduler.domains): ``assume`` also refuses a reservation whose
  decision read a domain (a node, a topology domain, a claim) in which another pod
  was placed since, and raises the version of every domain it touches. They go with
  the rest of a lost store (its clients reload them with the projection).
- DRA devices (``driver/pool/device``): a device is held by at most one holder, a
  pod's reservation (``Reservation.devices``) or an allocated ResourceClaim (a
  ``resourceclaim`` entry's ``ProjectedEntry.devices``). ``assume`` refuses a
  reservation wanting a device someone else holds (``conflict``, the held ones in
  ``AssumeResult.devices``), else the pod holds its devices::

      assume ──▶ held by the pod ──── claim's allocation applied ──▶ held by the claim
                   │  forget, expiry before binding, pod deleted        │ claim deallocated,
                   ▼                                                    ▼ deleted, or
                 free ◀──────────────────────────────────────────── free  allocated otherwise

  A pod's hold outlives its binding (the Binding may reach the log before the client
  publishes the claim's allocation): it ends when the claim takes the devices over
  or the pod is deleted. The claims' holds are projection (a rebuild restores them
  from the log); the pods' go with the assumptions.
- Leases: the queue records the attempt number it handed out for each pod. ``assume``
  refuses (``stale``) an attempt that is not the pod's current lease, so a pod attempted
  again after a queue restart is never reserved twice.
- Leader leases and fencing (one per single-writer role): see
  :mod:`services.common.store.leases`.

Every method is idempotent for the same arguments; callers may retry after a failure.

The projection's marker (the *epoch*): a store that comes back empty (FLUSHDB, a Redis
restart without persistence, a failover to an empty replica) must not pass for an empty
cluster. The first apply (or a rebuild) writes a marker with the projection, atomically;
every call that applies or reads the projection checks it in the same atomic step::

                apply from seq 1 (fresh cluster)
       ┌──────────────────────────────────────────────────┐
       │         restore(first chunk)      restore(final) ▼
    Blank ─────────────────────▶ Building ─────────────▶ Live(token)
       ▲                            │ ▲                    │
       └──── data lost ─────────────┘ └─── data lost ──────┘
             (the marker goes with everything else: Blank again)

- A client *expects* a marker once it has seen one: :meth:`ClusterStore.attach` (or an
  apply that created it, or the final ``restore``) records the live token. From then on
  every guarded call of that client raises :class:`StoreLost` unless the store is Live
  with that token: after a loss (Blank), during a rebuild (Building) and after a
  rebuild (another token: the assumptions, leases and nominations the client knew are
  gone). The client waits until the store is Live again, calls ``attach`` and reloads.
- A client that expects nothing (it never attached: the binder, a test) is served by a
  Blank store as by an empty cluster; a Building store raises StoreLost for it too.
- ``apply`` never applies on top of nothing: the first entry after the applied seq must
  be ``applied_seq + 1`` (StoreLost otherwise). On a Blank store that means seq 1, and
  that apply makes the store Live. Only the informer, which knows the log is not empty,
  can tell a lost store from a fresh one: it rebuilds a lost one with ``restore``.
- Unguarded: ``epoch``, ``applied_seq``, ``identity``, the queue view (informational)
  and the leader leases.

A failover can also lose *some* acknowledged writes and keep the marker (Redis
replicates asynchronously: the promoted replica may lag). The informer, which knows the
seq it applied last and the store's :meth:`ClusterStore.identity` when it made the store
live, catches such a store up from the log when only its applied seq is behind, and
treats a changed identity like a loss: :meth:`ClusterStore.invalidate` makes the store
Building, the informer restores the log's tail and makes it Live under a new token, so
every client reloads what it held (the reservations, leases and nominations the new
master may have lost)::

    Live(token) ──── invalidate(token) ────▶ Building ──── restore(final) ────▶ Live(new)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from services.common.store.leases import Fence, LeaderLease

PODS = "pods"
"""The pod-count resource: every pod requests one; a node allows ``status.allocatable.pods``."""


@dataclass(frozen=True, slots=True)
class PodCharge:
    """What a pod costs its node in the projection."""

    uid: str
    node: str | None
    """The node the pod is bound to; None when pending, terminal (Succeeded/Failed) or deleted."""
    requests: Mapping[str, int]
    """Resource → amount (cpu in millicores), including ``pods: 1``."""


@dataclass(frozen=True, slots=True)
class ProjectedEntry:
    """One log entry as the projection stores it."""

    seq: int
    kind: str
    key: str
    """``namespace/name`` for namespaced kinds, ``name`` otherwise."""
    body: bytes | None
    """The object's JSON; None when the event deleted it."""
    pod: PodCharge | None = None
    """For pods: the charge after this event."""
    allocatable: Mapping[str, int] | None = None
    """For nodes: allocatable after this event (including ``pods``); None when deleted."""
    devices: tuple[str, ...] | None = None
    """For resourceclaims: the devices its allocation holds after this event
    (``services.common.k8s.devices.allocated_devices``); empty when it is not allocated
    or deleted. None for other kinds (a resourceclaim entry without it holds nothing)."""


@dataclass(frozen=True, slots=True)
class Reservation:
    uid: str
    node: str
    attempt: int
    requests: Mapping[str, int]
    """What the pod is charged: resource → amount, every one added to the node's usage."""
    ttl: float
    """Seconds until the assumption expires unless a binder begins binding."""
    checked: frozenset[str] | None = None
    """The resources the profile's Filter plugins compare with what the node has left
    (``Framework.checked_resources``; ``pods`` stands for the pod count): the store
    refuses the reservation only when one of these no longer fits. Empty: nothing is
    checked (a profile without NodeResourcesFit's filter). None: every requested
    resource and ``pods``."""
    reads: Mapping[str, int] = field(default_factory=dict)
    """Domain → the version the decision saw (scheduler.domains): the store refuses the
    reservation (``conflict``) when a domain's version is another by now, i.e. a pod was
    placed there since that the decision did not know of. Missing domains count 0."""
    touches: tuple[str, ...] = ()
    """Domains whose version the placement raises by one (also when the same
    reservation is assumed again)."""
    watched: frozenset[str] | None = None
    """The topology keys of required anti-affinity the decision knew of (the keys its
    reads cover for the pods already placed): the store refuses the reservation when
    a pod with required anti-affinity on another key was placed. None: unchecked."""
    keys: tuple[str, ...] = ()
    """The topology keys of the pod's own required anti-affinity, recorded on assume."""
    devices: tuple[str, ...] = ()
    """DRA devices (``driver/pool/device``) the pod's new claim allocations take: the
    store refuses the reservation (``conflict``) when one is held by another pod's
    reservation or by an allocated claim, else holds them for the pod until the
    claim's allocation is applied from the log, or the reservation is forgotten or
    expires before binding."""


AssumeStatus = Literal["assumed", "conflict", "stale"]

VOIDED = "an earlier reservation of the same call was refused"
"""The reason of a reservation refused for another's refusal (``ClusterStore.assume``)."""


@dataclass(frozen=True, slots=True)
class AssumeResult:
    status: AssumeStatus
    """assumed: reserved. conflict: it no longer fits (or the node is gone); ``usage``
    holds the node's current usage so the caller can retry with fresh data.
    stale: the attempt is not the pod's lease, or the pod is bound, binding or gone."""
    usage: Mapping[str, int] = field(default_factory=dict)
    reason: str = ""
    versions: Mapping[str, int] = field(default_factory=dict)
    """For a conflict on ``Reservation.reads`` (or ``watched``): every read domain's
    current version (the caller may expect them once its snapshot holds what the
    store holds)."""
    keys: tuple[str, ...] = ()
    """For a conflict on ``Reservation.watched``: the keys placed it did not know of."""
    devices: tuple[str, ...] = ()
    """For a conflict on ``Reservation.devices``: those already held by others."""


@dataclass(frozen=True, slots=True)
class BindClaim:
    uid: str
    node: str
    attempt: int


@dataclass(frozen=True, slots=True)
class Assumed:
    node: str
    attempt: int
    deadline: float
    """Expiry in store-clock seconds; ``inf`` once binding has begun."""
    requests: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Nomination:
    node: str
    priority: int


@dataclass(frozen=True, slots=True)
class NominationClaim:
    """A preemptor's nomination as one replica decided it: ``seen`` are the pods it
    knew nominated to ``node`` when it chose the node (``claim_nominations`` refuses
    the claim when another pod of equal or higher priority was nominated there since);
    ``clears`` the lower-priority nominations it takes the node from."""

    uid: str
    node: str
    priority: int
    seen: frozenset[str] = frozenset()
    clears: tuple[str, ...] = ()


WaitState = Literal["waiting", "allowed", "rejected"]
WaitPoint = Literal["Permit", "PreBind"]


@dataclass(frozen=True, slots=True)
class WaitingRecord:
    """A pod waiting at Permit (upstream's ``waitingPod``), shared by every scheduler
    and binder replica. ``pending`` holds one deadline per plugin that has not allowed
    the pod yet; the record leaves ``waiting`` exactly once:

    - ``allowed``: the last pending plugin allowed it (``pending`` is empty);
    - ``rejected``: a plugin rejected it (``plugin``, ``message``), or the earliest
      pending deadline passed (``plugin`` is the one that timed out; ``message`` is
      empty: the caller words the timeout from ``waits``).

    A resolved record stays until a binder takes it (:meth:`ClusterStore.take_waiting`).
    """

    uid: str
    namespace: str
    name: str
    node: str
    attempt: int
    profile: str
    pending: Mapping[str, float]
    """Plugin → deadline (clock seconds) of the plugins that have not allowed the pod."""
    waits: Mapping[str, float]
    """Plugin → how long it asked the pod to wait (seconds), for the timeout message."""
    request: bytes
    """The encoded BindRequest (contracts.messages) the binder resumes with."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """The pod's labels (plugins pick their pods by them, e.g. the pod group)."""
    state: WaitState = "waiting"
    plugin: str = ""
    message: str = ""
    resolved_at: float = 0.0
    """Clock seconds when the record left ``waiting`` (0 while waiting)."""
    since: float = 0.0
    """Clock seconds when the pod started waiting (``scheduler_permit_wait_duration_seconds``
    and the WaitOnPermit span run from here)."""
    point: WaitPoint = "Permit"
    """Where the pod waits: at ``Permit``, or at ``PreBind`` once its PreBind published
    (``services.framework.api.bindwait``: ``pending`` names the PreBind plugin, which
    only the binder's poll allows or rejects; Permit plugins and PermitDecisions never
    see such a pod)."""


EpochState = Literal["blank", "building", "live"]


@dataclass(frozen=True, slots=True)
class Epoch:
    """The projection's marker as the store holds it (see the module docstring)."""

    state: EpochState
    token: str = ""
    """The live marker's token; empty unless ``state`` is live."""
    seq: int = 0
    """The applied seq (a Building store holds a prefix of the log)."""


class StoreLost(Exception):
    """The store does not hold the projection the caller expected: it was emptied, is
    being rebuilt, or was rebuilt since the caller attached. Nothing was changed. The
    caller must not decide on what it read: it waits until :meth:`ClusterStore.epoch`
    is live, calls :meth:`ClusterStore.attach` and reloads what it holds from the store
    (the informer rebuilds the store from the event log)."""


@dataclass(frozen=True, slots=True)
class Preemption:
    """A preemption in flight (the queue's ``Preempting``): the victims of the
    preemptor that are not gone yet, and when it started."""

    victims: tuple[str, ...]
    since: float
    """Clock seconds when the scheduler reported it (the preemptor may preempt again
    once its patience has passed)."""


def live(epoch: Epoch, namespace: str) -> Epoch:
    """``epoch`` if the store is live; else :class:`StoreLost` saying what it is (what
    :meth:`ClusterStore.attach` checks)."""
    if epoch.state != "live":
        raise StoreLost(f"store {namespace!r} is {epoch.state}, not live")
    return epoch


class ClusterStore(Protocol):
    async def epoch(self) -> Epoch:
        """The marker's state and the applied seq; never raises StoreLost."""

    async def attach(self) -> Epoch:
        """Expect the current live marker from now on (see the module docstring).
        Raises StoreLost unless the store is live."""

    async def identity(self) -> str:
        """Which copy of the data this is; unguarded. It changes whenever the data may
        have changed without passing through the clients: on Redis, the server's
        ``run_id`` (a restart) and ``master_replid`` (a replica promoted by a failover).
        Equal identities do not prove nothing was lost; a new one says to check."""

    async def invalidate(self, token: str) -> bool:
        """Make the store Building if it is Live with ``token`` (the informer, after
        :meth:`identity` changed): every client that expects ``token`` gets StoreLost
        until a final :meth:`restore` makes it Live again under a new token; the
        projection stays and the restore continues from its applied seq. False (and
        nothing changed) when the store is not Live with ``token``."""

    async def restore(
        self, entries: Sequence[ProjectedEntry], *, final: bool, base: int | None = None
    ) -> None:
        """Rebuild a Blank (or Building) store from the log: apply ``entries`` (which
        continue the applied seq, from seq 1 on a Blank store) and leave it Building;
        with ``final`` make it Live with a new token this client then expects. With
        ``base`` (a snapshot's first entry less one: services.common.eventlog.snapshot)
        a Blank store is first set to seq ``base``, so the entries continue it instead.
        Raises StoreLost if the store is Live, or lost again during the rebuild (start
        over), or if ``base`` is given and the store is not Blank at seq 0."""

    async def applied_seq(self) -> int:
        """The seq of the last log entry applied (0 for an empty store)."""

    async def apply(self, entries: Sequence[ProjectedEntry]) -> None:
        """Apply log entries atomically, in order; entries with seq ≤ applied_seq are
        skipped, the first one after must be applied_seq + 1 (StoreLost otherwise).
        Updates objects, node allocatable, pod charges and node usage, converts a
        matching assumption into the bound charge, releases assumptions, leases and
        nominations of pods that are bound or deleted (and the devices of deleted
        pods); a resourceclaim entry makes the claim hold ``devices`` instead of what
        it held before (taking them from the pods holding them)."""

    async def objects(self, kind: str) -> dict[str, bytes]:
        """Every stored object of ``kind``: key → JSON."""

    async def objects_at(self, kinds: Sequence[str]) -> tuple[int, dict[str, dict[str, bytes]]]:
        """Every stored object of each of ``kinds`` (kind → key → JSON) and the applied
        seq they are as of, read in one atomic step: no batch is applied in between (on
        Redis one script, which holds the server for the length of the read)."""

    async def node_usage(self, nodes: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
        """Usage (bound + assumed + binding) per node; all nodes when ``nodes`` is None."""

    async def allocatable(self, nodes: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
        """Allocatable per node as applied from the log."""

    async def assume(self, reservations: Sequence[Reservation], now: float) -> list[AssumeResult]:
        """Reserve each pod on its node, one atomic check-and-reserve per reservation,
        in order: ``conflict`` when the node is gone, a resource of
        ``Reservation.checked`` no longer fits (``usage``), or a domain of
        ``Reservation.reads`` has another version (``versions``; reason
        ``placements changed in <domain>``), or a pod with required anti-affinity on a
        topology key not in ``Reservation.watched`` was placed (``keys``, and the
        ``versions`` of the reads), or a device of ``Reservation.devices`` is held by
        another pod or a claim (``devices``, those held; reason ``device <id> is
        already allocated``), else the whole request is charged, every domain of
        ``Reservation.touches`` raised by one, ``Reservation.keys`` recorded and the
        devices held for the pod.
        Once one reservation of the call is refused (``conflict`` or ``stale``), every
        later one that reads a domain it touches is refused too (``conflict``, reason
        :data:`VOIDED`, the current ``versions`` of its reads): its decision was taken
        with the refused pod in its snapshot, and its expected versions count that
        pod's placement.
        Re-assuming the same (uid, node, attempt) returns ``assumed`` again without
        charging twice; a pod assumed elsewhere by an older attempt is moved.
        Expired assumptions on the node are released before the check."""

    async def begin_bind(self, claims: Sequence[BindClaim], now: float) -> list[bool]:
        """For each claim: True if the pod is assumed (or already binding) on that node
        by that attempt, in which case it is now binding and never expires; False if
        the binder must not bind (moved, bound elsewhere, deleted, or expired: past its
        deadline at ``now``, when it is released). Every scheduler replica's snapshot
        forgets an assumption at its deadline while the placement versions still count
        it (scheduler.domains): binding it after that could break what they guard."""

    async def forget(self, claims: Sequence[BindClaim]) -> None:
        """Release the assumption of each (uid, node, attempt) if it is still that one,
        and the devices it holds."""

    async def assumed(self) -> dict[str, Assumed]:
        """Every current assumption, by pod uid."""

    async def domain_versions(self) -> dict[str, int]:
        """Every domain's placement version (``Reservation.touches``); missing: 0."""

    async def devices(self) -> dict[str, str]:
        """Every held DRA device → its holder: ``pod:<uid>`` (a reservation) or
        ``claim:<namespace>/<name>`` (an allocated claim)."""

    async def set_leases(self, leases: Mapping[str, int]) -> None:
        """Record the attempt number now in flight for each pod uid."""

    async def leases(self) -> dict[str, int]:
        """Every pod uid with an attempt in flight → that attempt number."""

    async def drop_leases(self, uids: Sequence[str]) -> None:
        """Forget the leases of these pods (their attempt ended)."""

    async def set_nominations(self, nominations: Mapping[str, Nomination]) -> None:
        """Nominate each pod uid to a node (preemption)."""

    async def clear_nominations(self, uids: Sequence[str]) -> None: ...

    async def claim_nominations(self, claims: Sequence[NominationClaim]) -> list[str]:
        """Record each claim, in order, unless the node has meanwhile been nominated
        to a pod of equal or higher priority that the claim did not see (another
        replica's preemption spent that room): those claims are not recorded and their
        uids are returned. A recorded claim drops the nominations it ``clears``; a
        claim after it in the same call sees what it recorded. One atomic step."""

    async def nominations(self) -> dict[str, Nomination]: ...

    # -- the descheduler ----------------------------------------------------------------

    async def evictions(self) -> dict[str, str]:
        """Pods whose eviction was published and which are not gone yet: uid →
        ``namespace/name``. A pod's deletion (its DELETED watch event applied) drops it."""
        ...

    async def record_evictions(self, evictions: Mapping[str, str]) -> None:
        """Record evictions (uid → ``namespace/name``) before they are published."""
        ...

    async def drop_evictions(self, uids: Sequence[str]) -> None: ...

    # -- leader leases and fencing (see the module docstring) ---------------------------

    def fence(self, fence: Fence | None) -> None:
        """Carry ``fence`` on every later call of this client that writes (and every
        guarded read): the call raises :class:`FencedError`, changing nothing, when the
        role's lease has another token (none recorded: the store lost it; the call goes
        through). None: unfenced (an instance that elects no leader)."""

    async def acquire_lease(
        self,
        name: str,
        holder: str,
        duration: float,
        now: float,
        *,
        token: int = 0,
        host: str = "",
        pid: int = 0,
    ) -> tuple[bool, LeaderLease]:
        """One try to acquire or renew the lease ``name`` for ``holder`` at ``now``, as
        client-go's ``tryAcquireOrRenew``; True and the lease when ``holder`` has it
        now, else False and the lease as another holds it. ``token``: the caller's
        term (0: it does not lead). No lease recorded: the first term's token is
        :func:`first_token` of ``now``.

        - With ``token`` (a renewal): granted while the lease is still that term of
          ``holder`` (``renewed = now``), or when the store lost the lease (it is
          written back with ``token``); refused once another term began.
        - Without (a new term, ``token`` one above the last): granted when there is no
          lease, it was released, it expired (``renewed + duration <= now``), or
          ``holder`` itself holds it (a restarted process under the same identity:
          its old term ends here). ``transitions`` grows when the holder changes.

        ``host`` and ``pid`` say where the holder runs (recorded with each new term)."""
        ...

    async def release_lease(self, name: str, holder: str, token: int, now: float) -> bool:
        """Give the lease up if it is still ``holder``'s term ``token`` (the holder
        becomes empty, the token stays: the next acquire takes a new term at once);
        True if it was released."""
        ...

    async def leader_leases(self) -> dict[str, LeaderLease]:
        """Every role's leader lease, by name (``ksched leases``). Unguarded."""
        ...

    # -- preemptions in flight (the queue) ---------------------------------------------

    async def preemptions(self) -> dict[str, Preemption]:
        """Every preemption in flight, by preemptor uid."""
        ...

    async def set_preemptions(self, preemptions: Mapping[str, Preemption]) -> None:
        """Record (or replace) preemptions in flight."""
        ...

    async def drop_preemptions(self, uids: Sequence[str]) -> None:
        """Forget these preemptors' preemptions (over: victims gone, patience passed,
        the preemptor bound or deleted)."""
        ...

    # -- waiting pods (Permit) ---------------------------------------------------------
    # Not guarded by the epoch: a waiting pod belongs to the binding cycle, which runs
    # on what the scheduler decided, not on the projection (but for the two release
    # calls, which give reservations back).

    async def put_waiting(self, records: Sequence[WaitingRecord]) -> None:
        """Add waiting pods (state ``waiting``); a record for the same uid and attempt
        is replaced, one of an older attempt is dropped. Their reservations must be
        claimed (``begin_bind``) first: a pod waiting at Permit never expires."""

    async def waiting(self) -> dict[str, WaitingRecord]:
        """Every waiting pod (resolved ones included, until taken), by uid."""

    async def allow_waiting(self, uid: str, plugin: str, now: float) -> WaitingRecord | None:
        """``Allow(plugin)``: drop ``plugin`` from the pending plugins of the waiting pod
        ``uid``; when none is left the record becomes ``allowed`` (``resolved_at = now``).
        Returns the record after the change, or None when ``uid`` is not waiting (absent,
        or already resolved). Allowing a plugin that is not pending changes nothing
        (the record is returned as it is)."""

    async def reject_waiting(
        self, uid: str, plugin: str, message: str, now: float
    ) -> WaitingRecord | None:
        """``Reject(plugin, message)``: the waiting pod ``uid`` becomes ``rejected``.
        Returns the record after the change, or None when it is not waiting."""

    async def release_version(self) -> int:
        """How many :meth:`release_waiting` calls have given room back (0 at first);
        guarded. Read it before the reservations a decision is taken on."""

    async def release_waiting(
        self, rejections: Sequence[tuple[str, str, str]], seen: int, now: float
    ) -> list[WaitingRecord] | None:
        """Reject each pod ``(uid, plugin, message)`` still waiting at Permit and
        release its reservation (as :meth:`forget`), in one atomic step, if the release
        version is still ``seen``; it then goes up by one when a pod was rejected.
        Returns the records rejected; None, changing nothing, when the version moved:
        the caller decided on a view without another release, and must read the
        store again (the version, then :meth:`assumed`) and decide again. Guarded."""

    async def expire_waiting(self, now: float) -> list[WaitingRecord]:
        """Reject every waiting pod whose earliest pending deadline is ≤ ``now``, at
        that plugin (ties: the smaller plugin name), with an empty message; returns
        them, each to exactly one caller (a concurrent allow or reject wins or loses
        atomically)."""

    async def next_waiting_deadline(self) -> float | None:
        """The earliest pending deadline of a pod still waiting (None: none waits)."""

    async def take_waiting(self, uid: str, attempt: int) -> WaitingRecord | None:
        """Remove and return the record of ``uid`` for ``attempt`` if it is resolved
        (allowed or rejected): exactly one caller gets it. A record still waiting is
        returned unchanged and stays; None when there is none for that attempt."""

    async def return_waiting(self, records: Sequence[WaitingRecord]) -> None:
        """Put back resolved records a binder took but could not hand on (its publish
        failed): each is resolved again as it was, for the redelivered request (or the
        resume timer) to take, unless ``uid`` has a record of that or a later attempt
        by now."""

    async def resolved_before(self, when: float) -> list[WaitingRecord]:
        """Resolved records not taken, resolved at or before ``when`` (the binder
        resumes those whose resolver died before handing them on)."""

    async def put_queue_view(self, view: bytes) -> None:
        """Replace the queue service's published view (a JSON contracts.queueview.QueueView).
        Unguarded by the epoch; fenced."""

    async def queue_view(self) -> bytes | None:
        """The last view the queue published, or None if it never did."""

    async def close(self) -> None: ...
