"""Every exchange, queue and routing key ksched uses. Nothing else spells them.

::

    user ──pod.added──▶ ksched.events ──▶ [informer.events] ─▶ informer ─▶ event log, Redis
                                                                  │
                          ksched.cluster (fanout, ClusterBatch) ◀─┘
                            ├──▶ [queue.cluster] ─▶ queue ─▶ ksched.schedule ─▶ [scheduler.requests]
                            └──▶ [scheduler.cluster.<replica>] ─▶ scheduler snapshot   │
                                                                                       ▼
    [queue.results] ◀─ ksched.results ◀── scheduler / binder ◀─ [binder.requests] ◀─ ksched.bind
    user ◀── ksched.decisions (binding.<ns>, event.<ns>, …) ◀── binder / scheduler / queue
    [informer.bindings] ◀── ksched.bound ◀── binder: each batch's Bindings (BoundBatch), which
                                            the informer records in the log
    user ◀── ksched.errors (error.<kind>)       ksched.dead ─▶ [dead.letters] (poison + reason)

Durable exchanges and queues survive a broker restart; the per-replica snapshot feed of
a scheduler is exclusive and disappears with it (a restarted scheduler rebuilds its
snapshot from Redis first). Messages to durable exchanges are persistent and every
publish waits for the broker's confirm, so what was confirmed survives a restart.

Queue types (``KSCHED_QUEUE_TYPE``, see :func:`queue_arguments`): on one broker every
queue is classic, as before (nothing to replicate to, and a queue's type cannot change
in place, so existing deployments keep declaring what they have). On a cluster (several
brokers in ``KSCHED_AMQP_URL``, or ``KSCHED_QUEUE_TYPE=quorum``) every durable queue is
a quorum queue, replicated by Raft across the nodes, so losing a node loses no message.
Exclusive and auto-delete queues (a scheduler's private snapshot feed) stay classic:
quorum queues can be neither, and the feed dies with its scheduler anyway. Quorum
queues take every argument ksched uses (``x-dead-letter-exchange``; ``x-message-ttl``
and ``x-delivery-limit`` too); a queue given one they refuse (:data:`CLASSIC_ONLY`,
e.g. ``x-max-priority``) stays classic rather than failing to declare.
``x-delivery-limit`` is not set: the consumer's own bounded retries dead-letter a poison
message after two attempts *with its reason*, and a limit would also count the
requeues of batches handed back while Redis or the broker was unavailable, dead-
lettering good messages after a long outage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

ExchangeType = Literal["topic", "direct", "fanout"]


@dataclass(frozen=True, slots=True)
class ExchangeSpec:
    name: str
    type: ExchangeType
    durable: bool = True
    description: str = ""


@dataclass(frozen=True, slots=True)
class QueueBinding:
    exchange: str
    routing_key: str


@dataclass(frozen=True, slots=True)
class QueueSpec:
    name: str
    bindings: tuple[QueueBinding, ...]
    durable: bool = True
    exclusive: bool = False
    auto_delete: bool = False
    dead_letter: bool = True
    """Rejected (poison) messages go to ``ksched.dead`` with the reason in a header."""
    description: str = ""
    payload: str = ""
    """The contract type carried (a name from contracts), for the AsyncAPI document."""
    arguments: dict[str, int | str] = field(default_factory=dict)
    retired: tuple[QueueBinding, ...] = ()
    """Bindings an earlier ksched declared for this queue and this one does not: declaring
    the queue removes them (a broker keeps every binding ever declared)."""


EVENTS: Final = ExchangeSpec(
    "ksched.events", "topic", description="User watch events, routing key <kind>.<type>."
)
CLUSTER: Final = ExchangeSpec(
    "ksched.cluster", "fanout", description="The informer's sequenced log entries (batches)."
)
SCHEDULE: Final = ExchangeSpec(
    "ksched.schedule", "direct", description="Scheduling attempts handed out by the queue."
)
BIND: Final = ExchangeSpec("ksched.bind", "direct", description="Bind requests for the binder.")
RESULTS: Final = ExchangeSpec(
    "ksched.results", "direct", description="How each attempt ended, back to the queue."
)
BOUND: Final = ExchangeSpec(
    "ksched.bound",
    "direct",
    description="The Bindings of each binder batch, for the informer to record in the log.",
)
DECISIONS: Final = ExchangeSpec(
    "ksched.decisions",
    "topic",
    description=(
        "Decisions for users, routing key <kind>.<namespace>: Bindings, Events, waiting"
        " pods, PodGroup status, preemptions, nominations, Evictions, pods'"
        " PodScheduled conditions (status) and ResourceClaims' allocations (claim)."
    ),
)
PERMIT: Final = ExchangeSpec(
    "ksched.permit",
    "topic",
    description="Allow or reject a pod waiting at Permit, routing key allow.<ns> / reject.<ns>.",
)
ERRORS: Final = ExchangeSpec(
    "ksched.errors", "topic", description="Rejected input, routing key error.<kind>."
)
DEAD: Final = ExchangeSpec(
    "ksched.dead", "fanout", description="Dead letters: poison messages with their reason."
)

EXCHANGES: Final = (
    EVENTS,
    CLUSTER,
    SCHEDULE,
    BIND,
    RESULTS,
    BOUND,
    DECISIONS,
    PERMIT,
    ERRORS,
    DEAD,
)

SCHEDULE_KEY: Final = "schedule"
BIND_KEY: Final = "bind"
RESULTS_KEY: Final = "results"
BOUND_KEY: Final = "bound"
REASON_HEADER: Final = "x-ksched-reason"
"""Header a dead-lettered message carries: why it was rejected."""
ORIGIN_EXCHANGE_HEADER: Final = "x-ksched-exchange"
"""Header a dead-lettered message carries: the exchange it had been published to (its
topology name), where ``ksched dead-letters replay`` publishes it again."""
ORIGIN_QUEUE_HEADER: Final = "x-ksched-queue"
"""Header a dead-lettered message carries: the queue it was consumed from."""

INFORMER_EVENTS: Final = QueueSpec(
    "ksched.informer.events",
    (QueueBinding(EVENTS.name, "#"),),
    description="Every user watch event, in arrival order, for the informer.",
    payload="WatchEvent",
)
INFORMER_BINDINGS: Final = QueueSpec(
    "ksched.informer.bindings",
    (QueueBinding(BOUND.name, BOUND_KEY),),
    description="The Bindings of each binder batch, to be recorded in the event log.",
    payload="BoundBatch",
    # Before, the informer took every Binding from ksched.decisions, one per pod.
    retired=(QueueBinding(DECISIONS.name, "binding.*"),),
)
QUEUE_CLUSTER: Final = QueueSpec(
    "ksched.queue.cluster",
    (QueueBinding(CLUSTER.name, ""),),
    description="Cluster events for the scheduling queue.",
    payload="ClusterBatch",
)
QUEUE_RESULTS: Final = QueueSpec(
    "ksched.queue.results",
    (QueueBinding(RESULTS.name, RESULTS_KEY),),
    description="Attempt results for the scheduling queue.",
    payload="ResultBatch",
)
SCHEDULER_REQUESTS: Final = QueueSpec(
    "ksched.scheduler.requests",
    (QueueBinding(SCHEDULE.name, SCHEDULE_KEY),),
    description="Work queue shared by every scheduler replica.",
    payload="ScheduleBatch",
)
BINDER_REQUESTS: Final = QueueSpec(
    "ksched.binder.requests",
    (QueueBinding(BIND.name, BIND_KEY),),
    description="Work queue shared by every binder replica.",
    payload="BindBatch",
)
BINDER_PERMIT: Final = QueueSpec(
    "ksched.binder.permit",
    (QueueBinding(PERMIT.name, "allow.*"), QueueBinding(PERMIT.name, "reject.*")),
    description="Allow / reject decisions for waiting pods, shared by every binder replica.",
    payload="PermitDecision",
)
DEAD_LETTERS: Final = QueueSpec(
    "ksched.dead.letters",
    (QueueBinding(DEAD.name, ""),),
    dead_letter=False,
    description="Poison messages, with the reason in the x-ksched-reason header.",
)


CLASSIC_ONLY: Final = frozenset(
    {"x-max-priority", "x-queue-mode", "x-queue-master-locator", "x-queue-version"}
)
"""Queue arguments RabbitMQ 3.10's quorum queues refuse: a queue given one stays classic."""


def is_quorum(spec: QueueSpec, quorum: bool) -> bool:
    """Whether ``spec`` is declared a quorum queue when the deployment asks for them
    (``quorum``): durable, neither exclusive nor auto-delete, no classic-only argument."""
    return (
        quorum
        and spec.durable
        and not spec.exclusive
        and not spec.auto_delete
        and not CLASSIC_ONLY.intersection(spec.arguments)
    )


def queue_arguments(spec: QueueSpec, *, dead_exchange: str, quorum: bool) -> dict[str, int | str]:
    """The arguments ``spec`` is declared with: its own, the dead-letter exchange
    (``dead_exchange``, its name on the broker) if it dead-letters, and
    ``x-queue-type: quorum`` where :func:`is_quorum`."""
    arguments: dict[str, int | str] = dict(spec.arguments)
    if spec.dead_letter:
        arguments["x-dead-letter-exchange"] = dead_exchange
    if is_quorum(spec, quorum):
        arguments["x-queue-type"] = "quorum"
    return arguments


def scheduler_cluster_queue(replica: str) -> QueueSpec:
    """The private snapshot feed of one scheduler replica."""
    return QueueSpec(
        f"ksched.scheduler.cluster.{replica}",
        (QueueBinding(CLUSTER.name, ""),),
        durable=False,
        exclusive=True,
        auto_delete=True,
        dead_letter=False,
        description="Cluster events for one scheduler replica's snapshot.",
        payload="ClusterBatch",
    )


QUEUES: Final = (
    INFORMER_EVENTS,
    INFORMER_BINDINGS,
    QUEUE_CLUSTER,
    QUEUE_RESULTS,
    SCHEDULER_REQUESTS,
    BINDER_REQUESTS,
    BINDER_PERMIT,
    DEAD_LETTERS,
)


def event_key(kind: str, event_type: str) -> str:
    """Routing key of a user watch event: ``pod.added``."""
    return f"{kind.lower()}.{event_type.lower()}"


CLAIM_DECISION: Final = "claim"
"""The kind of a ResourceClaim's status update on ``ksched.decisions``
(``claim.<namespace>``): its ``status.allocation`` and the pod in
``status.reservedFor``, published by the binder at PreBind before the pod's Binding;
or its deallocation, published by the scheduler at PostFilter. A client applies it by
publishing the claim's MODIFIED watch event; until then the store counts an
allocation's devices as held by the pod."""


def decision_key(kind: str, namespace: str | None) -> str:
    """Routing key of a decision: ``binding.default``, ``event.kube-system``."""
    return f"{kind.lower()}.{namespace or 'default'}"


ERROR_KEY_PREFIX: Final = "error."


def error_key(kind: str) -> str:
    """Routing key of an error report: ``error.pod``. A kind that is not one lowercase
    word of letters and digits (at most 63 characters: the word of a routing key the user
    made up, say ``#``, ``💥`` or 255 ``x``) is ``error.unknown``; the report's
    ``object_kind`` still says what the routing key said. (A longer key could not even be
    published: AMQP routing keys end at 255 bytes.)"""
    word = kind.lower()
    plain = 0 < len(word) <= 63 and word.isascii() and word.isalnum()
    return ERROR_KEY_PREFIX + (word if plain else "unknown")
