"""``ops/fuzz --live``: the fuzzed watch events against the four real services.

The same cases as the embedded mode (:func:`tests.fuzz.run.cases`), published by a plain
aio-pika client of the documented contract (exchange ``<ns>.ksched.events``, routing key
``<kind>.<type>``) to the informer, queue, scheduler and binder running as processes
(:class:`tests.integration.harness.Processes`) under a throwaway namespace on the given
RabbitMQ and Redis. On top of the embedded cases, the wire adds what only it can carry:
wrong content types, content encodings and ``content-type`` headers, malformed and
non-string headers (the informer judges the body alone, so a valid body under a wrong
content type must still be recorded), and unknown routing keys.

After the burst a probe Pod (with a Node of its own, published first) must be bound
within ``probe_within`` seconds. Then, every wait bounded: the reports on
``<ns>.ksched.errors`` (one per invalid event, naming the object and the field), the
event log and the store (every valid event recorded), the dead-letter queue (no valid
event in it) and the processes (none exited). Everything the run made is removed
afterwards (exchanges, queues, Redis keys, its directory unless one was given), and
every process it started is stopped, Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import random
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aio_pika
import msgspec

from contracts.errors import ErrorReport
from contracts.kinds import NAMESPACED
from services.common.store.redis import RedisStore
from tests.fuzz.events import NAMESPACE, Case
from tests.fuzz.run import Outcome, judge
from tests.integration.harness import (
    AMQP_URL,
    REDIS_URL,
    STOP_TIMEOUT,
    Processes,
    delete_namespace,
    node,
    pod,
)

SERVICES = ("informer", "queue", "scheduler", "binder")
PUBLISH_WINDOW = 64
"""Messages awaiting their publisher confirm at once."""
PROBE_NODE = "fuzz-probe-node"
PROBE_NAMESPACE = "fuzz-probe"
POLL = 0.25
GRACE = 1.0
"""Seconds to keep listening, once everything is accounted for, for a second report."""


class RawLongString(str):
    """A header value that goes on the wire as an AMQP long string of bytes that are not
    UTF-8 (as any client may send; pamqp encodes a ``str`` with its ``encode``)."""

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return b"\xff\xfe not utf-8 \xc3"


Properties = dict[str, Any]
"""Keyword arguments of :class:`aio_pika.Message` besides the body."""

WIRE_PROPERTIES: tuple[Properties, ...] = (
    {},
    {"content_type": "text/plain"},
    {"content_type": "application/x-yaml"},
    {"content_type": "application/octet-stream"},
    {"content_type": "application/json; charset=utf-16"},
    {"content_type": "application/json", "content_encoding": "gzip"},
    {"content_type": "ü/💥", "content_encoding": "\x00"},
    {"content_type": "text/xml", "headers": {"content-type": "text/xml"}},
    {"headers": {"Content-Type": "application/yaml", "x-fuzz": 1, "x-none": None}},
    {"content_type": "application/json", "headers": {"traceparent": "00-zz-not-a-trace-01"}},
    {"content_type": "application/json", "headers": {"traceparent": "0" * 4000}},
    {"content_type": "application/json", "headers": {"x-nested": {"a": [1, 2.5, True]}}},
    {"content_type": "application/json", "headers": {"x-unicode": "\u202e\x00💥"}},
    {"content_type": "application/json", "headers": {"x-bytes": bytearray(b"\xff\xfe\x00")}},
)
"""AMQP properties that are wrong for a JSON watch event. The informer reads the body
alone, so they change nothing about what must become of the event."""
NON_UTF8_HEADER: Properties = {
    "content_type": "application/json",
    "headers": {"x-raw": RawLongString("x")},
}
"""A header whose long string is not UTF-8. The bus keeps such bytes as escapes (it once
decoded them strictly outside its error handling, and one such message ended the
informer's consumer for good)."""


@dataclass(frozen=True, slots=True)
class Sent:
    case: Case
    properties: Properties


def wire_cases(cases: Sequence[Case], seed: int, *, share: float = 0.25) -> list[Sent]:
    """``cases`` as published: about ``share`` of them with wrong AMQP properties, and
    some valid ones under an unknown routing key (which makes them invalid)."""
    rng = random.Random(f"live-{seed}")
    variants = [*WIRE_PROPERTIES, NON_UTF8_HEADER]
    out: list[Sent] = []
    for case in cases:
        properties: Properties = {"content_type": "application/json"}
        if rng.random() < share:
            properties = rng.choice(variants)
        if case.valid and rng.random() < 0.15:
            case = _unknown_routing_key(rng, case)
        out.append(Sent(case, properties))
    return out


def _unknown_routing_key(rng: random.Random, case: Case) -> Case:
    """A valid event under a routing key outside the contract: refused, as ``kind`` when
    the key names no kind, as ``type`` when its type part is not the event's."""
    kind, _, type_word = case.routing_key.partition(".")
    key, fault = rng.choice(
        [
            ("", "kind"),
            ("#", "kind"),
            ("x" * 255, "kind"),
            (f"{kind}s.{type_word}", "kind"),
            (f"{kind}.{type_word}.extra", "type"),
            (f"{kind}.*", "type"),
            (f"{kind}.{type_word}x", "type"),
        ]
    )
    return dataclasses.replace(
        case, routing_key=key, valid=False, key="", field=fault, mutation="unknown_routing_key"
    )


@dataclass
class LiveOutcome:
    outcome: Outcome
    reports: int = 0
    undecodable_reports: int = 0
    dead_letters: int = 0
    valid_dead_letters: int = 0
    exited: dict[str, int | None] = field(default_factory=dict)
    """Service → exit code, for every service that exited on its own."""
    probe_latency: float | None = None
    probe_within: float = 30.0
    wire_variants: int = 0
    unsettled: str = ""
    """What had not happened when the settle deadline passed (empty: everything did)."""

    @property
    def ok(self) -> bool:
        return (
            self.outcome.ok
            and not self.undecodable_reports
            and not self.valid_dead_letters
            and not self.exited
            and self.probe_latency is not None
            and not self.unsettled
        )

    def summary(self) -> str:
        probe = (
            f"{self.probe_latency:.2f} s (bound {self.probe_within:g} s)"
            if self.probe_latency is not None
            else f"NOT BOUND within {self.probe_within:g} s"
        )
        exited = ", ".join(f"{n} (exit {c})" for n, c in self.exited.items()) or "none"
        lines = [
            self.outcome.summary(),
            f"reports received on ksched.errors: {self.reports}"
            + (
                f" ({self.undecodable_reports} not ErrorReports)"
                if self.undecodable_reports
                else ""
            ),
            f"sent with wrong content type / headers: {self.wire_variants}",
            f"dead letters: {self.dead_letters} "
            f"(valid events among them: {self.valid_dead_letters})",
            f"service processes exited: {exited}",
            f"probe pod bound after the burst in: {probe}",
        ]
        if self.unsettled:
            lines.append(f"not settled: {self.unsettled}")
        return "\n".join(lines)


class LiveProcesses(Processes):
    """The harness's processes, with a stop that never raises and never leaves one."""

    def exited(self) -> dict[str, int | None]:
        return {n: c.returncode for n, c in self.children.items() if c.returncode is not None}

    async def stop_everything(self) -> None:
        """SIGTERM every service still running, SIGKILL what outlives STOP_TIMEOUT."""
        children = list(self.children.values())
        for child in children:
            if child.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.terminate()
        for child in children:
            try:
                async with asyncio.timeout(STOP_TIMEOUT):
                    await child.wait()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
                await child.wait()
        for reader in self._readers:
            reader.cancel()

    def tails(self, lines: int = 15) -> str:
        return "\n".join(
            f"--- {name} (last {lines} lines)\n" + "\n".join(self.log(name).splitlines()[-lines:])
            for name in self.children
        )


async def run_live(
    cases: Sequence[Case],
    *,
    seed: int = 0,
    amqp_url: str = AMQP_URL,
    redis_url: str = REDIS_URL,
    probe_within: float = 30.0,
    settle_within: float | None = None,
    workdir: Path | None = None,
    log_tails: bool = True,
) -> LiveOutcome:
    """Publish ``cases`` to the four services as processes and judge what became of them."""
    namespace = f"fuzz{uuid.uuid4().hex[:8]}"
    own_dir = workdir is None
    directory = Path(tempfile.mkdtemp(prefix="ksched-fuzz-")) if workdir is None else workdir
    directory.mkdir(parents=True, exist_ok=True)
    sent = wire_cases(cases, seed)
    settle = settle_within if settle_within is not None else 60.0 + len(sent) / 50
    processes = LiveProcesses(namespace, directory, amqp_url=amqp_url, redis_url=redis_url)
    store = RedisStore(redis_url, namespace=namespace)
    connection: aio_pika.abc.AbstractRobustConnection | None = None
    try:
        for name in SERVICES:
            # The fuzzed kinds include the native gang API's, behind its gate.
            await processes.start(name, env={"KSCHED_FEATURE_GATES": "GenericWorkload=true"})
        connection = await aio_pika.connect_robust(amqp_url)
        client = _Client(connection, namespace)
        await client.open()
        result = await _fuzz(sent, client, store, processes, directory, probe_within, settle)
        result.exited = processes.exited()
        result.outcome.crashes += len(result.exited)
        if log_tails and not result.ok:
            print(processes.tails())
        return result
    finally:
        await processes.stop_everything()
        try:
            if connection is None:
                connection = await aio_pika.connect_robust(amqp_url)
            await delete_namespace(connection, namespace)
        finally:
            if connection is not None:
                await connection.close()
            await store.flush_namespace()
            await store.close()
            if own_dir:
                shutil.rmtree(directory, ignore_errors=True)


class _Client:
    """A user of the contract: publishes watch events, collects reports and Bindings."""

    def __init__(self, connection: aio_pika.abc.AbstractRobustConnection, namespace: str) -> None:
        self.connection = connection
        self.prefix = f"{namespace}."
        self.reports: list[bytes] = []
        self.bound: dict[str, float] = {}
        self.arrived = asyncio.Event()

    async def open(self) -> None:
        self.channel = await self.connection.channel(publisher_confirms=True)
        self.events = await self._exchange("ksched.events")
        for exchange, key, on in (
            ("ksched.errors", "#", self._on_report),
            ("ksched.decisions", f"binding.{PROBE_NAMESPACE}", self._on_binding),
        ):
            queue = await self.channel.declare_queue(exclusive=True, auto_delete=True)
            await queue.bind(await self._exchange(exchange), key)
            await queue.consume(on)

    async def _exchange(self, name: str) -> aio_pika.abc.AbstractExchange:
        return await self.channel.declare_exchange(
            self.prefix + name, aio_pika.ExchangeType.TOPIC, durable=True
        )

    async def _on_report(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            self.reports.append(message.body)
            self.arrived.set()

    async def _on_binding(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            self.bound.setdefault(json.loads(message.body)["metadata"]["name"], time.monotonic())
            self.arrived.set()

    async def publish(self, body: bytes, routing_key: str, properties: Properties) -> None:
        message = aio_pika.Message(
            body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT, **properties
        )
        await self.events.publish(message, routing_key=routing_key)

    async def publish_all(self, sent: Sequence[Sent]) -> None:
        window = asyncio.Semaphore(PUBLISH_WINDOW)

        async def one(item: Sent) -> None:
            async with window:
                await self.publish(item.case.body, item.case.routing_key, item.properties)

        async with asyncio.TaskGroup() as group:
            for item in sent:
                group.create_task(one(item))

    async def dead_letters(self) -> list[tuple[str, bytes]]:
        """Everything in the dead-letter queue (taken off it), as (routing key, body)."""
        queue = await self.channel.declare_queue(self.prefix + "ksched.dead.letters", passive=True)
        out: list[tuple[str, bytes]] = []
        async with asyncio.timeout(30):
            while (message := await queue.get(no_ack=True, fail=False)) is not None:
                out.append((message.routing_key or "", message.body))
        return out

    async def ready(self, queue: str) -> int:
        """Messages waiting (not yet delivered) in the namespace's ``queue``."""
        declared = await self.channel.declare_queue(self.prefix + queue, passive=True)
        count = declared.declaration_result.message_count
        return int(count or 0)


async def _fuzz(
    sent: Sequence[Sent],
    client: _Client,
    store: RedisStore,
    processes: LiveProcesses,
    directory: Path,
    probe_within: float,
    settle_within: float,
) -> LiveOutcome:
    cases = [s.case for s in sent]
    wire_variants = sum(s.properties != {"content_type": "application/json"} for s in sent)
    await client.publish(_event(node(PROBE_NODE)), "node.added", {})
    await client.publish_all(sent)
    probe = f"probe-{uuid.uuid4().hex[:6]}"
    published = time.monotonic()
    await client.publish(_event(pod(probe, namespace=PROBE_NAMESPACE)), "pod.added", {})
    latency: float | None = None
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(probe_within):
            while probe not in client.bound:
                client.arrived.clear()
                await client.arrived.wait()
        latency = client.bound[probe] - published

    invalid = sum(not c.valid for c in cases)
    wanted = {(c.kind, c.key) for c in cases if c.valid}
    deadline = time.monotonic() + settle_within
    logged: set[tuple[str, str]] = set()
    stored: dict[str, set[str]] = {}
    unsettled = ""
    while True:
        logged = _logged(directory / "events.jsonl")
        stored = {k: set(await store.objects(k)) for k in {c.kind for c in cases if c.valid}}
        missing = {(k, key) for k, key in wanted if (k, key) not in logged}
        missing |= {(k, key) for k, key in wanted if key not in stored.get(k, set())}
        waiting = await client.ready("ksched.informer.events")
        unsettled = ", ".join(
            part
            for part in (
                f"{invalid - len(client.reports)} reports" if len(client.reports) < invalid else "",
                f"{len(missing)} valid events not in the log and the store" if missing else "",
                f"{waiting} events still queued for the informer" if waiting else "",
                "a service exited" if processes.exited() else "",
            )
            if part
        )
        if not unsettled or time.monotonic() > deadline:
            break
        await asyncio.sleep(POLL)
    if not unsettled:
        await asyncio.sleep(GRACE)  # a second report for one event would arrive now

    reports: list[ErrorReport] = []
    undecodable = 0
    for body in client.reports:
        try:
            reports.append(msgspec.json.decode(body, type=ErrorReport))
        except msgspec.DecodeError:
            undecodable += 1
    dead = await client.dead_letters()
    valid_bodies = {(c.routing_key, c.body) for c in cases if c.valid}
    outcome = judge(cases, reports, logged, stored, dead_letters=0)
    return LiveOutcome(
        outcome=outcome,
        reports=len(client.reports),
        undecodable_reports=undecodable,
        dead_letters=len(dead),
        valid_dead_letters=sum(d in valid_bodies for d in dead),
        probe_latency=latency,
        probe_within=probe_within,
        wire_variants=wire_variants,
        unsettled="" if not unsettled else f"{unsettled} after {settle_within:g} s",
    )


def _event(obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": "ADDED", "object": obj}).encode()


def _logged(path: Path) -> set[tuple[str, str]]:
    """(kind, store key) of every object the event log holds an entry for."""
    out: set[tuple[str, str]] = set()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return out
    for line in raw.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn last line: the informer is writing it
        kind, meta = entry["kind"], entry["object"]["metadata"]
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        out.add((kind, key if kind in NAMESPACED else meta["name"]))
    return out


__all__ = ["NAMESPACE", "LiveOutcome", "run_live", "wire_cases"]
