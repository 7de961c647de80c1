"""``simulate`` and ``replay``: argument handling, errors and output."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from services.cli.embedded import DecisionRecord
from services.cli.manifests import ManifestError
from services.cli.replay import replay, summary
from services.cli.simulate import load_cluster, print_json, print_table, simulate
from services.common.eventlog import open_event_log
from services.framework.config import Profile


def _profiles(config: str | None) -> Sequence[Profile]:
    from services.cli.runtime import load_profiles

    return load_profiles(config)


def simulate_command(args: argparse.Namespace) -> int:
    try:
        text = Path(args.cluster).read_text()
        documents = load_cluster(text, args.cluster)
        profiles = _profiles(args.config)
    except (OSError, ManifestError, ValueError) as error:
        print(f"ksched simulate: {error}", file=sys.stderr)
        return 2
    event_log = None
    if args.record:
        Path(args.record).unlink(missing_ok=True)
        event_log = open_event_log(args.record)
    streaming = print_json if args.output == "json" else None
    records = asyncio.run(
        simulate(
            documents,
            seed=args.seed,
            profiles=profiles,
            event_log=event_log,
            on_decision=streaming,
            explain=args.explain,
        )
    )
    if args.output == "table":
        print_table(records)
    return 0


def replay_command(args: argparse.Namespace) -> int:
    try:
        profiles = _profiles(args.config)
        events = list(open_event_log(args.log).read())
    except (OSError, ValueError, msgspec.DecodeError) as error:
        print(f"ksched replay: {error}", file=sys.stderr)
        return 2
    result = asyncio.run(replay(events, seed=args.seed, profiles=profiles))
    records: list[DecisionRecord] = result.decisions
    if args.output == "json":
        for record in records:
            print_json(record)
    else:
        print_table(records)
    for line in summary(result):
        print(line, file=sys.stderr)
    return 1 if args.check and result.mismatches else 0
