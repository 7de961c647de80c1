"""TLS for the two edges: the files from settings, turned into what each client takes.

One set of files serves both ``amqps://`` (RabbitMQ) and ``rediss://`` (Redis): a
service has one identity, and both servers usually trust the same internal CA. An edge
whose URL is not a TLS one ignores them. Certificates are always verified, host name
included; there is deliberately no switch to turn verification off.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TLSFiles:
    """PEM files for a TLS client: ``ca`` (trust), ``cert`` and ``key`` (client identity,
    for mutual TLS). None everywhere: the system trust store and no client certificate."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None


NO_TLS_FILES = TLSFiles()


def client_context(files: TLSFiles) -> ssl.SSLContext:
    """A verifying client context (TLS 1.2 or later) for ``files``."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=files.ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if files.cert is not None:
        context.load_cert_chain(files.cert, files.key)
    return context


def is_tls_url(url: str) -> bool:
    """Whether ``url`` asks for TLS: ``amqps://`` or ``rediss://``."""
    return url.partition("://")[0].lower() in ("amqps", "rediss")


def redis_ssl_options(files: TLSFiles) -> dict[str, object]:
    """redis-py's ``ssl_*`` connection options for ``files`` (for ``rediss://`` only)."""
    return {
        "ssl_ca_certs": files.ca,
        "ssl_certfile": files.cert,
        "ssl_keyfile": files.key,
        "ssl_cert_reqs": "required",
        "ssl_check_hostname": True,
        "ssl_min_version": ssl.TLSVersion.TLSv1_2,
    }
