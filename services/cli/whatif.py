"""The what-if commands' flags and their dispatch: ``simulate``, ``capacity``,
``compare``, ``deschedule`` and ``snapshot``. Each reads a cluster file (or, for
``snapshot``, the running services) and answers in one process; their flags live here
so that main's parser stays the map of the commands."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from services.cli.argtypes import whole

if TYPE_CHECKING:
    from services.common.telemetry import TraceSettings


_CLUSTER_HELP = "multi-document YAML of Nodes, Pods, …; - for standard input"


def add_parsers(
    command: Callable[[str, str], argparse.ArgumentParser],
    *,
    log_format: Callable[[argparse.ArgumentParser], None],
    prometheus_token: Callable[[argparse.ArgumentParser], None],
    connection: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add the what-if commands to main's subparsers (``command(name, help)``)."""
    p = command("simulate", "schedule a cluster snapshot in one process")
    p.add_argument("cluster", help=_CLUSTER_HELP)
    p.add_argument("--config", help="KubeSchedulerConfiguration file")
    p.add_argument("--seed", type=int, default=0, help="tie-break seed (default 0)")
    p.add_argument(
        "-o",
        "--output",
        choices=["json", "table", "annotations"],
        default="table",
        help="table (default); json: one line per decision; annotations: the cluster's "
        "pods as YAML with kube-scheduler-simulator's result annotations",
    )
    p.add_argument("--record", help="write the event log of the run to this file")
    p.add_argument(
        "--explain",
        action="store_true",
        help="explain each decision: filter verdicts and scores per node and plugin",
    )
    p.add_argument(
        "--trace",
        action="store_true",
        help="print each attempt's spans on stderr after the run, one line per span, "
        "grouped by trace",
    )
    log_format(p)

    p = command(
        "capacity",
        "how many more copies of a pod (or whole units of a mix) the cluster can schedule",
    )
    p.add_argument("cluster", help=_CLUSTER_HELP)
    p.add_argument(
        "--pod",
        required=True,
        action="append",
        help="the Pod to copy (and the PodGroup it names); several with --ratio",
    )
    p.add_argument(
        "--ratio",
        metavar="N:M:...",
        help="with several --pod: copies of each per unit, in --pod order (3:1); "
        "counts whole units",
    )
    p.add_argument("--config", help="KubeSchedulerConfiguration file")
    p.add_argument("--seed", type=int, default=0, help="tie-break seed (default 0)")
    p.add_argument("--max-limit", type=whole(0), default=0, metavar="N", help="stop at N bound")
    p.add_argument("--exclude-nodes", metavar="A,B", help="remove these nodes and their pods")
    p.add_argument("--allow-preemption", action="store_true", help="copies may evict pods")
    p.add_argument("-o", "--output", choices=["table", "json", "yaml"], default="table")

    p = command("compare", "schedule one cluster under two configurations and compare")
    p.add_argument("cluster", help=_CLUSTER_HELP)
    p.add_argument(
        "--config",
        required=True,
        action="append",
        help="KubeSchedulerConfiguration file; give it twice (A, then B)",
    )
    p.add_argument(
        "--add",
        action="append",
        metavar="FILE",
        help="more objects to add to the cluster, e.g. the pods of the next rollout "
        "(may be given more than once; pending pods queue after the cluster's)",
    )
    p.add_argument("--seed", type=int, default=0, help="tie-break seed, both runs (default 0)")
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")
    p.add_argument("--html", metavar="REPORT.html", help="also write a self-contained report")

    p = command("deschedule", "run one descheduling cycle over a cluster snapshot")
    p.add_argument("cluster", help="multi-document YAML of Nodes, Pods, PDBs, …; - for stdin")
    p.add_argument("--policy", required=True, help="DeschedulerPolicy (descheduler/v1alpha2) file")
    p.add_argument("--config", help="KubeSchedulerConfiguration for nodeFit and --placement")
    p.add_argument("--now", help="the cycle's clock, RFC 3339 (default: now)")
    p.add_argument("-o", "--output", choices=["json", "table"], default="table")
    p.add_argument(
        "--placement",
        action="store_true",
        help="then schedule each evicted pod again (as its controller would recreate it)",
    )
    prometheus_token(p)

    p = command("snapshot", "write what the running services hold as a kubectl-style List")
    p.add_argument("-o", "--output-file", metavar="FILE", help="write here (default: stdout)")
    p.add_argument(
        "--event-log",
        help="read this event log (a file or stream://NAME) instead of the store",
    )
    connection(p)


_ENTRY = {
    "capacity": "services.cli.capacity:capacity_command",
    "compare": "services.cli.compare:compare_command",
    "deschedule": "services.cli.deschedule:deschedule_command",
    "snapshot": "services.cli.snapshot:snapshot_command",
}
"""Command → ``module:function`` taking the parsed arguments and returning the exit code."""
COMMANDS = ("simulate", *_ENTRY)


def dispatch(args: argparse.Namespace, trace_settings: Callable[[], TraceSettings]) -> int:
    """Run the what-if command ``args.command``."""
    # Like any Unix filter: a reader that stops (`| head`) ends the run. Only here: a
    # service's socket writes must get EPIPE, not the signal.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if args.command == "simulate":
        from services.cli.commands import simulate_command
        from services.cli.simulate import tracing

        with tracing(trace_settings(), sys.stderr if args.trace else None):
            return simulate_command(args)
    module, function = _ENTRY[args.command].split(":")
    command: Callable[[argparse.Namespace], int] = getattr(
        importlib.import_module(module), function
    )
    return command(args)
