"""Which ``ksched run`` flags each service honours.

``ksched run NAME`` takes one set of flags for every service, but most of them mean
something to one or two services only: ``run scheduler --interval 5m`` once started a
scheduler that ignored the interval. :func:`check_run` refuses such a flag (bad input,
exit 2); :func:`argv_for` is what ``ksched up`` (and the test harness, and the bench)
use to give each child only the flags it honours out of one command line.

The flags every service honours (the connection, ``--namespace``, ``--metrics-port``,
``--log-format``, ``--feature-gates``, ``-v``) are not listed here.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence

from services.cli.errors import InputError
from services.common.settings import LEADER_ELECTED as ELECTED

SERVICES = ("informer", "queue", "scheduler", "binder")
"""The services ``ksched up`` always runs (the descheduler too when given a policy)."""

OWNERS: Mapping[str, tuple[str, ...]] = {
    "event_log": ("informer",),
    "config": ("queue", "scheduler", "binder", "descheduler"),
    "seed": ("scheduler",),
    "explain": ("scheduler",),
    "replica": ("scheduler",),
    "scheduled_events": ("binder",),
    "policy": ("descheduler",),
    "interval": ("descheduler",),
    "dry_run": ("descheduler",),
    "prometheus_token_file": ("descheduler",),
    "leader_elect": ELECTED,
    "leader_elect_lease_duration": ELECTED,
    "leader_elect_renew_deadline": ELECTED,
    "leader_elect_retry_period": ELECTED,
}
"""Flag (its argparse ``dest``) → the services that honour it."""

FLAGS: Mapping[str, str] = {
    "event_log": "--event-log",
    "config": "--config",
    "seed": "--seed",
    "explain": "--explain",
    "replica": "--replica",
    "scheduled_events": "--no-scheduled-events",
    "policy": "--policy",
    "interval": "--interval",
    "dry_run": "--dry-run",
    "prometheus_token_file": "--prometheus-token-file",
    "leader_elect": "--leader-elect",
    "leader_elect_lease_duration": "--leader-elect-lease-duration",
    "leader_elect_renew_deadline": "--leader-elect-renew-deadline",
    "leader_elect_retry_period": "--leader-elect-retry-period",
}
"""The flag as typed, for messages and for :func:`argv_for`."""

MAX_PORT = 65535
"""The highest ``--metrics-port``."""

_SWITCHES = frozenset({"--explain", "--no-scheduled-events", "--dry-run"})
"""The flags of :data:`FLAGS` that take no value."""
_OWNER_OF_FLAG = {FLAGS[dest]: owners for dest, owners in OWNERS.items()}


def _named(services: Sequence[str]) -> str:
    names = [f"the {s}" for s in services]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def duration(text: str | None, flag: str = "--interval") -> float | None:
    """``--interval`` or a ``--leader-elect-*`` duration (a Go duration) in seconds; None
    when not given."""
    if text is None:
        return None
    from services.descheduler.plugins.defaultevictor import go_duration

    seconds = go_duration(text)
    if seconds is None or seconds < 0:
        raise InputError(f'{flag}: "{text}" is not a duration (5m, 1h30m, 90s)')
    return seconds


def election_duration(args: argparse.Namespace, dest: str) -> float | None:
    """A ``--leader-elect-*`` duration in seconds: the flag, else its variable
    (``KSCHED_LEADER_ELECT_LEASE_DURATION``…), else None (the default)."""
    flag = "--" + dest.replace("_", "-")
    variable = "KSCHED_" + dest.upper()
    text = getattr(args, dest, None)
    if text is None and os.environ.get(variable):
        text, flag = os.environ[variable], variable
    return duration(text, flag)


def boolean(text: str) -> bool:
    """An argparse type: a bool as pflag parses one (``--leader-elect=false``)."""
    value = {"true": True, "1": True, "t": True, "false": False, "0": False, "f": False}.get(
        text.lower()
    )
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r}: true or false")
    return value


def election_argv(args: argparse.Namespace) -> list[str]:
    """The ``--leader-elect*`` flags ``ksched up`` was given, for its children."""
    argv: list[str] = []
    if getattr(args, "leader_elect", None) is not None:
        argv.append(f"--leader-elect={'true' if args.leader_elect else 'false'}")
    for dest in ("lease_duration", "renew_deadline", "retry_period"):
        value = getattr(args, f"leader_elect_{dest}", None)
        if value is not None:
            argv += [f"--leader-elect-{dest.replace('_', '-')}", str(value)]
    return argv


def leader_election_flags(p: argparse.ArgumentParser) -> None:
    """kube-scheduler's leader-election flags, for the single-writer roles."""
    roles = "informer, queue, descheduler: "
    p.add_argument(
        "--leader-elect",
        type=boolean,
        nargs="?",
        const=True,
        metavar="BOOL",
        help=roles + "start a leader election client and gain leadership before executing "
        "the main loop; a standby waits for the lease (default true; =false: no lease, "
        "one instance per role is yours to ensure)",
    )
    p.add_argument(
        "--leader-elect-lease-duration",
        metavar="DURATION",
        help=roles + "the duration that non-leader candidates will wait after observing a "
        "leadership renewal until attempting to acquire leadership (default 15s)",
    )
    p.add_argument(
        "--leader-elect-renew-deadline",
        metavar="DURATION",
        help=roles + "the interval between attempts by the acting master to renew a "
        "leadership slot before it stops leading and exits 1 (default 10s)",
    )
    p.add_argument(
        "--leader-elect-retry-period",
        metavar="DURATION",
        help=roles + "the duration the clients should wait between attempting acquisition "
        "and renewal of a leadership (default 2s)",
    )


def check_run(service: str, args: argparse.Namespace) -> None:
    """InputError naming the first flag given to ``ksched run service`` that the service
    does not honour (parsed flags are None unless given)."""
    for dest, owners in OWNERS.items():
        if service not in owners and getattr(args, dest, None) is not None:
            raise InputError(
                f"{FLAGS[dest]} is for {_named(owners)} only: the {service} does not use "
                "it, leave it out"
            )


def argv_for(service: str, argv: Sequence[str]) -> list[str]:
    """``argv`` (flags of ``ksched run``) without the flags ``service`` does not honour
    and their values; ``--flag=value`` counts as the flag."""
    kept: list[str] = []
    skip_value = False
    for word in argv:
        if skip_value:
            skip_value = False
            continue
        flag, equals, _ = word.partition("=")
        owners = _OWNER_OF_FLAG.get(flag)
        if owners is None or service in owners:
            kept.append(word)
            continue
        skip_value = not equals and flag not in _SWITCHES
    return kept


__all__ = [
    "FLAGS",
    "MAX_PORT",
    "OWNERS",
    "SERVICES",
    "argv_for",
    "check_run",
    "duration",
    "election_argv",
    "election_duration",
    "leader_election_flags",
]
