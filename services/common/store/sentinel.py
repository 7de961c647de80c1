"""Redis behind Sentinel: the URL and the failover options (no redis import here).

``redis+sentinel://[USER:PASSWORD@|:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE_NAME[/DB]``
(``rediss+sentinel://`` for TLS to the master and the Sentinels, with the TLS settings of
``rediss://``). The hosts are Sentinels (a missing port is Sentinel's 26379); redis-py's
Sentinel asks them for the master of ``SERVICE_NAME`` and follows it across failovers.
The URL's credentials are the master's (and its replicas'): ``AUTH`` on every data
connection. The Sentinels get a password only from ``FailoverOptions.sentinel_password``
(redis-py's ``sentinel_kwargs``): Sentinels usually have their own ``requirepass`` or
none, and a Sentinel without one refuses an ``AUTH``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import unquote

SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}
"""Scheme → TLS."""
SENTINEL_PORT = 26379
DEFAULT_REPLICA_WAIT = 0.1
"""Seconds a guarded write waits for a replica's ack under Sentinel (see FailoverOptions)."""


@dataclass(frozen=True, slots=True)
class SentinelURL:
    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False


@dataclass(frozen=True, slots=True)
class FailoverOptions:
    """How a Redis store rides out a failover (settings ``redis_*``)."""

    sentinel_password: str | None = None
    """``AUTH`` password of the Sentinels (``KSCHED_REDIS_SENTINEL_PASSWORD``); None:
    the Sentinels are asked without one."""
    replica_wait: float | None = None
    """Seconds a write that guards against overcommit or a second binding (``assume``,
    ``begin_bind``, ``set_leases``) waits for one replica to acknowledge it (``WAIT 1``,
    ``KSCHED_REDIS_REPLICA_WAIT``). None: :data:`DEFAULT_REPLICA_WAIT` with a Sentinel
    URL, off otherwise; 0: off. A write no replica acknowledged in time still stands
    (a WARNING says so): it is on the master only until the replica catches up."""
    failover_timeout: float = 60.0
    """Seconds a store call retries connection errors (and READONLY from a demoted
    master) against the master Sentinel names, backing off to 1 s, before it raises
    (``KSCHED_REDIS_FAILOVER_TIMEOUT``; Sentinel URLs only: a single Redis fails at
    once, as before). Sentinel's own ``down-after-milliseconds`` (30 s by default)
    plus its election must fit in it."""

    def wait_for(self, url: str) -> float:
        """The replica wait in seconds for a store on ``url`` (0: off)."""
        if self.replica_wait is not None:
            return self.replica_wait
        return DEFAULT_REPLICA_WAIT if is_sentinel_url(url) else 0.0


NO_FAILOVER_OPTIONS = FailoverOptions()
"""The defaults (a store opened without settings)."""


def is_sentinel_url(url: str) -> bool:
    return url.partition("://")[0].lower() in SCHEMES


def parse_sentinel_url(url: str) -> SentinelURL:
    """The parts of a Sentinel URL (see the module docstring). Raises ValueError with
    one line naming the part that is wrong (never the password)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise ValueError(f"scheme {scheme!r}: expected redis+sentinel:// or rediss+sentinel://")
    for mark, part in (("?", "query"), ("#", "fragment")):
        if mark in rest:
            raise ValueError(f"{part} {rest.partition(mark)[2]!r}: not supported")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    sentinels = tuple(_address(item) for item in hosts.split(","))
    segments = path.split("/") if path else []
    if not segments or not segments[0]:
        raise ValueError("service name: missing (…/SERVICE_NAME[/DB] after the Sentinels)")
    if len(segments) > 2:
        raise ValueError(f"path {'/' + path!r}: expected /SERVICE_NAME[/DB]")
    db = 0
    if len(segments) == 2:
        if not segments[1].isdigit():
            raise ValueError(f"database {segments[1]!r}: not a number >= 0")
        db = int(segments[1])
    return SentinelURL(
        sentinels,
        unquote(segments[0]),
        db,
        username,
        password,
        SCHEMES[scheme.lower()],
    )


def _address(item: str) -> tuple[str, int]:
    """``HOST[:PORT]`` or ``[IPV6][:PORT]`` of one Sentinel."""
    if not item:
        raise ValueError("sentinel address: empty (HOST:PORT[,HOST:PORT...])")
    if item.startswith("["):
        host, bracket, tail = item[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise ValueError(f"sentinel address {item!r}: expected [IPV6]:PORT")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"sentinel address {item!r}: {host!r} is no IPv6 address") from None
        port = tail[1:] if tail else None
    else:
        host, colon, port_text = item.rpartition(":")
        if not colon:
            host, port_text = item, ""
        if ":" in host:
            raise ValueError(f"sentinel address {item!r}: write an IPv6 address as [ADDR]:PORT")
        port = port_text if colon else None
    if not host:
        raise ValueError(f"sentinel address {item!r}: no host")
    if port is None:
        return host, SENTINEL_PORT
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"sentinel address {item!r}: port {port!r} is not 1-65535")
    return host, int(port)
