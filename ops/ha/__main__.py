"""``python -m ops.ha up|down|status`` (what ``ops/ha/up``, ``ops/ha/down`` and
``ops/ha/status`` run); see :mod:`ops.ha`.

Exit codes: 0 done; 1 the deployment failed (one line says why); 2 bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from ops.ha import deployment, rabbit_cluster, redis_sentinel
from ops.ha.processes import HAError
from ops.ha.services import ROOT, Leases

UP_TIMEOUT = 300.0
"""Seconds ``up`` waits for the supervisor to report every process ready."""
DOWN_TIMEOUT = 90.0
"""Seconds ``down`` gives the supervisor to stop everything before killing what is left."""


def default_workdir() -> Path:
    return Path(
        os.environ.get("KSCHED_HA_DIR") or Path(os.environ.get("TMPDIR", "/tmp")) / "ksched-ha"
    )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ops/ha",
        description="ksched's local HA deployment: a 3-node RabbitMQ cluster, Redis with a "
        "replica and 3 Sentinels, two replicas of every service.",
    )
    parser.add_argument("command", choices=("up", "down", "status", "supervise"))
    parser.add_argument(
        "--workdir", type=Path, default=default_workdir(),
        help="where every process keeps its files (default $KSCHED_HA_DIR or $TMPDIR/ksched-ha)",
    )  # fmt: skip
    parser.add_argument(
        "--base-port", type=int, default=deployment.DEFAULT_BASE_PORT,
        help=f"the first of the {deployment.PORTS} ports it takes "
        f"(default {deployment.DEFAULT_BASE_PORT})",
    )  # fmt: skip
    parser.add_argument(
        "--no-services", action="store_true", help="up: only RabbitMQ, Redis and the Sentinels"
    )
    parser.add_argument("--lease-duration", default=Leases.duration, help="up: default 15s")
    parser.add_argument("--renew-deadline", default=Leases.renew_deadline, help="up: default 10s")
    parser.add_argument("--retry-period", default=Leases.retry_period, help="up: default 2s")
    args = parser.parse_args(argv)
    args.workdir = args.workdir.absolute()  # the supervisor runs in the repository's root
    if not 1024 <= args.base_port <= 65535 - deployment.PORTS:
        parser.error(
            f"--base-port: {args.base_port} is not between 1024 and {65535 - deployment.PORTS}"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        if args.command == "up":
            return up(args)
        if args.command == "down":
            return down(args.workdir)
        if args.command == "status":
            return status(args.workdir)
        return supervise(args)
    except HAError as error:
        print(f"ops/ha {args.command}: {error}", file=sys.stderr)
        return 1


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    return True


def up(args: argparse.Namespace) -> int:
    if why := deployment.unavailable():
        raise HAError(why)
    state = deployment.read_state(args.workdir)
    if state is not None and _alive(state.get("supervisor")):
        raise HAError(f"already up in {args.workdir} (ops/ha/status; ops/ha/down)")
    if args.workdir.exists():
        down(args.workdir, quiet=True)  # what a dead supervisor left behind
    args.workdir.mkdir(parents=True)
    command = [
        sys.executable, "-m", "ops.ha", "supervise", "--workdir", str(args.workdir),
        "--base-port", str(args.base_port), "--lease-duration", args.lease_duration,
        "--renew-deadline", args.renew_deadline, "--retry-period", args.retry_period,
    ]  # fmt: skip
    if args.no_services:
        command.append("--no-services")
    log_path = args.workdir / "supervisor.log"
    with log_path.open("ab") as out:
        supervisor = subprocess.Popen(
            command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + UP_TIMEOUT
    while True:
        state = deployment.read_state(args.workdir)
        if state is not None and state.get("ready"):
            break
        if supervisor.poll() is not None:
            said = log_path.read_text(errors="replace").splitlines()
            reasons = [ln.removeprefix("ops/ha: ") for ln in said if ln.startswith("ops/ha: ")]
            raise HAError(reasons[-1] if reasons else f"the supervisor exited (see {log_path})")
        if time.monotonic() > deadline:
            down(args.workdir, quiet=True)
            raise HAError(f"not ready within {UP_TIMEOUT:g} s (see {log_path})")
        time.sleep(0.5)
    print(f"ops/ha: up in {args.workdir} (supervisor pid {supervisor.pid}; ops/ha/down stops it)")
    print(f"export KSCHED_AMQP_URL={state['amqp_url']}")
    print(f"export KSCHED_REDIS_URL={state['redis_url']}")
    print("export KSCHED_EVENT_LOG=stream:// KSCHED_QUEUE_TYPE=auto")
    return 0


def supervise(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    leases = Leases(args.lease_duration, args.renew_deadline, args.retry_period)
    ha = deployment.Deployment(args.workdir, args.base_port, leases, not args.no_services)

    def stop(signum: int, _frame: object) -> NoReturn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        ha.start()
        logging.getLogger("ha").info("every process is ready")
        ha.supervise([False])
    except HAError as error:
        print(f"ops/ha: {error}", flush=True)
        return 1
    finally:
        ha.stop()
        logging.getLogger("ha").info("every process stopped")
    return 0


def down(workdir: Path, *, quiet: bool = False) -> int:
    state = deployment.read_state(workdir)
    if state is None and not workdir.exists():
        if not quiet:
            print(f"ops/ha: nothing in {workdir}")
        return 0
    state = state or {}
    supervisor = int(state.get("supervisor") or 0)
    if _alive(supervisor):
        os.kill(supervisor, signal.SIGTERM)
        deadline = time.monotonic() + DOWN_TIMEOUT
        while _alive(supervisor) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(supervisor):
            os.kill(supervisor, signal.SIGKILL)
    left = [pid for pid in state.get("processes", {}).values() if _alive(pid)]
    for pid in left:  # each leads a process group of its own
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    if state.get("epmd_port"):
        rabbit_cluster.kill_epmd(int(state["epmd_port"]))
    shutil.rmtree(workdir, ignore_errors=True)
    if not quiet:
        note = f"; killed {len(left)} left behind" if left else ""
        print(f"ops/ha: down, {workdir} removed{note}")
    return 0


def status(workdir: Path) -> int:
    state = deployment.read_state(workdir)
    if state is None:
        print(f"ops/ha: not up ({workdir} has no state)")
        return 1
    up_ = _alive(state.get("supervisor"))
    print(f"supervisor  pid {state.get('supervisor')}  {'running' if up_ else 'GONE'}"
          f"{'' if state.get('ready') else ' (starting)'}")  # fmt: skip
    processes: dict[str, Any] = state.get("processes", {})
    down_ = [name for name, pid in processes.items() if not _alive(pid)]
    for name, pid in processes.items():
        print(f"{name:<24} pid {pid:<8} {'down' if name in down_ else 'running'}")
    print(f"KSCHED_AMQP_URL={state.get('amqp_url')}\nKSCHED_REDIS_URL={state.get('redis_url')}")
    for line in _cluster_lines(workdir, state) + _sentinel_lines(state) + _lease_lines(state):
        print(line)
    return 0 if up_ and not down_ else 1


def _cluster_lines(workdir: Path, state: dict[str, Any]) -> list[str]:
    if not state.get("rabbitmq_nodes"):
        return []
    if not _alive(state.get("processes", {}).get("epmd")):
        return ["rabbitmq: the cluster's epmd is down"]  # rabbitmqctl would start one
    cluster = rabbit_cluster.RabbitCluster(workdir / "rabbitmq", state["base_port"])
    failures = []
    for node in cluster.nodes:
        try:
            running = cluster.running_nodes(node)
            leaders = cluster.leaders(node)
            break
        except HAError as error:
            failures.append(str(error))
    else:
        return [f"rabbitmq: {failures[-1]}"]
    lines = [f"rabbitmq running nodes: {', '.join(running)}"]
    lines += [f"leader of {queue}: {node}" for queue, node in sorted(leaders.items())]
    return lines


def _sentinel_lines(state: dict[str, Any]) -> list[str]:
    for port in state.get("sentinel_ports", []):
        try:
            host, master = redis_sentinel.command(
                port, "SENTINEL", "get-master-addr-by-name", redis_sentinel.SERVICE
            )
        except (OSError, redis_sentinel.ReplyError, ValueError):
            continue
        return [f"redis master (sentinel {port}): {host.decode()}:{master.decode()}"]
    return ["redis: no Sentinel answers"]


def _lease_lines(state: dict[str, Any]) -> list[str]:
    env = {**os.environ, "KSCHED_REDIS_URL": state.get("redis_url") or ""}
    command = [sys.executable, "-m", "services.cli.main", "leases"]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return ["ksched leases: no answer within 30 s"]
    text = (done.stdout if done.returncode == 0 else done.stderr).strip()
    return (
        [f"ksched leases: {text.splitlines()[-1] if text else done.returncode}"]
        if done.returncode
        else text.splitlines()
    )


if __name__ == "__main__":
    sys.exit(main())
