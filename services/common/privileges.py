"""Least privilege, derived from the code: one RabbitMQ user and one Redis user per service.

``python -m services.common.privileges`` writes ``ops/rabbitmq/definitions.json`` (for
``rabbitmqctl import_definitions``) and ``ops/redis/users.acl`` (for Redis ``aclfile``);
a test checks that the checked-in files equal what this module generates.

RabbitMQ (names from :mod:`contracts.topology`, anchored regexes):

- the definitions declare the durable topology (exchanges, queues, bindings), so no
  service needs to configure anything but its own queues; a service declares the rest
  passively (``RabbitBus``);
- configure: the queues the service consumes (the scheduler: also its per-replica
  snapshot feeds ``ksched.scheduler.cluster.*``);
- write: those queues (binding them) and the exchanges it publishes on, ``ksched.dead``
  included (a consumer dead-letters poison messages);
- read: those queues and the exchanges they are bound to.

Users come without a password (``password_hash`` empty: no password login) until the
operator sets one: ``rabbitmqctl change_password ksched-informer '…'``.

Redis: every service reads and writes the one shared cache under ``ksched:``, so the key
pattern is the same; the commands differ: each user gets exactly the commands of the
store methods it calls, and for a method that runs a Lua script, the commands that
script calls (Redis 7 checks those against the caller's ACL too). Users are ``off``
until the operator gives them a password (``ACL SETUSER ksched-informer on >…``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from contracts import topology as t
from services.common.store import _lua, _lua_failover, _lua_leases, _lua_reads, _lua_waiting

USER_PREFIX = "ksched-"


@dataclass(frozen=True)
class Grants:
    """What one service does on the bus and in the store."""

    consumes: tuple[t.QueueSpec, ...]
    publishes: tuple[t.ExchangeSpec, ...]
    store_methods: tuple[str, ...]
    configures_pattern: str = ""
    """A regex (un-prefixed topology names) of queues made at run time, e.g. per replica."""
    streams: tuple[str, ...] = ()
    """Streams it declares, reads and appends to (the event log's, by its default name
    ``stream://``, with its ``.fences`` and ``.snapshots``): published to through the
    default exchange (``amq.default``)."""


_FEED = t.scheduler_cluster_queue("")

SERVICES: Mapping[str, Grants] = {
    "informer": Grants(
        consumes=(t.INFORMER_EVENTS, t.INFORMER_BINDINGS),
        publishes=(t.CLUSTER, t.ERRORS, t.DEAD),
        store_methods=(
            "applied_seq",
            "apply",
            "objects",
            "epoch",
            "attach",
            "restore",
            "identity",
            "invalidate",
            "acquire_lease",
            "release_lease",
        ),
        streams=tuple(f"ksched.eventlog{suffix}" for suffix in ("", ".fences", ".snapshots")),
    ),
    "queue": Grants(
        consumes=(t.QUEUE_CLUSTER, t.QUEUE_RESULTS),
        publishes=(t.SCHEDULE, t.DECISIONS, t.DEAD),
        store_methods=(
            "applied_seq",
            "epoch",
            "attach",
            "objects",
            "leases",
            "set_leases",
            "drop_leases",
            "nominations",
            "set_nominations",
            "clear_nominations",
            "put_queue_view",
            "waiting",
            "preemptions",
            "set_preemptions",
            "drop_preemptions",
            "acquire_lease",
            "release_lease",
        ),
    ),
    "scheduler": Grants(
        consumes=(t.SCHEDULER_REQUESTS,),
        publishes=(t.BIND, t.RESULTS, t.DECISIONS, t.DEAD),
        store_methods=(
            "applied_seq",
            "epoch",
            "attach",
            "objects",
            "assume",
            "assumed",
            "nominations",
            "set_nominations",
            "clear_nominations",
            "claim_nominations",
            "begin_bind",
            "forget",
            "waiting",
            "put_waiting",
            "allow_waiting",
            "reject_waiting",
        ),
        configures_pattern=re.escape(_FEED.name) + ".+",
    ),
    "binder": Grants(
        consumes=(t.BINDER_REQUESTS, t.BINDER_PERMIT),
        publishes=(t.BIND, t.RESULTS, t.BOUND, t.DECISIONS, t.EVENTS, t.ERRORS, t.DEAD),
        store_methods=(
            "epoch",
            "begin_bind",
            "forget",
            "waiting",
            "allow_waiting",
            "reject_waiting",
            "expire_waiting",
            "next_waiting_deadline",
            "take_waiting",
            "return_waiting",
            "resolved_before",
        ),
    ),
    "descheduler": Grants(
        consumes=(),
        publishes=(t.DECISIONS,),
        store_methods=(
            "applied_seq",
            "epoch",
            "objects",
            "evictions",
            "record_evictions",
            "drop_evictions",
            "acquire_lease",
            "release_lease",
        ),
    ),
}

_SCRIPTS = {
    "apply": _lua.APPLY,
    "restore": _lua.APPLY,
    "assume": _lua.ASSUME,
    "begin_bind": _lua.BEGIN_BIND,
    "forget": _lua.FORGET,
    "node_usage": _lua.READ_NODES,
    "allocatable": _lua.READ_NODES,
    "objects": _lua_reads.READ_HASH,
    "objects_at": _lua_reads.READ_HASHES,
    "assumed": _lua_reads.READ_HASH,
    "leases": _lua_reads.READ_HASH,
    "nominations": _lua_reads.READ_HASH,
    "set_leases": _lua.WRITE_HASH,
    "set_nominations": _lua.WRITE_HASH,
    "drop_leases": _lua.WRITE_HASH,
    "clear_nominations": _lua.WRITE_HASH,
    "claim_nominations": _lua.CLAIM_NOMINATIONS,
    "evictions": _lua_reads.READ_HASH,
    "record_evictions": _lua.WRITE_HASH,
    "drop_evictions": _lua.WRITE_HASH,
    "acquire_lease": _lua_leases.ACQUIRE_LEASE,
    "release_lease": _lua_leases.RELEASE_LEASE,
    "leader_leases": _lua_leases.READ_LEADERS,
    "put_queue_view": _lua_leases.PUT_QUEUE_VIEW,
    "preemptions": _lua_reads.READ_HASH,
    "set_preemptions": _lua.WRITE_HASH,
    "drop_preemptions": _lua.WRITE_HASH,
    "invalidate": _lua_failover.INVALIDATE,
    "put_waiting": _lua_waiting.PUT_WAITING,
    "allow_waiting": _lua_waiting.ALLOW_WAITING,
    "reject_waiting": _lua_waiting.REJECT_WAITING,
    "expire_waiting": _lua_waiting.EXPIRE_WAITING,
    "take_waiting": _lua_waiting.TAKE_WAITING,
    "return_waiting": _lua_waiting.RETURN_WAITING,
    "waiting": _lua_waiting.READ_WAITING,
    "resolved_before": _lua_waiting.READ_WAITING,
}
_COMMANDS = {
    "applied_seq": ("get",),
    "epoch": ("mget",),
    "attach": ("mget",),
    "queue_view": ("get",),
    "next_waiting_deadline": ("zrange",),
    "identity": ("info",),
}
_REPLICATED = frozenset({"assume", "begin_bind", "set_leases"})
"""Methods whose script is followed by ``WAIT`` under Sentinel (RedisStore._run)."""
_CONNECTION = ("ping",)
"""redis-py also sends CLIENT SETINFO on connect (Redis 7.2+) and ignores a refusal."""
_STARTUP = ("applied_seq",)
"""``ksched run`` checks that Redis answers with this before it starts any service."""
_SCRIPT_RUNNER = ("evalsha", "script|load")
_CALL = re.compile(r"redis\.call\('([A-Za-z]+)'")


def store_commands(methods: Iterable[str]) -> list[str]:
    """The Redis commands the RedisStore methods ``methods`` send, scripts included."""
    commands = set(_CONNECTION)
    for method in {*methods, *_STARTUP}:
        if method in _REPLICATED:
            commands.add("wait")
        if method in _SCRIPTS:
            commands.update(_SCRIPT_RUNNER)
            commands.update(c.lower() for c in _CALL.findall(_SCRIPTS[method]))
        else:
            commands.update(_COMMANDS[method])
    return sorted(commands)


def _names(names: Iterable[str], namespace: str) -> list[str]:
    prefix = f"{namespace}." if namespace else ""
    return sorted({re.escape(prefix + name) for name in names})


def _regex(alternatives: Iterable[str]) -> str:
    parts = sorted(set(alternatives))
    return f"^({'|'.join(parts)})$" if parts else "^$"


def permissions(grants: Grants, namespace: str = "") -> dict[str, str]:
    """configure / write / read regexes for one service."""
    queues = _names((*(q.name for q in grants.consumes), *grants.streams), namespace)
    made = []
    if grants.configures_pattern:
        made = [re.escape(f"{namespace}." if namespace else "") + grants.configures_pattern]
    published = _names((e.name for e in grants.publishes), namespace)
    bound_from = _names((b.exchange for q in grants.consumes for b in q.bindings), namespace)
    if grants.configures_pattern:
        bound_from += _names((b.exchange for b in _FEED.bindings), namespace)
    return {
        "configure": _regex([*queues, *made]),
        "write": _regex(
            [*queues, *made, *published, *(["amq\\.default"] if grants.streams else [])]
        ),
        "read": _regex([*queues, *made, *bound_from]),
    }


def rabbitmq_definitions(
    vhost: str = "/", namespace: str = "", users: str = USER_PREFIX, *, quorum: bool = False
) -> dict[str, object]:
    """Users (``users`` + service name), permissions and the durable topology, as
    ``import_definitions`` reads them; ``quorum``: durable queues as quorum queues (a
    cluster's definitions, see contracts.topology)."""
    prefix = f"{namespace}." if namespace else ""
    return {
        "users": [{"name": users + name, "password_hash": "", "tags": []} for name in SERVICES],
        "permissions": [
            {"user": users + name, "vhost": vhost, **permissions(grants, namespace)}
            for name, grants in SERVICES.items()
        ],
        "exchanges": [
            {
                "name": prefix + e.name,
                "vhost": vhost,
                "type": e.type,
                "durable": e.durable,
                "auto_delete": False,
                "internal": False,
                "arguments": {},
            }
            for e in t.EXCHANGES
        ],
        "queues": [
            {
                "name": prefix + q.name,
                "vhost": vhost,
                "durable": q.durable,
                "auto_delete": q.auto_delete,
                "arguments": t.queue_arguments(
                    q, dead_exchange=prefix + t.DEAD.name, quorum=quorum
                ),
            }
            for q in t.QUEUES
        ],
        "bindings": [
            {
                "source": prefix + b.exchange,
                "vhost": vhost,
                "destination": prefix + q.name,
                "destination_type": "queue",
                "routing_key": b.routing_key,
                "arguments": {},
            }
            for q in t.QUEUES
            for b in q.bindings
        ],
    }


def redis_acl(
    namespace: str = "ksched", *, users: str = USER_PREFIX, password: str | None = None
) -> str:
    """One ACL line per service (``aclfile`` format). Without ``password`` the users are
    off (the operator turns each on with its password)."""
    key_pattern = "".join("\\" + c if c in "*?[]\\" else c for c in f"{namespace}:") + "*"
    state = f"on >{password}" if password is not None else "off"
    lines = [
        f"user {users}{name} {state} resetkeys ~{key_pattern} resetchannels -@all "
        + " ".join(f"+{c}" for c in store_commands(grants.store_methods))
        for name, grants in SERVICES.items()
    ]
    return "\n".join(lines) + "\n"


def write(root: Path) -> None:
    (root / "ops/rabbitmq").mkdir(parents=True, exist_ok=True)
    (root / "ops/redis").mkdir(parents=True, exist_ok=True)
    definitions = json.dumps(rabbitmq_definitions(), indent=2) + "\n"
    (root / "ops/rabbitmq/definitions.json").write_text(definitions)
    (root / "ops/redis/users.acl").write_text(redis_acl())


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
