"""Internal hops between services. Each carries a batch ("whatever is ready now").

queue → scheduler: :class:`ScheduleBatch` on ``ksched.schedule``
scheduler → binder: :class:`BindBatch` on ``ksched.bind``
scheduler, binder → queue: :class:`ResultBatch` on ``ksched.results``
binder → informer: :class:`BoundBatch` on ``ksched.bound``

A batch spans many pods, so the trace context of each pod travels inside its item
(``trace``); the AMQP headers carry the context of the span that published the batch.

Requests are references, not objects: a pod is named by its ``uid`` (with its namespace
and name for messages and logs), because the receiver already holds it. The scheduler
follows ``ksched.cluster`` and resolves the pod in its own projection once it has
applied the request's ``seq``; the binder holds no projection, so a BindRequest carries
the few fields of the pod that its Binding and its ``Scheduled`` Event name. What the
receiver cannot know travels: the attempt, the profile, the log position, the trace
context and the plugins' decisions (VolumeBinding's claim bindings, the explanation).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.k8s import Binding, Wire


class ScheduleRequest(Wire, kw_only=True, frozen=True):
    """Schedule the pending pod ``uid`` (a reference: the scheduler resolves it in its
    own projection, as of ``seq`` or later; a pod that is no longer pending there ends
    the attempt ``stale``)."""

    uid: str
    namespace: str | None = None
    """The pod's ``metadata.namespace`` as the log has it (for messages and logs)."""
    name: str
    attempt: int
    """1 for the first attempt; the queue's lease in the store carries the same number."""
    profile: str
    seq: int
    """The log position the queue had applied when it dispatched: the scheduler's
    snapshot must have applied at least this much before it attempts the pod."""
    at: float = 0.0
    """Wall-clock seconds when the pod was first accepted (ingest), for latency."""
    trace: dict[str, str] = {}


class ScheduleBatch(Wire, kw_only=True, frozen=True, tag_field="kind", tag="ScheduleBatch"):
    requests: list[ScheduleRequest]
    forgotten: int = 0
    """How many assumptions the queue has heard were forgotten in a binding cycle (a
    count that only grows while the queue runs): a scheduler that sees it change
    drops, before it schedules, the assumptions the store no longer holds, so the
    pods that room was given back for see it."""


class BindRequest(Wire, kw_only=True, frozen=True):
    """Bind the pod ``uid``, assumed on ``node`` by attempt ``attempt``. The binder holds
    no projection: the pod's namespace, name and resourceVersion (as the scheduler
    scheduled it) are what its Binding and ``Scheduled`` Event name; ``profile`` is the
    pod's schedulerName (the Event's reporting component)."""

    uid: str
    namespace: str | None = None
    name: str
    resource_version: str | None = None
    node: str
    attempt: int
    profile: str
    at: float = 0.0
    started: float = 0.0
    """Wall-clock seconds when the scheduling attempt began (its batch was taken up):
    the binder measures ``scheduler_scheduling_attempt_duration_seconds`` from it."""
    trace: dict[str, str] = {}
    explanation: str = ""
    """The scheduler's explanation of the decision (JSON), when it explained it; the
    binder copies it onto the Binding (annotation ``ksched.io/explain``)."""
    plugin_state: dict[str, msgspec.Raw] = {}
    """Plugin name → what that plugin decided in the scheduling cycle and needs in the
    binding cycle, in the plugin's own encoding (the plugin declares its type; the
    contracts name no plugin)."""
    permit: bool = False
    """Permit asked the pod to wait: the waiting pod (pending plugins, deadlines) is in
    the store, and the binder binds only once every plugin allowed it."""
    activate: list[str] = []
    """Pods (uids) the scheduling cycle asked to activate (upstream's PodsToActivate),
    for a pod that goes to binding without a ``waiting`` result to carry them: the
    binder hands them on with its result."""


class BindBatch(Wire, kw_only=True, frozen=True, tag_field="kind", tag="BindBatch"):
    requests: list[BindRequest]


Outcome = Literal["bound", "unschedulable", "error", "stale", "waiting"]


class AttemptResult(Wire, kw_only=True, frozen=True):
    """How one attempt ended. The queue frees the pod's in-flight slot on any result.

    - ``bound``: the Binding was published; the pod leaves the queue.
    - ``unschedulable``: filters rejected every node; ``plugins`` names the rejecting
      plugins (the queue parks the pod until an event one of them cares about).
    - ``error``: something failed that is not about fit (store down, bind failed);
      the pod backs off and is retried.
    - ``waiting``: the pod waits at Permit (not final): the queue frees its in-flight
      credit but keeps the attempt; a later result for the same attempt ends it.
    - ``stale``: the attempt was superseded (lease moved on, pod bound or deleted);
      the queue drops the result.
    """

    uid: str
    namespace: str
    name: str
    attempt: int
    outcome: Outcome
    node: str | None = None
    plugins: list[str] = []
    message: str = ""
    unresolvable: bool = False
    nominated_node: str | None = None
    """Preemption's nomination for the pod (``unschedulable`` only): a node, ``""`` to
    clear it, None to leave it as it is."""
    cleared_nominations: list[str] = []
    """Pods (uids) of lower priority nominated to that node that lose their nomination."""
    victims: list[str] = []
    """The pods (uids) the pod preempted: the queue holds it back until they are gone."""
    activate: list[str] = []
    """Pods (uids) a plugin asked to activate (upstream's PodsToActivate, e.g.
    Coscheduling's siblings of the first member to wait): the queue moves those in
    unschedulablePods or backoffQ to activeQ (``Activate``), and one in flight goes
    there when its attempt fails."""
    forgotten: bool = False
    """The pod held room (it was assumed, its reservation claimed) and the binding
    cycle gave it back (``unschedulable`` or ``error`` from a binder): the queue moves
    the pods that room may help, as for an assigned pod deleted, the pod itself left
    out when a plugin rejected it (``handleBindingCycleError``)."""


class ResultBatch(Wire, kw_only=True, frozen=True, tag_field="kind", tag="ResultBatch"):
    results: list[AttemptResult]


def attempt_result(
    request: ScheduleRequest | BindRequest, outcome: Outcome, message: str = "", **extra: Any
) -> AttemptResult:
    """How the attempt ``request`` asked for ended (``extra``: the other fields)."""
    return AttemptResult(
        uid=request.uid,
        namespace=request.namespace or "default",
        name=request.name,
        attempt=request.attempt,
        outcome=outcome,
        message=message,
        **extra,
    )


class BoundPod(Wire, kw_only=True, frozen=True):
    """One Binding the binder published, to be recorded in the event log."""

    binding: Binding
    trace: dict[str, str] = {}
    """The pod's trace context (that of its binding cycle)."""


class BoundBatch(Wire, kw_only=True, frozen=True, tag_field="kind", tag="BoundBatch"):
    """The Bindings of one binder batch, in the order they were published to users.
    Users get each Binding on ``ksched.decisions``; the informer records them from this
    one message instead of a delivery per pod."""

    bindings: list[BoundPod]
