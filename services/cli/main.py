"""The ``ksched`` command."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import TYPE_CHECKING

from services.cli import whatif
from services.cli.argtypes import whole
from services.cli.errors import EXIT_CODES, InputError, explain
from services.cli.output import OBJECT_FORMATS
from services.cli.serviceflags import (
    MAX_PORT,
    check_run,
    duration,
    election_argv,
    election_duration,
    leader_election_flags,
)
from services.common import features, gctune, redact
from services.common.settings import ENV, Settings, from_env

if TYPE_CHECKING:
    from services.common.telemetry import TraceSettings


def _connection_flags(parser: argparse.ArgumentParser, *, namespace: bool = True) -> None:
    parser.add_argument("--amqp-url", help="RabbitMQ URL (env KSCHED_AMQP_URL)")
    parser.add_argument("--redis-url", help="Redis URL (env KSCHED_REDIS_URL)")
    if namespace:
        parser.add_argument("--namespace", help="prefix of exchanges, queues and keys")


def _settings(args: argparse.Namespace) -> Settings:
    # Installed by main from --feature-gates before this; a gate set there sets its field.
    gated = features.setting_overrides(features.current())
    return from_env(
        feature_gates=getattr(args, "feature_gates", None),
        amqp_url=args.amqp_url,
        redis_url=args.redis_url,
        namespace=args.namespace,
        event_log=getattr(args, "event_log", None),
        replica=getattr(args, "replica", None),
        config=getattr(args, "config", None),
        seed=getattr(args, "seed", None),
        explain=getattr(args, "explain", None),
        metrics_port=getattr(args, "metrics_port", None),  # passed only when given
        policy=getattr(args, "policy", None),
        interval=duration(getattr(args, "interval", None)),
        leader_elect=getattr(args, "leader_elect", None),
        lease_duration=election_duration(args, "leader_elect_lease_duration"),
        renew_deadline=election_duration(args, "leader_elect_renew_deadline"),
        retry_period=election_duration(args, "leader_elect_retry_period"),
        prometheus_token_file=getattr(args, "prometheus_token_file", None),
        dry_run=getattr(args, "dry_run", None),
        scheduled_events=getattr(args, "scheduled_events", None),
        pop_from_backoff=gated.get("pop_from_backoff"),
        pre_enqueue_pod_status=gated.get("pre_enqueue_pod_status"),
    )


def _prometheus_token_flag(p: argparse.ArgumentParser, who: str = "") -> None:
    p.add_argument(
        "--prometheus-token-file",
        metavar="FILE",
        help=f"{who}the bearer token for the policy's Prometheus metrics provider (the "
        "value of the prometheusAuthToken key of the Secret authToken.secretReference "
        "names; default: the service-account token if mounted, else none)",
    )


def _feature_gates(args: argparse.Namespace) -> features.FeatureGates:
    """``--feature-gates``, else ``KSCHED_FEATURE_GATES``, parsed (a bad value is bad
    input, with component-base's message)."""
    text = getattr(args, "feature_gates", None)
    source = 'for "--feature-gates" flag'
    if text is None:
        text = os.environ.get(ENV["feature_gates"], "")
        source = f"in {ENV['feature_gates']}"
    try:
        return features.parse(text)
    except features.FeatureGateError as error:
        raise InputError(f'invalid argument "{text}" {source}: {error}') from None


def _scheduled_events_flag(parser: argparse.ArgumentParser, prefix: str) -> None:
    parser.add_argument(
        "--no-scheduled-events",
        dest="scheduled_events",
        action="store_false",
        default=None,
        help=prefix + "no Scheduled Event per bound pod (default: one, as kube-scheduler)",
    )


def _settings_argv(args: argparse.Namespace) -> list[str]:
    """The flags of ``ksched run`` that ``ksched up`` was given; each child gets those it
    honours (see services.cli.up)."""
    argv: list[str] = []
    for flag in (
        "amqp_url",
        "redis_url",
        "namespace",
        "event_log",
        "config",
        "seed",
        "feature_gates",
    ):
        value = getattr(args, flag, None)
        if value is not None:
            argv += [f"--{flag.replace('_', '-')}", str(value)]
    argv += election_argv(args)
    if getattr(args, "explain", None):
        argv.append("--explain")
    if getattr(args, "scheduled_events", None) is False:
        argv.append("--no-scheduled-events")
    if getattr(args, "log_format", "text") != "text":  # the children log as `up` does
        argv += ["--log-format", args.log_format]
    return argv


def _version() -> str:
    try:
        return metadata.version("ksched")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _epilog() -> str:
    rows = "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES)
    return (
        f"exit codes:\n{rows}\n\n"
        "A failure is one line on stderr naming what failed and how to fix it; "
        "-v adds the traceback."
    )


COMMANDS_GROUP = "ksched.commands"
"""The entry point group of commands that live outside ``services`` (``bench``: the
benchmark harness, package ``bench``), loaded by name when run so that no service
imports them."""


class _Root(argparse.ArgumentParser):
    """The ``ksched`` parser: a flag no parser knows (``ksched simulate x --nodez``) is
    reported by the command's own parser, with the command's usage, not the top-level
    one (argparse leaves such flags to the top level)."""

    commands: Mapping[str, argparse.ArgumentParser]

    def parse_args(  # type: ignore[override]  # one form: ksched passes no namespace
        self, args: Sequence[str] | None = None, namespace: None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self.commands.get(getattr(parsed, "command", None) or "", self)
            command.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def parser() -> argparse.ArgumentParser:
    root = _Root(
        prog="ksched",
        description="kube-scheduler as asyncio services on RabbitMQ and Redis",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    root.add_argument(
        "-v", "--verbose", action="store_true", help="log more; on a failure, the traceback"
    )
    root.add_argument("--version", action="version", version=f"ksched {_version()}")
    # -v after the command too (ksched watch -v); SUPPRESS keeps the root's value otherwise.
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    gates_help = (
        "A set of key=value pairs that describe feature gates for alpha/experimental "
        "features, as kube-scheduler's (env KSCHED_FEATURE_GATES); e.g. "
        "SchedulerPopFromBackoffQ=false"
    )
    root.add_argument("--feature-gates", metavar="NAME=BOOL,...", help=gates_help)
    verbose.add_argument(
        "--feature-gates", default=argparse.SUPPRESS, metavar="NAME=BOOL,...", help=gates_help
    )
    sub = root.add_subparsers(dest="command", required=True, parser_class=argparse.ArgumentParser)
    root.commands = sub.choices

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, parents=[verbose])

    for name, text in (("run", "run one service"), ("up", "run every service as a process")):
        p = command(name, text)
        if name == "run":
            p.add_argument(
                "service", choices=["informer", "queue", "scheduler", "binder", "descheduler"]
            )
            p.add_argument("--replica", help="scheduler replica name")
        p.add_argument(
            "--policy",
            help="descheduler: DeschedulerPolicy file"
            + ("" if name == "run" else " (given: `up` runs the descheduler too)"),
        )
        p.add_argument(
            "--interval",
            help="descheduler: deschedulingInterval, a duration such as 5m (default: "
            + ("0, one cycle, then exit)" if name == "run" else "5m)"),
        )
        p.add_argument(
            "--dry-run",
            action="store_true",
            default=None,
            help="descheduler: log the evictions instead of publishing them",
        )
        _prometheus_token_flag(p, "descheduler: ")
        leader_election_flags(p)
        _connection_flags(p)
        _log_format_flag(p)
        p.add_argument(
            "--event-log",
            help="informer's event log: a file, or stream://NAME (env KSCHED_EVENT_LOG)",
        )
        p.add_argument("--config", help="KubeSchedulerConfiguration file")
        p.add_argument("--seed", type=int, help="tie-break seed")
        p.add_argument(
            "--explain",
            action="store_true",
            default=None,
            help="scheduler: explain every decision (annotation ksched.io/explain)",
        )
        _scheduled_events_flag(p, "binder: ")
        p.add_argument(
            "--metrics-port",
            type=whole(0, MAX_PORT),
            metavar="PORT",
            help="serve /metrics, /healthz, /livez and /readyz on PORT (0 picks a free one; "
            "run: none without it; up: the informer on PORT, the queue on PORT+1, the "
            "scheduler on PORT+2, the binder on PORT+3, the descheduler on PORT+4, and "
            "without it the defaults 10260-10264)",
        )

    p = command("publish", "publish Kubernetes YAML/JSON as watch events")
    p.add_argument("file", help="a file, or - for standard input")
    p.add_argument("--delete", action="store_true", help="publish DELETED events")
    p.add_argument(
        "--no-validate",
        dest="validate",
        action="store_false",
        help="publish without first checking each object as the informer will (exit 2 "
        "naming the first it would refuse); refusals then reach only ksched.errors",
    )
    _connection_flags(p)

    p = command("watch", "print decisions as they arrive")
    p.add_argument("--errors", action="store_true", help="also print ksched.errors")
    p.add_argument("--limit", type=whole(1), help="exit after this many messages")
    p.add_argument(
        "--explain", action="store_true", help="print the explanation a decision carries"
    )
    p.add_argument(
        "-o",
        "--output",
        choices=OBJECT_FORMATS,
        default="json",
        help="json: one object per line (default); yaml: one document per object",
    )
    _connection_flags(p)

    p = command("queue", "show the scheduling queue the queue service published")
    p.add_argument("--namespace", help="prefix of exchanges, queues and keys")
    p.add_argument("--redis-url", help="Redis URL (env KSCHED_REDIS_URL)")
    p.add_argument(
        "--limit", type=whole(0), default=10, help="pods shown per sub-queue (default 10)"
    )
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")

    p = command("waiting", "list the pods waiting at Permit, with their pending plugins")
    p.add_argument("--namespace", help="prefix of exchanges, queues and keys")
    p.add_argument("--redis-url", help="Redis URL (env KSCHED_REDIS_URL)")
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")

    p = command("leases", "show each single-writer role's leader lease and its holder")
    p.add_argument("--namespace", help="prefix of exchanges, queues and keys")
    p.add_argument("--redis-url", help="Redis URL (env KSCHED_REDIS_URL)")
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")

    whatif.add_parsers(
        command,
        log_format=_log_format_flag,
        prometheus_token=_prometheus_token_flag,
        connection=_connection_flags,
    )

    p = command("replay", "replay an event log from its newest snapshot and compare decisions")
    p.add_argument(
        "log", help="an event log: a file (see simulate --record, run informer) or stream://NAME"
    )
    p.add_argument("--config", help="KubeSchedulerConfiguration file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", choices=["json", "table"], default="table")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if any decision differs (from a snapshot: the bindings after it)",
    )
    _connection_flags(p)

    p = command("log", "copy an event log to another backend (a file log into a stream)")
    p.add_argument("action", choices=["copy"], help="copy: SOURCE's entries TARGET lacks")
    p.add_argument("source", help="a file, or stream://NAME")
    p.add_argument("target", help="stream://NAME (stream:// alone: ksched.eventlog), or a file")
    _connection_flags(p)

    command("asyncapi", "print the AsyncAPI document of the contracts")

    p = command("dead-letters", "list, replay or purge the poison messages in ksched.dead")
    p.add_argument(
        "action",
        choices=["list", "replay", "purge"],
        help="list: one line each; replay: publish each again where it was going and "
        "remove it; purge: remove them all",
    )
    p.add_argument("--routing-key", help="list/replay: only these (a topic pattern: pod.*)")
    p.add_argument("--limit", type=whole(1), help="list/replay: at most this many")
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")
    _connection_flags(p)

    p = command(
        "bench",
        "run a scheduler_perf-shaped benchmark (--mode services: under a private "
        "namespace, removed afterwards)",
    )
    p.add_argument(
        "workload",
        help="a test case of ops/bench/workloads (SchedulingBasic, ...), QueueOps: "
        "the queue core's own benchmark, or Passthrough: SchedulingBasic's pods answered "
        "by a trivial service over the same broker (the ceiling)",
    )
    p.add_argument("--nodes", type=whole(1), default=5000)
    p.add_argument(
        "--pods",
        type=whole(1),
        help="measured pods (default: upstream's, scaled to --nodes); "
        "QueueOps: pods pending in the queue (default: its own)",
    )
    p.add_argument(
        "--init-pods", type=whole(0), help="pods bound before measuring (default: as --pods)"
    )
    p.add_argument(
        "--rate",
        help="services mode: publish the measured pods open-loop at this many per second, "
        "or auto: at half the saturation rate a first run measures (default: all at once)",
    )
    _scheduled_events_flag(p, "services mode: the binder publishes ")
    p.add_argument(
        "--replicas",
        help="services mode: scheduler processes, each --replica sched-<i> (default 1)",
    )
    p.add_argument(
        "--vs-passthrough",
        action="store_true",
        help="services mode: then run the Passthrough ceiling on the same pods and report "
        "the ratio",
    )
    p.add_argument(
        "--mode",
        choices=["cycle", "embedded", "services"],
        default="embedded",
        help="cycle: the scheduling cycle alone; embedded: the pipeline in this "
        "process; services: a process per service on RabbitMQ and Redis",
    )
    _connection_flags(p, namespace=False)
    return root


def main(argv: list[str] | None = None) -> int:
    gctune.tune()
    args = parser().parse_args(argv)
    service = args.command in ("run", "up")
    from services.common import logs, telemetry

    logs.configure(
        logging.INFO if args.verbose or service else logging.WARNING,
        getattr(args, "log_format", "text"),
        service=telemetry.service_name(args.service if args.command == "run" else args.command),
        # A service logs for an operator (time, logger); a command speaks to its user.
        text="%(asctime)s %(name)s %(levelname)s %(message)s"
        if service or args.verbose
        else "ksched: %(levelname)s: %(message)s",
    )
    if not args.verbose:  # a failed connection is reported once, as main's one line
        logging.getLogger("aiormq.connection").setLevel(logging.CRITICAL)
    try:
        features.install(_feature_gates(args))  # before anything is built
        return _dispatch(args)
    except BrokenPipeError:  # the reader went away (ksched asyncapi | head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (Exception, KeyboardInterrupt) as error:
        failure = explain(
            error,
            command=_command(args),
            amqp_url=_url(args, "amqp_url"),
            redis_url=_url(args, "redis_url"),
        )
        if args.verbose or failure.internal:
            sys.stderr.write(redact.redact("".join(traceback.format_exception(error))))
        if failure.line:
            print(failure.line, file=sys.stderr)
        return failure.code


def _log_format_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="text: one line per record (default); json: one JSON object per line with "
        "time, level, logger, message, service, and trace_id, span_id, pod when known",
    )


def _trace_settings() -> TraceSettings:
    """The tracing settings of the ``OTEL_*`` variables; a bad one is bad input."""
    from services.common import telemetry

    try:
        return telemetry.TraceSettings.from_env()
    except telemetry.TelemetryError as error:
        raise InputError(str(error)) from None


def _url(args: argparse.Namespace, field: str) -> str:
    """The URL the command used: the flag, else the environment, else the default (not
    from_env: the settings themselves may be what failed)."""
    default: str = getattr(Settings(), field)
    return getattr(args, field, None) or os.environ.get(ENV[field]) or default


def _command(args: argparse.Namespace) -> str:
    """The command as the user typed it, for messages: ``run scheduler``, ``watch``."""
    return f"run {args.service}" if args.command == "run" else str(args.command)


def _dispatch(args: argparse.Namespace) -> int:
    match args.command:
        case "run":
            from services.cli import runtime

            check_run(args.service, args)  # a flag this service ignores: exit 2
            _trace_settings()  # a bad OTEL_* variable: exit 2 before connecting
            return asyncio.run(runtime.run_service(args.service, _settings(args)))
        case "up":
            from services.cli import up

            _trace_settings()  # checked once here rather than by every child
            only = up.service_argv(args)
            services = up.preflight(_settings(args), args.policy)  # before anything starts
            return up.up(_settings_argv(args), only, services)
        case "publish":
            from services.cli import runtime
            from services.cli.commands import read_input

            text, source = read_input(args.file)
            return asyncio.run(
                runtime.publish(
                    _settings(args), text, delete=args.delete, source=source, validate=args.validate
                )
            )
        case "watch":
            from services.cli import runtime

            return asyncio.run(
                runtime.watch(
                    _settings(args),
                    errors=args.errors,
                    limit=args.limit,
                    explain=args.explain,
                    output=args.output,
                )
            )
        case "queue":
            from services.cli.queueview import queue_command

            return queue_command(args)
        case "waiting":
            from services.cli.waiting import waiting_command

            return waiting_command(args)
        case "leases":
            from services.cli.leases import leases_command

            return leases_command(args)
        case command if command in whatif.COMMANDS:
            return whatif.dispatch(args, _trace_settings)
        case "replay":
            from services.cli.commands import replay_command

            return replay_command(args, _settings(args))
        case "log":
            from services.cli.eventlogs import log_copy_command

            return asyncio.run(log_copy_command(args.source, args.target, _settings(args)))
        case "dead-letters":
            from services.cli.deadletters import Selection, dead_letters_command

            selection = Selection(routing_key=args.routing_key, limit=args.limit)
            return asyncio.run(
                dead_letters_command(_settings(args), args.action, selection, args.output)
            )
        case "asyncapi":
            from contracts.asyncapi import asyncapi_document

            print(json.dumps(asyncapi_document(), indent=2))
            return 0
        case "bench":
            return _external_command("bench")(args)
    return 2


def _external_command(name: str) -> Callable[[argparse.Namespace], int]:
    """The command ``name`` of the :data:`COMMANDS_GROUP` entry points."""
    found = metadata.entry_points(group=COMMANDS_GROUP, name=name)
    if not found:
        raise InputError(
            f"no {name} command is installed in this environment (entry point group "
            f"{COMMANDS_GROUP}); from a checkout: pip install -e ."
        )
    command: Callable[[argparse.Namespace], int] = next(iter(found)).load()
    return command


if __name__ == "__main__":
    sys.exit(main())
