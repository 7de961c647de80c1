"""ClusterStore on Redis: the shared cluster cache of every scheduler and binder replica.

Every key starts with ``{namespace}:``; the layout is in :mod:`services.common.store._lua`.
``apply``, ``assume``, ``begin_bind`` and ``forget`` are each one Lua script call for the
whole batch, so each is atomic on the server: two replicas assuming onto the same node are
serialised and the loser gets ``conflict`` with the usage that beat it. Every other method
is one round trip. ``now`` always comes from the caller's clock, never Redis ``TIME``.

The client (:mod:`services.common.store._client`): a Redis URL, or Sentinel
(``redis+sentinel://``), whose master it follows: each method is then retried through a
failover, and ``assume``, ``begin_bind`` and ``set_leases`` wait for a replica's ack
(``WAIT``). ``identity`` is the master's ``run_id/master_replid``.

Details the Protocol leaves open (the in-memory store behaves the same):

- A charge is the pod's positive requests plus ``pods: 1``, whatever ``requests["pods"]``
  says. Resource and node names must not contain ``|``, ``,`` or ``=`` (Kubernetes names
  never do); :class:`ValueError` otherwise.
- ``assume`` checks only the resources of ``Reservation.checked`` (all when None) and
  charges the whole request.
- ``node_usage(nodes)`` answers every node asked for (``{}`` when nothing is charged);
  ``node_usage()`` covers every node in the log plus any node still charged.
  ``allocatable(nodes)`` leaves out nodes that are not in the log.
- Expiry is lazy: an assumption past its deadline is released by the next ``assume`` that
  targets its node or wants one of its DRA devices, or by ``begin_bind``, which never
  claims it. Until then it still
  holds its capacity and ``assumed()`` lists it: nothing else can have been given that
  capacity.
- A pending pod (``node=None``, body present) loses its bound charge only; a bound or
  deleted pod also loses its assumption, lease and nomination.

Tracing: one CLIENT span per store operation (method) made inside a trace (a pod's or
a message's: the current span), named ``<command> <method>``
(``EVALSHA assume``), not one per Redis command: an operation is one script call or one
command, and the span is what the caller waited for (script loading included). The
official opentelemetry-instrumentation-redis does not fit: it wraps every command, so
it would show ``EVALSHA`` spans that do not say which operation they served. Its
attribute names are followed by hand, in the current database conventions and the
older ones it still emits: ``db.system.name`` and ``db.system`` (``redis``),
``db.operation.name`` (the Redis command), ``db.stored_procedure.name`` (ksched's Lua
script), ``db.namespace`` (the database index given in the URL, as a string),
``server.address`` and ``server.port`` (or the socket path), ``ksched.store.operation``
(the method); on a failure ``error.type`` (and ``db.response.status_code``, the Redis
error prefix). Calls outside any trace (the informer's store check, the projection-lag
watchdog, the binder's timer poll, health checks) make no span: each would be a trace
of one span, several a second, with nothing behind it.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, cast

from redis.commands.core import AsyncScript
from redis.exceptions import ResponseError

from services.common import redact
from services.common.store._charges import normalize
from services.common.store._client import ReplicaAck, connect, master_moved
from services.common.store._client import traced as _traced
from services.common.store._codec import (
    assume_result,
    fenced_error,
    guard_arg,
    leader_of,
    preemption_of,
    preemption_value,
    waiting_encoder,
    waiting_record,
)
from services.common.store._lua import (
    APPLY,
    ASSUME,
    BEGIN_BIND,
    CLAIM_NOMINATIONS,
    FORGET,
    LOST,
    READ_NODES,
    WRITE_HASH,
)
from services.common.store._lua_failover import INVALIDATE
from services.common.store._lua_leases import (
    ACQUIRE_LEASE,
    FENCED,
    PUT_QUEUE_VIEW,
    READ_LEADERS,
    RELEASE_LEASE,
)
from services.common.store._lua_reads import READ_HASH, READ_HASHES
from services.common.store._lua_waiting import (
    ALLOW_WAITING,
    EXPIRE_WAITING,
    PUT_WAITING,
    READ_WAITING,
    REJECT_WAITING,
    RELEASE_WAITING,
    RETURN_WAITING,
    TAKE_WAITING,
)
from services.common.store.base import (
    Assumed,
    AssumeResult,
    BindClaim,
    Epoch,
    Nomination,
    NominationClaim,
    Preemption,
    ProjectedEntry,
    Reservation,
    StoreLost,
    WaitingRecord,
    live,
)
from services.common.store.leases import Fence, LeaderLease, first_token
from services.common.store.sentinel import NO_FAILOVER_OPTIONS, FailoverOptions, is_sentinel_url
from services.common.tls import NO_TLS_FILES, TLSFiles

_FORBIDDEN = frozenset("|,=")


class RedisStore:
    """A ClusterStore on the Redis at ``url``; ``namespace`` prefixes every key."""

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "ksched",
        tls: TLSFiles = NO_TLS_FILES,
        failover: FailoverOptions = NO_FAILOVER_OPTIONS,
    ) -> None:
        redact.install()
        self.namespace = namespace
        self._p = f"{namespace}:"
        self._client = connect(url, tls, failover)
        self._redis, self._span_attributes = self._client.redis, self._client.attributes
        self._failover_timeout = failover.failover_timeout if is_sentinel_url(url) else 0.0
        self._ack = ReplicaAck(self._redis, failover.wait_for(url))
        self._apply = self._redis.register_script(APPLY)
        self._assume = self._redis.register_script(ASSUME)
        self._begin_bind = self._redis.register_script(BEGIN_BIND)
        self._forget = self._redis.register_script(FORGET)
        self._read_nodes = self._redis.register_script(READ_NODES)
        self._read_hash = self._redis.register_script(READ_HASH)
        self._read_hashes = self._redis.register_script(READ_HASHES)
        self._write_hash = self._redis.register_script(WRITE_HASH)
        self._put_waiting = self._redis.register_script(PUT_WAITING)
        self._allow_waiting = self._redis.register_script(ALLOW_WAITING)
        self._reject_waiting = self._redis.register_script(REJECT_WAITING)
        self._expire_waiting = self._redis.register_script(EXPIRE_WAITING)
        self._take_waiting = self._redis.register_script(TAKE_WAITING)
        self._read_waiting = self._redis.register_script(READ_WAITING)
        self._return_waiting = self._redis.register_script(RETURN_WAITING)
        self._release_waiting = self._redis.register_script(RELEASE_WAITING)
        self._claim_nominations = self._redis.register_script(CLAIM_NOMINATIONS)
        self._acquire_lease = self._redis.register_script(ACQUIRE_LEASE)
        self._release_lease = self._redis.register_script(RELEASE_LEASE)
        self._invalidate = self._redis.register_script(INVALIDATE)
        self._read_leaders = self._redis.register_script(READ_LEADERS)
        self._put_queue_view = self._redis.register_script(PUT_QUEUE_VIEW)
        self._expected = ""
        """The live token this client expects ("" until it attaches)."""
        self._fence: Fence | None = None

    def fence(self, fence: Fence | None) -> None:
        guard_arg("", fence)  # a role the scripts can read
        self._fence = fence

    async def _run(self, script: AsyncScript, *args: Any, replicated: bool = False) -> Any:
        """Run a guarded (or fenced) script with the prefix, the expected token and the
        fence in front of ``args``; the guard's refusals become FencedError and
        StoreLost. ``replicated``: a write that guards against overcommit or a second
        binding, followed by WAIT (ReplicaAck)."""
        full = [self._p, guard_arg(self._expected, self._fence), *args]
        try:
            if replicated and self._ack.enabled:
                return await self._ack.run(script, full)
            return await script(keys=[], args=full)
        except ResponseError as error:
            text = str(error)
            if text.startswith(FENCED):
                raise fenced_error(text) from None
            if not text.startswith(LOST):
                raise
            why = text.removeprefix(LOST).partition(" script:")[0].strip()
            raise StoreLost(f"store {self.namespace!r} {why}") from None

    @_traced("MGET")
    async def epoch(self) -> Epoch:
        marker, seq = await self._redis.mget(self._p + "epoch", self._p + "seq")
        applied = int(seq) if seq is not None else 0
        if marker is None:
            return Epoch("blank", seq=applied)
        if marker == b"building":
            return Epoch("building", seq=applied)
        text = marker.decode() if isinstance(marker, bytes) else str(marker)
        return Epoch("live", text.removeprefix("live:"), applied)

    async def attach(self) -> Epoch:
        current = live(await self.epoch(), self.namespace)
        self._expected = current.token
        return current

    @_traced("INFO")
    async def identity(self) -> str:
        await master_moved(self._redis)  # ask the master, not one demoted meanwhile
        info = await self._redis.info("server", "replication")
        return f"{info.get('run_id', '')}/{info.get('master_replid', '')}"

    @_traced("EVALSHA", "invalidate")
    async def invalidate(self, token: str) -> bool:
        return bool(await self._run(self._invalidate, token))

    @_traced("EVALSHA", "apply")
    async def restore(
        self, entries: Sequence[ProjectedEntry], *, final: bool, base: int | None = None
    ) -> None:
        await self._apply_entries("final" if final else "restore", entries, base)

    @_traced("GET")
    async def applied_seq(self) -> int:
        seq = await self._redis.get(self._p + "seq")
        return int(seq) if seq is not None else 0

    @_traced("EVALSHA", "apply")
    async def apply(self, entries: Sequence[ProjectedEntry]) -> None:
        if entries:
            await self._apply_entries("apply", entries)

    async def _apply_entries(
        self, op: str, entries: Sequence[ProjectedEntry], base: int | None = None
    ) -> None:
        token = uuid.uuid4().hex[:16]
        args: list[str | bytes] = [op, token, str(len(entries))]
        for e in entries:
            mode, uid, node, reqs, devs = "", "", "", "", ""
            if e.kind == "resourceclaim":
                mode, devs = "c", "\n".join(map(_device, e.devices or ()))
            elif e.kind == "node":
                mode, reqs = "n", _encode(e.allocatable or {})
            elif e.pod is not None:
                mode, uid = "p", e.pod.uid
                node = _name(e.pod.node or "")
                reqs = _encode(normalize(e.pod.requests))
            deleted = "1" if e.body is None else "0"
            args += [str(e.seq), e.kind, e.key, deleted, e.body or b"", mode, uid, node, reqs, devs]
        if base is not None:
            args.append(str(base))
        if await self._run(self._apply, *args):  # the store became live: ours
            self._expected = token

    @_traced("EVALSHA", "read_hash")
    async def objects(self, kind: str) -> dict[str, bytes]:
        return _objects(await self._run(self._read_hash, f"obj:{kind}"))

    @_traced("EVALSHA", "read_hashes")
    async def objects_at(self, kinds: Sequence[str]) -> tuple[int, dict[str, dict[str, bytes]]]:
        seq, *hashes = await self._run(self._read_hashes, *(f"obj:{kind}" for kind in kinds))
        read = {kind: _objects(flat) for kind, flat in zip(kinds, hashes, strict=True)}
        return int(seq) if seq else 0, read

    @_traced("EVALSHA", "read_nodes")
    async def node_usage(self, nodes: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
        return await self._nodes("usage", nodes)

    @_traced("EVALSHA", "read_nodes")
    async def allocatable(self, nodes: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
        return await self._nodes("alloc", nodes)

    async def _nodes(self, which: str, nodes: Sequence[str] | None) -> dict[str, dict[str, int]]:
        if nodes is not None and not nodes:
            return {}
        flat = await self._run(self._read_nodes, which, *(nodes or ()))
        return {flat[i].decode(): _pairs(flat[i + 1]) for i in range(0, len(flat), 2)}

    @_traced("EVALSHA", "assume")
    async def assume(self, reservations: Sequence[Reservation], now: float) -> list[AssumeResult]:
        if not reservations:
            return []
        args: list[str] = [repr(float(now)), str(len(reservations))]
        for r in reservations:
            deadline = min(now + r.ttl, sys.float_info.max)  # "inf" means binding
            reqs = _encode(normalize(r.requests))
            checked = "*" if r.checked is None else ",".join(map(_name, sorted(r.checked)))
            reads = "\n".join(f"{_domain(d)}\n{v}" for d, v in r.reads.items())
            touches = "\n".join(map(_domain, r.touches))
            watched = "*" if r.watched is None else "\n".join(sorted(r.watched))
            args += [r.uid, _name(r.node), str(r.attempt), repr(float(deadline)), reqs, checked]
            devices = "\n".join(map(_device, dict.fromkeys(r.devices)))
            args += [reads, touches, watched, "\n".join(r.keys), devices]
        replies = await self._run(self._assume, *args, replicated=True)
        return [assume_result(*reply) for reply in replies]

    @_traced("EVALSHA", "read_hash")
    async def domain_versions(self) -> dict[str, int]:
        raw = await self._hgetall("domains")
        return {name.decode(): int(version) for name, version in raw.items()}

    @_traced("EVALSHA", "read_hash")
    async def devices(self) -> dict[str, str]:
        raw = await self._hgetall("devices")
        return {device.decode(): holder.decode() for device, holder in raw.items()}

    @_traced("EVALSHA", "begin_bind")
    async def begin_bind(self, claims: Sequence[BindClaim], now: float) -> list[bool]:
        if not claims:
            return []
        args = [repr(float(now)), *self._claim_args(claims)]
        replies = await self._run(self._begin_bind, *args, replicated=True)
        return [bool(reply) for reply in replies]

    @_traced("EVALSHA", "forget")
    async def forget(self, claims: Sequence[BindClaim]) -> None:
        if claims:
            await self._run(self._forget, *self._claim_args(claims))

    def _claim_args(self, claims: Sequence[BindClaim]) -> list[str]:
        args = [str(len(claims))]
        for c in claims:
            args += [c.uid, c.node, str(c.attempt)]
        return args

    @_traced("EVALSHA", "read_hash")
    async def assumed(self) -> dict[str, Assumed]:
        raw = await self._hgetall("assumed")
        result = {}
        for uid, value in raw.items():
            node, attempt, deadline, reqs = value.decode().split("|", 3)
            result[uid.decode()] = Assumed(node, int(attempt), float(deadline), _decode(reqs))
        return result

    @_traced("EVALSHA", "write_hash")
    async def set_leases(self, leases: Mapping[str, int]) -> None:
        if leases:
            pairs = [x for uid, attempt in leases.items() for x in (uid, str(attempt))]
            await self._run(self._write_hash, "set", "lease", *pairs, replicated=True)

    @_traced("EVALSHA", "read_hash")
    async def leases(self) -> dict[str, int]:
        raw = await self._hgetall("lease")
        return {uid.decode(): int(attempt) for uid, attempt in raw.items()}

    @_traced("EVALSHA", "write_hash")
    async def drop_leases(self, uids: Sequence[str]) -> None:
        if uids:
            await self._run(self._write_hash, "del", "lease", *uids)

    @_traced("EVALSHA", "write_hash")
    async def set_nominations(self, nominations: Mapping[str, Nomination]) -> None:
        if nominations:
            pairs = [
                x for uid, n in nominations.items() for x in (uid, f"{_name(n.node)}|{n.priority}")
            ]
            await self._run(self._write_hash, "set", "nominated", *pairs)

    @_traced("EVALSHA", "write_hash")
    async def clear_nominations(self, uids: Sequence[str]) -> None:
        if uids:
            await self._run(self._write_hash, "del", "nominated", *uids)

    @_traced("EVALSHA", "claim_nominations")
    async def claim_nominations(self, claims: Sequence[NominationClaim]) -> list[str]:
        if not claims:
            return []
        args: list[str] = [str(len(claims))]
        for c in claims:
            args += [c.uid, _name(c.node), str(c.priority), str(len(c.seen)), *sorted(c.seen)]
            args += [str(len(c.clears)), *c.clears]
        lost = await self._run(self._claim_nominations, *args)
        return [uid.decode() if isinstance(uid, bytes) else str(uid) for uid in lost]

    # -- waiting pods: one script per step (unguarded, see base.ClusterStore) ---------

    @_traced("EVALSHA", "put_waiting")
    async def put_waiting(self, records: Sequence[WaitingRecord]) -> None:
        if not records:
            return
        args: list[str | bytes] = [self._p, str(len(records))]
        for r in records:
            args += [r.uid, str(r.attempt), waiting_encoder.encode(r), str(len(r.pending))]
            for plugin, deadline in sorted(r.pending.items()):
                args += [plugin, repr(float(deadline))]
        await self._put_waiting(keys=[], args=args)

    @_traced("EVALSHA", "read_waiting")
    async def waiting(self) -> dict[str, WaitingRecord]:
        rows = await self._read_waiting(keys=[], args=[self._p, "all"])
        records = [waiting_record(row) for row in rows]
        return {r.uid: r for r in records}

    @_traced("EVALSHA", "allow_waiting")
    async def allow_waiting(self, uid: str, plugin: str, now: float) -> WaitingRecord | None:
        row = await self._allow_waiting(keys=[], args=[self._p, uid, plugin, repr(now)])
        return waiting_record(row) if row else None

    @_traced("EVALSHA", "reject_waiting")
    async def reject_waiting(
        self, uid: str, plugin: str, message: str, now: float
    ) -> WaitingRecord | None:
        row = await self._reject_waiting(keys=[], args=[self._p, uid, plugin, message, repr(now)])
        return waiting_record(row) if row else None

    @_traced("EVALSHA", "read_hash")
    async def release_version(self) -> int:
        return int((await self._hgetall("releases")).get(b"version", 0))

    @_traced("EVALSHA", "release_waiting")
    async def release_waiting(
        self, rejections: Sequence[tuple[str, str, str]], seen: int, now: float
    ) -> list[WaitingRecord] | None:
        args = [str(seen), repr(float(now)), str(len(rejections))]
        args += [x for rejection in rejections for x in rejection]
        rows = await self._run(self._release_waiting, *args)
        return None if rows is None else [waiting_record(row) for row in rows]

    @_traced("EVALSHA", "expire_waiting")
    async def expire_waiting(self, now: float) -> list[WaitingRecord]:
        rows = await self._expire_waiting(keys=[], args=[self._p, repr(now)])
        return [waiting_record(row) for row in rows]

    @_traced("ZRANGE")
    async def next_waiting_deadline(self) -> float | None:
        first = await self._redis.zrange(self._p + "wait:due", 0, 0, withscores=True)
        return float(first[0][1]) if first else None

    @_traced("EVALSHA", "take_waiting")
    async def take_waiting(self, uid: str, attempt: int) -> WaitingRecord | None:
        row = await self._take_waiting(keys=[], args=[self._p, uid, str(attempt)])
        return waiting_record(row) if row else None

    @_traced("EVALSHA", "return_waiting")
    async def return_waiting(self, records: Sequence[WaitingRecord]) -> None:
        resolved = [r for r in records if r.state != "waiting"]
        if not resolved:
            return
        args: list[str | bytes] = [self._p, str(len(resolved))]
        for r in resolved:
            status = f"{r.state}|{float(r.resolved_at)!r}|{r.plugin}|{r.message}"
            args += [r.uid, str(r.attempt), waiting_encoder.encode(r), status]
        await self._return_waiting(keys=[], args=args)

    @_traced("EVALSHA", "read_waiting")
    async def resolved_before(self, when: float) -> list[WaitingRecord]:
        rows = await self._read_waiting(keys=[], args=[self._p, "done", repr(when)])
        return [waiting_record(row) for row in rows]

    @_traced("EVALSHA", "put_queue_view")
    async def put_queue_view(self, view: bytes) -> None:
        await self._run(self._put_queue_view, view)

    @_traced("GET")
    async def queue_view(self) -> bytes | None:
        value = await self._redis.get(self._p + "queueview")
        if value is None:
            return None
        return value if isinstance(value, bytes) else value.encode()

    @_traced("EVALSHA", "read_hash")
    async def evictions(self) -> dict[str, str]:
        raw = await self._hgetall("evicting")
        return {uid.decode(): key.decode() for uid, key in raw.items()}

    @_traced("EVALSHA", "write_hash")
    async def record_evictions(self, evictions: Mapping[str, str]) -> None:
        if evictions:
            pairs = [x for uid, key in evictions.items() for x in (uid, key)]
            await self._run(self._write_hash, "set", "evicting", *pairs)

    @_traced("EVALSHA", "write_hash")
    async def drop_evictions(self, uids: Sequence[str]) -> None:
        if uids:
            await self._run(self._write_hash, "del", "evicting", *uids)

    @_traced("EVALSHA", "acquire_lease")
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
        args = [self._p, _name(name), holder, repr(float(duration)), repr(float(now)), str(token)]
        args += [str(first_token(now)), host, str(pid)]
        granted, *fields = await self._acquire_lease(keys=[], args=args)
        return bool(granted), leader_of(name, fields)

    @_traced("EVALSHA", "release_lease")
    async def release_lease(self, name: str, holder: str, token: int, now: float) -> bool:
        args = [self._p, _name(name), holder, str(token), repr(float(now))]
        return bool(await self._release_lease(keys=[], args=args))

    @_traced("EVALSHA", "read_leaders")
    async def leader_leases(self) -> dict[str, LeaderLease]:
        flat = await self._read_leaders(keys=[], args=[self._p])
        leases = (leader_of(flat[i].decode(), flat[i + 1]) for i in range(0, len(flat), 2))
        return {lease.name: lease for lease in leases}

    @_traced("EVALSHA", "read_hash")
    async def preemptions(self) -> dict[str, Preemption]:
        raw = await self._hgetall("preempting")
        return {uid.decode(): preemption_of(value) for uid, value in raw.items()}

    @_traced("EVALSHA", "write_hash")
    async def set_preemptions(self, preemptions: Mapping[str, Preemption]) -> None:
        if preemptions:
            pairs = [x for uid, p in preemptions.items() for x in (uid, preemption_value(p))]
            await self._run(self._write_hash, "set", "preempting", *pairs)

    @_traced("EVALSHA", "write_hash")
    async def drop_preemptions(self, uids: Sequence[str]) -> None:
        if uids:
            await self._run(self._write_hash, "del", "preempting", *uids)

    @_traced("EVALSHA", "read_hash")
    async def nominations(self) -> dict[str, Nomination]:
        raw = await self._hgetall("nominated")
        result = {}
        for uid, value in raw.items():
            node, priority = value.decode().rsplit("|", 1)
            result[uid.decode()] = Nomination(node, int(priority))
        return result

    async def _hgetall(self, name: str) -> dict[bytes, bytes]:
        """The hash ``{prefix}{name}``, guarded; every key and value is bytes."""
        flat = cast(list[bytes], await self._run(self._read_hash, name))
        return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}

    async def flush_namespace(self) -> None:
        """Delete every key of this namespace (test teardown; never on a live cluster)."""
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in self._p) + "*"
        batch: list[bytes] = []
        async for key in self._redis.scan_iter(match=pattern, count=500):
            batch.append(key)
            if len(batch) >= 500:
                await self._redis.unlink(*batch)
                batch.clear()
        if batch:
            await self._redis.unlink(*batch)

    async def close(self) -> None:
        await self._client.aclose()


def _device(device: str) -> str:
    if not device or "\n" in device:
        raise ValueError(f"device {device!r} is empty or contains a newline")
    return device


def _name(name: str) -> str:
    if _FORBIDDEN.intersection(name):
        raise ValueError(f"name {name!r} contains one of '|', ',', '='")
    return name


def _domain(name: str) -> str:
    if not name or "\n" in name:
        raise ValueError(f"domain {name!r} is empty or contains a newline")
    return name


def _encode(amounts: Mapping[str, int]) -> str:
    return ",".join(f"{_name(name)}={int(amount)}" for name, amount in amounts.items())


def _decode(text: str) -> dict[str, int]:
    pairs = (item.split("=", 1) for item in text.split(",") if item)
    return {name: int(amount) for name, amount in pairs}


def _objects(flat: Sequence[bytes]) -> dict[str, bytes]:
    """A stored kind's hash as HGETALL gave it (flat): key → JSON."""
    return {key.decode(): body for key, body in zip(flat[::2], flat[1::2], strict=True)}


def _pairs(flat: Sequence[bytes]) -> dict[str, int]:
    return {flat[i].decode(): int(flat[i + 1]) for i in range(0, len(flat), 2)}
