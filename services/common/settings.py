"""Typed settings, loaded once at the edge of a process and passed down immutable.

Nothing below the CLI reads environment variables: ``from_env`` is called by the CLI,
which merges flags over it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import msgspec

from services.common.tls import TLSFiles


class Settings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    """RabbitMQ URL (``KSCHED_AMQP_URL``); ``memory://`` runs on the in-process bus."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    """Redis URL (``KSCHED_REDIS_URL``); ``memory://`` uses the in-process store."""
    tls_ca: str | None = None
    """PEM file of the CA(s) that sign the broker's and Redis's server certificates
    (``KSCHED_TLS_CA``). Used by ``amqps://`` and ``rediss://`` URLs only; None: the
    system's trust store. The server's host name is always verified."""
    tls_cert: str | None = None
    """PEM file of this process's client certificate (``KSCHED_TLS_CERT``), for servers
    that require mutual TLS (RabbitMQ ``fail_if_no_peer_cert``, Redis ``tls-auth-clients``).
    May hold the private key too. None: no client certificate."""
    tls_key: str | None = None
    """PEM file of the client certificate's private key (``KSCHED_TLS_KEY``) when it is
    not in ``tls_cert``. Keep it 0600: ksched reads it, never logs or copies it."""
    event_log: str = "var/ksched-events.jsonl"
    """The informer's event log (``KSCHED_EVENT_LOG``): a file path, or ``memory://``.
    Only the informer opens it."""
    namespace: str = ""
    """Prefix of every exchange, queue and Redis key (``KSCHED_NAMESPACE``), so several
    ksched installations (or test runs) can share one broker and one Redis. Empty:
    the names of contracts.topology as they are, Redis keys under ``ksched:``."""
    replica: str = ""
    """This scheduler replica's name (its private snapshot feed); default: host-pid."""
    config: str | None = None
    """KubeSchedulerConfiguration file for the scheduler and queue (``--config``)."""
    seed: int | None = None
    """Seed for tie-breaking among equal-score nodes; None: random."""
    assume_ttl: float = 30.0
    """Seconds a scheduler's reservation lives before a binder claims it."""
    max_in_flight: int = 512
    """Pods the queue lets be in flight across all scheduler replicas (credit)."""
    dispatch_batch: int = 128
    """Most pods the queue puts in one ScheduleBatch message."""
    metrics_port: int | None = None
    """Port of the queue's Prometheus endpoint (``/metrics``: ``scheduler_pending_pods``,
    ``scheduler_queue_incoming_pods_total``); 0 picks a free port. None (the default):
    no endpoint, the metrics are only kept in the process."""
    explain: bool = False
    """Scheduler: attach an explanation to every decision (``--explain``); off, only
    pods annotated ``ksched.io/explain: "true"`` get one (it costs a pass over the
    nodes and a large annotation per decision)."""

    def __post_init__(self) -> None:
        for name, path in (
            ("tls_ca", self.tls_ca),
            ("tls_cert", self.tls_cert),
            ("tls_key", self.tls_key),
        ):
            if path is not None and not os.path.isfile(path):
                raise ValueError(f"{name} ({ENV[name]}): no such file: {path}")
        if self.tls_key is not None and self.tls_cert is None:
            raise ValueError(
                f"tls_key ({ENV['tls_key']}) is set but tls_cert ({ENV['tls_cert']}) is not"
            )

    @property
    def store_namespace(self) -> str:
        return self.namespace or "ksched"

    @property
    def tls(self) -> TLSFiles:
        """The TLS files both edges use for ``amqps://`` and ``rediss://``."""
        return TLSFiles(ca=self.tls_ca, cert=self.tls_cert, key=self.tls_key)


ENV = {
    "amqp_url": "KSCHED_AMQP_URL",
    "redis_url": "KSCHED_REDIS_URL",
    "event_log": "KSCHED_EVENT_LOG",
    "namespace": "KSCHED_NAMESPACE",
    "tls_ca": "KSCHED_TLS_CA",
    "tls_cert": "KSCHED_TLS_CERT",
    "tls_key": "KSCHED_TLS_KEY",
}


def from_env(environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Settings from ``KSCHED_*`` variables, then ``overrides`` (flags) where not None."""
    environ = os.environ if environ is None else environ
    values: dict[str, object] = {
        field: environ[var] for field, var in ENV.items() if environ.get(var)
    }
    values.update({k: v for k, v in overrides.items() if v is not None})
    return msgspec.convert(values, Settings)
