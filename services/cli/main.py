"""The ``ksched`` command."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path

from services.common.settings import Settings, from_env
from services.framework.registry import ConfigError


def _connection_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--amqp-url", help="RabbitMQ URL (env KSCHED_AMQP_URL)")
    parser.add_argument("--redis-url", help="Redis URL (env KSCHED_REDIS_URL)")
    parser.add_argument("--namespace", help="prefix of exchanges, queues and keys")


def _settings(args: argparse.Namespace) -> Settings:
    return from_env(
        amqp_url=args.amqp_url,
        redis_url=args.redis_url,
        namespace=args.namespace,
        event_log=getattr(args, "event_log", None),
        replica=getattr(args, "replica", None),
        config=getattr(args, "config", None),
        seed=getattr(args, "seed", None),
        explain=getattr(args, "explain", None),
        metrics_port=getattr(args, "metrics_port", None),  # passed only when given
    )


def _settings_argv(args: argparse.Namespace) -> list[str]:
    argv: list[str] = []
    for flag in (
        "amqp_url",
        "redis_url",
        "namespace",
        "event_log",
        "config",
        "seed",
        "metrics_port",
    ):
        value = getattr(args, flag, None)
        if value is not None:
            argv += [f"--{flag.replace('_', '-')}", str(value)]
    if getattr(args, "explain", None):
        argv.append("--explain")
    return argv


WORKLOAD_NAMES = [
    "SchedulingBasic",
    "SchedulingNodeAffinity",
    "TopologySpreading",
    "SchedulingPodAntiAffinity",
    "SchedulingPodAffinity",
    "Unschedulable",
]
"""``ksched bench`` workloads (cli.workloads, imported only when the bench runs)."""
QUEUE_OPS = "QueueOps"
"""``ksched bench QueueOps``: the queue core's own benchmark (services.queue.bench)."""


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="ksched", description="kube-scheduler as asyncio services on RabbitMQ and Redis"
    )
    root.add_argument("-v", "--verbose", action="store_true")
    sub = root.add_subparsers(dest="command", required=True)

    for name, text in (("run", "run one service"), ("up", "run every service as a process")):
        p = sub.add_parser(name, help=text)
        if name == "run":
            p.add_argument("service", choices=["informer", "queue", "scheduler", "binder"])
            p.add_argument("--replica", help="scheduler replica name")
        _connection_flags(p)
        p.add_argument("--event-log", help="informer's event log path (env KSCHED_EVENT_LOG)")
        p.add_argument("--config", help="KubeSchedulerConfiguration file")
        p.add_argument("--seed", type=int, help="tie-break seed")
        p.add_argument(
            "--explain",
            action="store_true",
            default=None,
            help="scheduler: explain every decision (annotation ksched.io/explain)",
        )
        p.add_argument(
            "--metrics-port",
            type=int,
            metavar="PORT",
            help="serve Prometheus metrics (/metrics) on PORT; 0 picks a free one",
        )

    p = sub.add_parser("publish", help="publish Kubernetes YAML/JSON as watch events")
    p.add_argument("file", help="a file, or - for standard input")
    p.add_argument("--delete", action="store_true", help="publish DELETED events")
    _connection_flags(p)

    p = sub.add_parser("watch", help="print decisions as they arrive")
    p.add_argument("--errors", action="store_true", help="also print ksched.errors")
    p.add_argument("--limit", type=int, help="exit after this many messages")
    p.add_argument(
        "--explain", action="store_true", help="print the explanation a decision carries"
    )
    _connection_flags(p)

    p = sub.add_parser("queue", help="show the scheduling queue the queue service published")
    p.add_argument("--namespace", help="prefix of exchanges, queues and keys")
    p.add_argument("--redis-url", help="Redis URL (env KSCHED_REDIS_URL)")
    p.add_argument("--limit", type=int, default=10, help="pods shown per sub-queue (default 10)")
    p.add_argument("--output", choices=["table", "json"], default="table")

    p = sub.add_parser("simulate", help="schedule a cluster snapshot in one process")
    p.add_argument("cluster", help="multi-document YAML of Nodes, Pods, …")
    p.add_argument("--config", help="KubeSchedulerConfiguration file")
    p.add_argument("--seed", type=int, default=0, help="tie-break seed (default 0)")
    p.add_argument("--output", choices=["json", "table"], default="table")
    p.add_argument("--record", help="write the event log of the run to this file")
    p.add_argument(
        "--explain",
        action="store_true",
        help="explain each decision: filter verdicts and scores per node and plugin",
    )

    p = sub.add_parser("replay", help="replay a recorded event log and compare decisions")
    p.add_argument("log", help="an event log file (see simulate --record, run informer)")
    p.add_argument("--config", help="KubeSchedulerConfiguration file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", choices=["json", "table"], default="table")
    p.add_argument("--check", action="store_true", help="exit 1 if any decision differs")

    sub.add_parser("asyncapi", help="print the AsyncAPI document of the contracts")

    p = sub.add_parser("bench", help="run a scheduler_perf-shaped benchmark")
    p.add_argument("workload", choices=[*WORKLOAD_NAMES, QUEUE_OPS])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument(
        "--pods",
        type=int,
        help="measured pods (default: upstream's, scaled to --nodes); "
        "QueueOps: pods pending in the queue (default: its own)",
    )
    p.add_argument("--init-pods", type=int, help="pods bound before measuring (default: as --pods)")
    p.add_argument(
        "--mode",
        choices=["cycle", "embedded", "services"],
        default="embedded",
        help="cycle: the scheduling cycle alone; embedded: the pipeline in this "
        "process; services: a process per service on RabbitMQ and Redis",
    )
    _connection_flags(p)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose or args.command in ("run", "up") else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        return 130
    except ConfigError as error:
        print(
            f"ksched: invalid configuration {getattr(args, 'config', '')}: {error}", file=sys.stderr
        )
        return 2
    except BrokenPipeError:  # the reader went away (ksched asyncapi | head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _dispatch(args: argparse.Namespace) -> int:
    from services.cli import runtime

    match args.command:
        case "run":
            asyncio.run(runtime.run_service(args.service, _settings(args)))
            return 0
        case "up":
            return runtime.up(_settings_argv(args))
        case "publish":
            text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
            return asyncio.run(
                runtime.publish(_settings(args), text, delete=args.delete, source=args.file)
            )
        case "watch":
            return asyncio.run(
                runtime.watch(
                    _settings(args), errors=args.errors, limit=args.limit, explain=args.explain
                )
            )
        case "queue":
            from services.cli.queueview import queue_command

            return queue_command(args)
        case "simulate":
            from services.cli.commands import simulate_command

            return simulate_command(args)
        case "replay":
            from services.cli.commands import replay_command

            return replay_command(args)
        case "asyncapi":
            from contracts.asyncapi import asyncapi_document

            print(json.dumps(asyncapi_document(), indent=2))
            return 0
        case "bench":
            from services.cli.bench import bench_command

            return bench_command(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
