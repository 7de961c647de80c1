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
from collections.abc import Mapping, Sequence

from services.cli.errors import InputError

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
    "lease_ttl": ("descheduler",),
    "prometheus_token_file": ("descheduler",),
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
    "lease_ttl": "--lease-ttl",
    "prometheus_token_file": "--prometheus-token-file",
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
    """``--interval`` or ``--lease-ttl`` (a Go duration) in seconds; None when not given."""
    if text is None:
        return None
    from services.descheduler.plugins.defaultevictor import go_duration

    seconds = go_duration(text)
    if seconds is None or seconds < 0:
        raise InputError(f'{flag}: "{text}" is not a duration (5m, 1h30m, 90s)')
    return seconds


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


__all__ = ["FLAGS", "MAX_PORT", "OWNERS", "SERVICES", "argv_for", "check_run", "duration"]
