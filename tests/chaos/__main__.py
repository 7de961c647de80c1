"""``python -m tests.chaos`` (what ``ops/chaos`` runs): see :mod:`tests.chaos`.

    ops/chaos [--pods N] [--nodes M] [--seed S] [--short] [--faults kill,broker,redis,double]
    ops/chaos --ha [--pods N] [--seed S] [--short] [--faults leader-kill,rabbit-leader,...]

Exit codes: 0 every invariant held; 1 a violation (the table says which); 2 bad usage;
130 interrupted (every process the run started is stopped first).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
from pathlib import Path

from tests.chaos.faults import FAULTS
from tests.chaos.ha import ha_run
from tests.chaos.ha_faults import HA_FAULTS
from tests.chaos.run import Options, chaos_run

SHORT_PODS = 2000
SHORT_NODES = 20
SHORT_WINDOW = 30.0
SHORT_DEADLINE = 120.0
FULL_PODS = 10_000
FULL_NODES = 50
HA_SHORT_PODS = 300
HA_SHORT_NODES = 10
HA_SHORT_DEADLINE = 150.0


def parse(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(
        prog="ops/chaos",
        description="A SchedulingBasic workload through the four ksched services while they "
        "are killed and RabbitMQ and Redis restart; exits 1 if a pod is lost, bound twice, "
        "a node overcommitted, state left behind, or the log and the store disagree.",
    )
    parser.add_argument("--pods", type=int, help=f"default {FULL_PODS} ({SHORT_PODS} with --short)")
    parser.add_argument(
        "--nodes", type=int, help=f"default {FULL_NODES} ({SHORT_NODES} with --short)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seeds the faults (default 1)")
    parser.add_argument(
        "--short", action="store_true", help="the CI form: every fault once, under 3 minutes"
    )
    parser.add_argument(
        "--ha",
        action="store_true",
        help="on the local HA deployment (ops/ha: 3 RabbitMQ nodes, Redis with Sentinels, "
        "two replicas of every service), with the HA faults",
    )
    parser.add_argument(
        "--faults",
        help=f"comma-separated subset of {','.join(FAULTS)}, or with --ha of "
        f"{','.join(HA_FAULTS)} (default: all)",
    )
    parser.add_argument("--window", type=float, help="seconds the pods are published over")
    parser.add_argument("--deadline", type=float, help="seconds until every pod must be bound")
    parser.add_argument("--workdir", type=Path, help="keep logs here (default: a new tmp dir)")
    args = parser.parse_args(argv)
    known = HA_FAULTS if args.ha else FAULTS
    faults = frozenset(f for f in (args.faults or ",".join(known)).split(",") if f)
    if unknown := sorted(faults - set(known)):
        parser.error(f"--faults: unknown fault {', '.join(unknown)} (known: {', '.join(known)})")
    short_pods, short_nodes = (
        (HA_SHORT_PODS, HA_SHORT_NODES) if args.ha else (SHORT_PODS, SHORT_NODES)
    )
    pods = args.pods or (short_pods if args.short else FULL_PODS)
    nodes = args.nodes or (short_nodes if args.short else FULL_NODES)
    if pods < 1 or nodes < 1:
        parser.error("--pods and --nodes must be at least 1")
    window = args.window or (SHORT_WINDOW if args.short else max(SHORT_WINDOW, pods / 100))
    short_deadline = HA_SHORT_DEADLINE if args.ha else SHORT_DEADLINE
    deadline = args.deadline or (short_deadline if args.short else window + 600.0)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ksched-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    return Options(pods, nodes, args.seed, args.short, faults, window, deadline, workdir, args.ha)


def main(argv: list[str] | None = None) -> int:
    options = parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s: %(message)s",
        handlers=[
            logging.StreamHandler(sys.stderr),
            logging.FileHandler(options.workdir / "chaos.log"),
        ],
    )
    logging.getLogger("aio_pika").setLevel(logging.WARNING)
    logging.getLogger("aiormq").setLevel(logging.WARNING)
    try:
        return asyncio.run(ha_run(options) if options.ha else chaos_run(options))
    except KeyboardInterrupt:
        print("ops/chaos: interrupted; every process it started was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
