"""``simulate`` and ``replay``: argument handling and output. Their failures are raised,
and ``main`` turns them into one line and an exit code (cli.errors)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from contracts.events import LogEntry
from services.cli.embedded import DecisionRecord
from services.cli.errors import InputError
from services.cli.replay import replay, summary
from services.cli.simulate import load_cluster, print_json, print_table, simulate
from services.common.eventlog import EventLog, open_event_log
from services.common.eventlog.snapshot import Snapshot, SnapshotError, read_from_snapshot
from services.common.settings import Settings
from services.framework.config import Profile

STDIN = "-"
"""The file name that means standard input (``ksched publish -``, ``ksched simulate -``)."""


def read_input(path: str) -> tuple[str, str]:
    """The text of ``path`` (standard input for ``-``) and its name for messages."""
    if path == STDIN:
        return sys.stdin.read(), "<stdin>"
    return Path(path).read_text(), path


def _profiles(config: str | None) -> Sequence[Profile]:
    from services.cli.runtime import load_profiles

    return load_profiles(config)


def simulate_command(args: argparse.Namespace) -> int:
    text, source = read_input(args.cluster)
    documents = load_cluster(text, source)
    profiles = _profiles(args.config)
    event_log = None
    if args.record:
        Path(args.record).unlink(missing_ok=True)
        event_log = open_event_log(args.record)
    streaming = print_json if args.output == "json" else None
    annotated = args.output == "annotations"  # read from every decision's explanation
    records = asyncio.run(
        simulate(
            documents,
            seed=args.seed,
            profiles=profiles,
            event_log=event_log,
            on_decision=streaming,
            explain=args.explain or annotated,
        )
    )
    if args.output == "table":
        print_table(records)
    elif annotated:
        from services.cli.annotations import print_annotated

        print_annotated(documents, records, sys.stdout)
    return 0


async def _read_all(event_log: EventLog, name: str) -> tuple[Snapshot | None, list[LogEntry]]:
    """The log's newest snapshot (if any) and its entries after it."""
    try:
        await event_log.connect()
        return await read_from_snapshot(event_log, name)
    finally:
        await event_log.close()


def replay_command(args: argparse.Namespace, settings: Settings) -> int:
    """``ksched replay LOG``: LOG is a file (which must exist) or ``stream://NAME``."""
    from services.cli.eventlogs import open_log

    profiles = _profiles(args.config)
    try:
        event_log = open_log(args.log, settings, must_exist=True)
        snapshot, events = asyncio.run(_read_all(event_log, f"event log {args.log}"))
    except SnapshotError as error:  # the message names the snapshot's file and line
        raise InputError(str(error)) from error
    except ValueError as error:  # a corrupt entry: the message names the file and line
        raise InputError(f"{error} (not a log of simulate --record or the informer?)") from error
    result = asyncio.run(replay(events, seed=args.seed, profiles=profiles, snapshot=snapshot))
    records: list[DecisionRecord] = result.decisions
    if args.output == "json":
        for record in records:
            print_json(record)
    else:
        print_table(records)
    for line in summary(result):
        print(line, file=sys.stderr)
    return 1 if args.check and result.mismatches else 0
