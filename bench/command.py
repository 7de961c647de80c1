"""``ksched bench WORKLOAD``: upstream scheduler_perf's workloads, timed.

The workloads are the test cases of ``ops/bench/workloads`` (bench.config). Modes:

- ``cycle``: the scheduling cycle alone in this process (bench.cycle); latency is one
  pod's PodInfo + schedule_pod + assume.
- ``embedded``: the whole pipeline in this process on the in-memory edges
  (bench.embedded); latency is from the publish of a measured pod's watch event to its
  decision.
- ``services``: each service as its own process against the real RabbitMQ and Redis
  (bench.services); latency is from publish to Binding.

A workload with churn (Unschedulable) runs in the embedded and services modes only:
while the measured pods are scheduled, bench.churn publishes its churn pods in real time,
and only the measured pods are timed. So does a workload with its own
``schedulerConfigPath`` or with PodGroups (GangScheduling: Coscheduling's Permit runs in
the binding cycle, which cycle mode leaves out).

The scheduler runs the default profile unless the test case names a
``schedulerConfigPath``, so every plugin registered there takes part.
The last line printed is one JSON object: ``{"workload", "mode", "nodes", "init_pods",
"pods", "pods_per_second", "p50_ms", "p99_ms", "max_rss_mb", "messages_per_pod",
"revision"}`` (``messages_per_pod`` is null in the cycle and embedded modes: no broker),
plus ``"rate"`` with ``--rate``, ``"passthrough_pods_per_second"`` and
``"ratio_to_passthrough"`` with ``--vs-passthrough``, plus, in services and passthrough
modes, ``"peak_rss_mb"``: each process's peak resident memory (``VmHWM``, read from
``/proc`` just before it is stopped; also printed one line per process; ``bench`` is the
client), ``"messages_published"`` and ``"deliveries_per_pod"`` (bench.services), plus
in services mode ``"replicas"``, ``"assume_conflicts"``, ``"domain_conflicts"`` and
``"violations"`` (hard constraints broken in the final state, each also on stderr),
plus ``"unschedulable"`` in cycle mode and ``"unschedulable_churn"`` (churn objects
created) and ``"churn_events"`` (churn watch events published) for a workload with
churn. ``ksched bench QueueOps [--pods N]`` prints instead what the
queue core's benchmark returns (bench.queue_ops: operations per second of the queue
core, no bus or store), whatever ``--mode``.

The CLI finds :func:`bench_command` through the ``ksched.commands`` entry point group
(pyproject.toml), so no service imports the harness.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from bench.config import workload_named
from bench.cycle import run_cycle
from bench.embedded import bench_embedded
from bench.report import summary
from bench.workload import Workload
from services.cli.errors import InputError
from services.common.settings import from_env

PASSTHROUGH = "Passthrough"
"""``ksched bench Passthrough``: SchedulingBasic's pods answered by bench.passthrough (a
Binding to one node per pod) over the same client and broker: the ceiling."""
QUEUE_OPS = "QueueOps"
"""``ksched bench QueueOps``: the queue core's own benchmark (bench.queue_ops)."""


def bench_cycle(workload: Workload, nodes: int, init: int, pods: int) -> dict[str, object]:
    run = run_cycle(workload, nodes, init, pods)
    latencies = [seconds * 1000 for seconds in run.latencies]
    counts = (workload.total_nodes(nodes), init, pods)
    report = summary(workload.name, "cycle", counts, latencies, run.elapsed)
    report["unschedulable"] = run.unschedulable
    return report


def replicas_flag(args: argparse.Namespace) -> int:
    """``--replicas``: a whole number of scheduler processes, 1 or more; services mode
    only."""
    text = getattr(args, "replicas", None)
    if text is None:
        return 1
    try:
        replicas = int(text)
    except ValueError:
        replicas = 0
    if replicas < 1:
        raise InputError(f"--replicas: {text!r}: a whole number of scheduler processes, 1 or more")
    if args.mode != "services" or args.workload == PASSTHROUGH:
        raise InputError("--replicas: only with --mode services (Passthrough has no scheduler)")
    return replicas


def queue_ops_command(pods: int | None) -> int:
    """``ksched bench QueueOps``: the queue core's operations per second, printed as
    :func:`bench.queue_ops.queue_ops`' JSON line."""
    from bench.queue_ops import queue_ops

    report = queue_ops() if pods is None else queue_ops(pods)
    print(json.dumps(report))
    return 0


def bench_command(args: argparse.Namespace) -> int:
    """Run ``args.workload`` as the flags say and print the JSON line; a workload name or
    file it cannot run raises :class:`~bench.config.WorkloadError` (exit 2)."""
    if args.workload == QUEUE_OPS:
        return queue_ops_command(args.pods)
    rate = getattr(args, "rate", None)
    if rate is not None and rate <= 0:
        raise InputError(f"--rate: {rate:g} pods per second: must be more than 0")
    replicas = replicas_flag(args)
    if args.workload == PASSTHROUGH:
        from bench.services import bench_services

        workload = workload_named("SchedulingBasic")
        init, pods = workload.counts(args.nodes, args.init_pods, args.pods)
        settings = from_env(amqp_url=args.amqp_url, redis_url=args.redis_url)
        report = asyncio.run(
            bench_services(workload, args.nodes, init, pods, settings, rate=rate, passthrough=True)
        )
        report["workload"] = PASSTHROUGH
        print(json.dumps(report))
        return 0
    workload = workload_named(args.workload)
    init, pods = workload.counts(args.nodes, args.init_pods, args.pods)
    if args.mode == "cycle" and workload.churn is not None:
        raise InputError(
            f"{workload.name} creates pods while it measures, in real time: "
            "use --mode embedded or --mode services"
        )
    if args.mode == "cycle" and (workload.gangs is not None or workload.scheduler_config):
        raise InputError(
            f"{workload.name} runs its own profile with the binding cycle (Permit): "
            "use --mode embedded or --mode services"
        )
    if rate is not None and args.mode != "services":
        raise InputError("--rate: only with --mode services (or the Passthrough workload)")
    if args.mode == "cycle":
        report = bench_cycle(workload, args.nodes, init, pods)
    elif args.mode == "embedded":
        report = asyncio.run(bench_embedded(workload, args.nodes, init, pods))
    else:
        from bench.services import bench_services

        settings = from_env(
            amqp_url=args.amqp_url,
            redis_url=args.redis_url,
            scheduled_events=getattr(args, "scheduled_events", None),
        )
        report = asyncio.run(
            bench_services(workload, args.nodes, init, pods, settings, rate=rate, replicas=replicas)
        )
        if getattr(args, "vs_passthrough", False):
            ceiling = asyncio.run(
                bench_services(
                    workload, args.nodes, init, pods, settings, rate=rate, passthrough=True
                )
            )
            ours, best = report["pods_per_second"], ceiling["pods_per_second"]
            report["passthrough_pods_per_second"] = best
            report["ratio_to_passthrough"] = (
                round(float(ours) / float(best), 3) if best else None  # type: ignore[arg-type]
            )
    print(json.dumps(report))
    return 0
