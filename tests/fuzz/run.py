"""Drive fuzzed watch events through the informer and check what became of each.

``python -m tests.fuzz.run --count N [--seed S]`` (what ``ops/fuzz`` runs) feeds N cases
from :func:`tests.fuzz.events.generate` to an embedded InformerService (MemoryBus,
MemoryStore, MemoryEventLog), in the broker's batch sizes, and prints: events tried,
rejected, valid recorded, crashes, lost valid events. It exits 1 on any crash, lost valid
event or report that does not match its event. With ``--live`` the same cases go to the
four services as processes on RabbitMQ and Redis (:mod:`tests.fuzz.live`), which adds
the reports received, the dead letters, the processes that exited and a probe pod's
latency to the summary.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from contracts import topology
from contracts.errors import ErrorReport
from services.common import features
from services.common.bus import Delivery, Message
from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog.memory import MemoryEventLog
from services.common.store.memory import MemoryStore
from services.informer.service import InformerService
from services.informer.validate import object_key
from tests.fuzz.events import Case, generate

ERRORS = topology.QueueSpec(
    "fuzz.errors", (topology.QueueBinding(topology.ERRORS.name, "#"),), dead_letter=False
)
DEAD = topology.QueueSpec(
    "fuzz.dead", (topology.QueueBinding(topology.DEAD.name, ""),), dead_letter=False
)
INTERNAL = "could not be validated"


@dataclass
class Outcome:
    tried: int = 0
    rejected: int = 0
    valid: int = 0
    recorded: int = 0
    crashes: int = 0
    lost: list[Case] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    by_mutation: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not (self.crashes or self.lost or self.mismatched)

    def summary(self) -> str:
        return (
            f"events tried: {self.tried}\n"
            f"rejected (one report each): {self.rejected}\n"
            f"valid recorded: {self.recorded} of {self.valid}\n"
            f"crashes: {self.crashes}\n"
            f"lost valid events: {len(self.lost)}\n"
            f"reports not matching their event: {len(self.mismatched)}"
        )


async def run_embedded(cases: Sequence[Case], *, chunk: int = 256) -> Outcome:
    """Publish ``cases`` to an informer on the in-memory backends and check each."""
    bus, store, event_log = MemoryBus(), MemoryStore(), MemoryEventLog()
    reports: list[ErrorReport] = []
    dead: list[Delivery] = []

    async def collect(deliveries: Sequence[Delivery]) -> None:
        reports.extend(msgspec.json.decode(d.body, type=ErrorReport) for d in deliveries)

    async def collect_dead(deliveries: Sequence[Delivery]) -> None:
        dead.extend(deliveries)

    informer = InformerService(bus, store, event_log, FakeClock())
    await informer.start()
    await bus.consume_raw(ERRORS, collect)
    await bus.consume_raw(DEAD, collect_dead)
    try:
        for start in range(0, len(cases), chunk):
            part = cases[start : start + chunk]
            await bus.publish([Message(topology.EVENTS.name, c.routing_key, c.body) for c in part])
            await bus.wait_idle()
        logged = {
            (
                str(e.__struct_config__.tag),
                object_key(str(e.__struct_config__.tag), e.object.metadata),
            )
            async for e in event_log.read(after=0)
        }
        stored = {kind: set(await store.objects(kind)) for kind in {c.kind for c in cases}}
    finally:
        await informer.stop()
        await bus.close()
    return judge(cases, reports, logged, stored, len(dead))


def judge(
    cases: Sequence[Case],
    reports: Sequence[ErrorReport],
    logged: set[tuple[str, str]],
    stored: dict[str, set[str]],
    dead_letters: int,
) -> Outcome:
    """What became of each case, from the reports, the log and the store."""
    out = Outcome(tried=len(cases), crashes=dead_letters)
    out.crashes += sum(INTERNAL in r.reason for r in reports)
    by_name: dict[str, list[ErrorReport]] = {}
    for report in reports:
        by_name.setdefault(report.name or "", []).append(report)
    invalid = [c for c in cases if not c.valid]
    out.rejected = len(reports)
    if len(reports) != len(invalid):
        out.mismatched.append(f"{len(invalid)} invalid events but {len(reports)} reports")
    for case in cases:
        out.by_mutation[case.mutation] += 1
        if case.valid:
            out.valid += 1
            if (case.kind, case.key) in logged and case.key in stored.get(case.kind, set()):
                out.recorded += 1
            else:
                out.lost.append(case)
            continue
        if case.name is None:
            continue
        found = by_name.get(case.name, [])
        if not any(r.field.startswith(case.field) for r in found):
            seen = [(r.field, r.reason[:120]) for r in found]
            out.mismatched.append(
                f"{case.mutation} {case.kind} {case.name[:40]!r}: expected a report on "
                f"{case.field!r}, got {seen}"
            )
    return out


def cases(count: int, seed: int, invalid_share: float = 0.9) -> list[Case]:
    rng = random.Random(seed)
    return [generate(rng, i, invalid_share=invalid_share) for i in range(count)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ops/fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="events to try (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--invalid-share", type=float, default=0.9, help="share of malformed events (0.9)"
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="against the four services as processes on RabbitMQ and Redis, under a "
        "throwaway namespace (removed afterwards)",
    )
    parser.add_argument("--amqp-url", help="--live: RabbitMQ (default: KSCHED_TEST_AMQP_URL)")
    parser.add_argument("--redis-url", help="--live: Redis (default: KSCHED_TEST_REDIS_URL)")
    parser.add_argument(
        "--probe-within",
        type=float,
        default=30.0,
        help="--live: seconds a pod published after the burst has to be bound (30)",
    )
    parser.add_argument(
        "--workdir", type=Path, help="--live: keep the event log here (default: a tmp dir)"
    )
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    started = time.monotonic()
    batch = cases(args.count, args.seed, args.invalid_share)
    if args.live:
        return _live(args, batch, started)
    # The fuzzed kinds include the native gang API's, behind its gate (the live run
    # turns it on in the services' environment).
    features.install(features.parse("GenericWorkload=true"))
    outcome = asyncio.run(run_embedded(batch))
    print(outcome.summary())
    print(f"elapsed: {time.monotonic() - started:.1f} s (seed {args.seed})")
    for line in outcome.mismatched[:20]:
        print(f"  mismatch: {line}", file=sys.stderr)
    for case in outcome.lost[:20]:
        print(f"  lost: {case.mutation} {case.kind} {case.key}", file=sys.stderr)
    return 0 if outcome.ok else 1


def _live(args: argparse.Namespace, batch: list[Case], started: float) -> int:
    from tests.fuzz.live import run_live  # aio-pika and Redis only when asked for
    from tests.integration.harness import AMQP_URL, REDIS_URL

    async def live() -> int:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        result = await run_live(
            batch,
            seed=args.seed,
            amqp_url=args.amqp_url or AMQP_URL,
            redis_url=args.redis_url or REDIS_URL,
            probe_within=args.probe_within,
            workdir=args.workdir,
        )
        print(result.summary())
        print(f"elapsed: {time.monotonic() - started:.1f} s (seed {args.seed}, live)")
        for line in result.outcome.mismatched[:20]:
            print(f"  mismatch: {line}", file=sys.stderr)
        for case in result.outcome.lost[:20]:
            print(f"  lost: {case.mutation} {case.kind} {case.key}", file=sys.stderr)
        return 0 if result.ok else 1

    try:
        return asyncio.run(live())
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("ops/fuzz: interrupted; every process it started was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
