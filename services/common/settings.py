"""Typed settings, loaded once at the edge of a process and passed down immutable:
one group per service (each service's constructor takes its own), the connection
settings every process shares at the top.

Nothing below the CLI reads environment variables: ``from_env`` is called by the CLI,
which merges flags over it.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Literal

import msgspec

from services.common.brokers import broker_urls
from services.common.store.sentinel import FailoverOptions, is_sentinel_url, parse_sentinel_url
from services.common.tls import TLSFiles

_MAX_AGE = re.compile(r"[1-9][0-9]*[YMDhms]")


class InformerSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """What ``ksched run informer`` needs besides the connection."""

    event_log: str = "memory://"
    """The event log (``KSCHED_EVENT_LOG``, ``--event-log``): a file path,
    ``memory://``, or ``stream://NAME``, a RabbitMQ stream on the ``amqp_url`` brokers
    (``stream://`` alone: ``ksched.eventlog``; the production backend, replicated
    across a cluster). Only the informer writes it: the log is its single writer's.
    :func:`from_env` defaults it to :func:`default_event_log`, an absolute path in the
    user's data directory; settings built without it keep the log in memory."""
    stream_max_age: str = ""
    """``KSCHED_STREAM_MAX_AGE``: a stream log's retention by age (``x-max-age``:
    a number and Y, M, D, h, m or s, e.g. ``7D``); empty (the default): kept for ever.
    Retention drops whole segments; write snapshots more often than it drops them."""
    stream_max_length_bytes: int = 0
    """``KSCHED_STREAM_MAX_LENGTH_BYTES``: a stream log's retention by size
    (``x-max-length-bytes``); 0 (the default): no limit."""
    snapshot_every: int = 50_000
    """Log entries (``KSCHED_SNAPSHOT_EVERY``) after which the informer writes a snapshot
    of the projection beside the log; 0: never by count. Default 50,000: a cold rebuild
    then reads at most the live objects plus 50,000 entries (~4 s at the ~12,000
    entries/s a rebuild into Redis makes), while a snapshot, whose cost follows the live
    objects, is written every few minutes at 100 pods/s of churn (~300 entries/s)."""
    snapshot_interval: float = 600.0
    """Seconds (``KSCHED_SNAPSHOT_INTERVAL``) after which a snapshot is written anyway if
    the log grew since the last one, so a slow cluster's tail stays short too; 0: never
    by time. Default 10 minutes."""
    log_retention: int = 100_000
    """Log entries (``KSCHED_LOG_RETENTION``) kept before the newest snapshot; older ones
    are dropped once a snapshot covers them (a stream log retains by its own x-max-age
    and x-max-length-bytes instead). Default 100,000: two snapshot periods, so a recent
    run can still be replayed entry by entry and a consumer or a store replica a little
    behind the snapshot catches up from entries, not from a reload."""

    batch_wait: float = 0.025
    """Seconds (``KSCHED_INFORMER_BATCH_WAIT``) a watch event may wait in the informer for
    more to join its batch, while events arrive closer together than that (a lone event
    after a quiet spell is taken at once; bus.linger). Each batch is one log append, one
    Redis write and one publish for every service after it, so at a steady moderate rate
    this trades up to 25 ms of one pod's latency for a much smaller CPU cost per pod
    (README, "CPU per pod"); 0: every event batch is taken as soon as it arrives."""

    def __post_init__(self) -> None:
        if not 0 <= self.batch_wait <= 1:
            raise ValueError(
                f"batch_wait ({ENV['batch_wait']}): {self.batch_wait} is not a number of "
                "seconds from 0 to 1"
            )
        for name in ("snapshot_every", "snapshot_interval", "log_retention"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} ({ENV[name]}) must not be negative")
        if self.stream_max_age and not _MAX_AGE.fullmatch(self.stream_max_age):
            raise ValueError(
                f"stream_max_age ({ENV['stream_max_age']}): {self.stream_max_age!r} is not "
                "a number followed by one of Y, M, D, h, m, s (e.g. 7D)"
            )
        if self.stream_max_length_bytes < 0:
            raise ValueError(
                f"stream_max_length_bytes ({ENV['stream_max_length_bytes']}): "
                f"{self.stream_max_length_bytes} is negative"
            )


class QueueSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """What ``ksched run queue`` needs besides the connection and the profiles."""

    max_in_flight: int = 512
    """Pods (count) the queue lets be in flight across all scheduler replicas at once:
    the credit that keeps a high-priority pod from waiting behind a backlog already
    handed out. Default 512: enough to keep two replicas' batches full."""
    dispatch_batch: int = 128
    """Most pods (count) in one ScheduleBatch message: batches amortise the hop; 128
    keeps one batch's latency small."""
    initial_backoff: float = 1.0
    """Seconds of a pod's first backoff (upstream's ``podInitialBackoffSeconds``,
    default 1; ``ksched run`` takes it from the KubeSchedulerConfiguration)."""
    max_backoff: float = 10.0
    """Seconds; the backoff doubles up to this (``podMaxBackoffSeconds``, default 10)."""
    max_in_unschedulable: float = 300.0
    """Seconds a pod may stay in unschedulablePods before the periodic flush moves it
    back (upstream's ``podMaxInUnschedulablePodsDuration``, 5 minutes)."""
    pop_from_backoff: bool = True
    """Pop from backoffQ when activeQ is empty (upstream's SchedulerPopFromBackoffQ
    feature gate, on by default)."""
    pre_enqueue_pod_status: bool = True
    """Publish why PreEnqueue holds a pod back: its PodScheduled condition
    (``NotReadyForScheduling``, ``status.<namespace>``) and an Event, once the rejection
    lasted 5 s, never the same message twice (upstream's SchedulerPreEnqueuePodStatus
    feature gate, KEP-5501, beta and on by default). Off: nothing is published."""


class SchedulerSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """What ``ksched run scheduler`` needs besides the connection and the profiles."""

    replica: str = ""
    """This replica's name (its private snapshot feed, its reservations); empty: the
    host name and pid, unique per process."""
    seed: int | None = None
    """Seed for tie-breaking among equal-score nodes; None (default): random, as
    upstream's reservoir sampling. Set it for reproducible runs."""
    assume_ttl: float = 30.0
    """Seconds a reservation lives in the store (and in the Cache) until a binder claims
    it; default 30, upstream's assumed-pod expiry is of the same order."""
    max_conflict_retries: int = 3
    """Times (count) a pod whose store reservation lost a race to another replica is
    rescheduled in the same batch before it goes back to the queue."""
    catch_up_timeout: float = 30.0
    """Seconds a request may wait for the Cache to apply the log position it was
    dispatched at; after that the requests still waiting fail with ``error``."""
    explain: bool = False
    """Attach an explanation to every decision (``--explain``); off (default), only pods
    annotated ``ksched.io/explain: "true"`` get one (it costs a pass over the nodes and
    a large annotation per decision)."""


class BinderSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """What ``ksched run binder`` needs besides the connection and the profiles."""

    scheduled_events: bool = True
    """Publish a ``Scheduled`` Event (``event.<namespace>`` on ``ksched.decisions``) for
    each pod bound, as kube-scheduler records one: the default, upstream's behaviour.
    False (``--no-scheduled-events``): the Binding alone says where the pod went; one
    message per pod less to encode, publish and route (FailedScheduling and the other
    Events are published as before)."""


class RestartSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """The backoff of ``ksched up`` restarting a service and of a service retrying the
    broker and Redis at start-up, shaped like the kubelet's CrashLoopBackOff."""

    initial: float = 0.5
    """Seconds before the first retry."""
    cap: float = 30.0
    """Seconds; the delay doubles up to this."""
    reset_after: float = 60.0
    """Seconds of running without failing after which the next failure waits
    ``initial`` again (the kubelet resets after twice its cap)."""

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.cap:
            raise ValueError(f"backoff: need 0 < initial ({self.initial}) <= cap ({self.cap})")


LEADER_ELECTED = ("informer", "queue", "descheduler")
"""The single-writer roles, which elect a leader (:class:`LeaderElectionSettings`), each
with a lease of its own named after it; the scheduler and the binder run active-active."""


class LeaderElectionSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Leader election of the single-writer roles (the informer, the queue, the
    descheduler; services.common.leaderelection), with kube-scheduler's flags and
    defaults (component-base's ``LeaderElectionConfiguration``). The scheduler and the
    binder run active-active and elect no leader."""

    leader_elect: bool = True
    """Acquire the role's lease before starting, and stand by while another instance
    holds it (``--leader-elect``, default true as kube-scheduler's). False: start at
    once with no lease and unfenced writes, as before leases existed; then nothing
    stops a second instance from writing too (one per role is yours to ensure)."""
    lease_duration: float = 15.0
    """Seconds after the holder's last renewal before a standby may take the lease
    over (``--leader-elect-lease-duration``, default 15 s): at most this long, plus a
    retry period or two, passes between a leader dying and another taking over. The
    descheduler's upstream default is 137 s."""
    renew_deadline: float = 10.0
    """Seconds the leader keeps trying to renew before it stops leading and the process
    exits non-zero (``--leader-elect-renew-deadline``, default 10 s; less than the
    lease duration, so it stops before a standby may take over)."""
    retry_period: float = 2.0
    """Seconds between tries to acquire or renew (``--leader-elect-retry-period``,
    default 2 s; a standby's tries are jittered up to 2.2 times this)."""
    identity: str = ""
    """This instance's holder identity (``KSCHED_LEADER_ELECT_IDENTITY``); empty: the
    host name and a random suffix, unique per process (upstream's ``hostname_uuid``).
    ``ksched up`` gives its children one of its own, so a child it restarts takes its
    lease back at once. Two live instances must never share one."""

    def __post_init__(self) -> None:
        # client-go's NewLeaderElector checks.
        if not 0 < self.retry_period:
            raise ValueError("--leader-elect-retry-period must be greater than zero")
        if not self.renew_deadline > 1.2 * self.retry_period:
            raise ValueError(
                "--leader-elect-renew-deadline must be greater than "
                "--leader-elect-retry-period times 1.2"
            )
        if not self.lease_duration > self.renew_deadline:
            raise ValueError(
                "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline"
            )


class DeschedulerSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    policy: str | None = None
    """The DeschedulerPolicy file (``--policy``), required by the descheduler."""
    interval: float = 0.0
    """``deschedulingInterval`` in seconds (``--interval``, a Go duration such as
    ``5m``); 0: run one cycle, then exit (upstream's default)."""
    dry_run: bool = False
    """Log the evictions instead of recording and publishing them (``--dry-run``)."""
    prometheus_token_file: str | None = None
    """The bearer token of the policy's Prometheus metrics provider
    (``--prometheus-token-file``: the value of the Secret its authToken names); None:
    the service-account token if mounted, else none."""


class Settings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """A process's settings: the connection every service shares at the top, then one
    group per service. Built once by :func:`from_env` at the CLI's edge."""

    amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    """RabbitMQ URL (``KSCHED_AMQP_URL``); ``memory://`` runs on the in-process bus. May
    list the nodes of one cluster, comma-separated (services.common.brokers): clients
    connect to the first that answers and fail over to the next when theirs dies."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    """Redis URL (``KSCHED_REDIS_URL``); ``memory://`` uses the in-process store;
    ``redis+sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE_NAME[/DB]`` (or
    ``rediss+sentinel://``) finds the master through Sentinel and follows its failovers
    (:mod:`services.common.store.sentinel`)."""
    redis_sentinel_password: str | None = None
    """The Sentinels' ``AUTH`` password (``KSCHED_REDIS_SENTINEL_PASSWORD``); the URL's
    password is the master's. None: Sentinels without ``requirepass``."""
    redis_replica_wait: float | None = None
    """Seconds a reservation, a binder's claim or a queue's lease write waits for one
    replica to acknowledge it (``WAIT 1``; ``KSCHED_REDIS_REPLICA_WAIT``). None: 0.1
    with a Sentinel URL, off otherwise; 0: off."""
    redis_failover_timeout: float = 60.0
    """Seconds a store call keeps retrying while Sentinel fails the master over
    (``KSCHED_REDIS_FAILOVER_TIMEOUT``; Sentinel URLs only)."""
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
    queue_type: Literal["auto", "classic", "quorum"] = "auto"
    """``KSCHED_QUEUE_TYPE``: the type of every durable queue. ``quorum`` replicates
    them across a cluster's nodes (Raft); ``classic`` does not; ``auto`` (the default)
    is quorum when ``amqp_url`` lists more than one broker, else classic. Exclusive and
    temporary queues (a scheduler's snapshot feed) stay classic whatever this says. A
    queue's type cannot change in place: drain and delete the queues to switch."""
    namespace: str = ""
    """Prefix of every exchange, queue and Redis key (``KSCHED_NAMESPACE``), so several
    ksched installations (or test runs) can share one broker and one Redis. Empty:
    the names of contracts.topology as they are, Redis keys under ``ksched:``."""
    config: str | None = None
    """KubeSchedulerConfiguration file the scheduler, the queue and the binder read (``--config``);
    None: upstream's default profile."""
    feature_gates: str = ""
    """``--feature-gates`` (``KSCHED_FEATURE_GATES``): ``NAME=true,NAME=false`` as
    kube-scheduler takes it (:mod:`services.common.features`); the CLI parses and
    installs it before anything is built. Empty: every gate at its default."""
    metrics_port: int | None = None
    """Port of this process's Prometheus endpoint (``/metrics``; ``--metrics-port``):
    the queue's and the binder's metrics; 0 picks a free port. None (the default): no
    endpoint, the metrics are only kept in the process."""
    informer: InformerSettings = InformerSettings()
    queue: QueueSettings = QueueSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    binder: BinderSettings = BinderSettings()
    restart: RestartSettings = RestartSettings()
    descheduler: DeschedulerSettings = DeschedulerSettings()
    leader_election: LeaderElectionSettings = LeaderElectionSettings()

    def __post_init__(self) -> None:
        if not self.amqp_url.startswith("memory://"):
            broker_urls(self.amqp_url)  # a bad list is one line naming the setting
        if is_sentinel_url(self.redis_url):
            try:
                parse_sentinel_url(self.redis_url)
            except ValueError as error:
                raise ValueError(f"redis_url ({ENV['redis_url']}): {error}") from None
        for name in ("redis_replica_wait", "redis_failover_timeout"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < math.inf:
                raise ValueError(f"{name} ({ENV[name]}): {value} is not a number of seconds >= 0")
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
    def quorum_queues(self) -> bool:
        """Whether durable queues are declared quorum (see :attr:`queue_type`)."""
        if self.queue_type == "auto":
            return not self.amqp_url.startswith("memory://") and len(broker_urls(self.amqp_url)) > 1
        return self.queue_type == "quorum"

    @property
    def store_namespace(self) -> str:
        return self.namespace or "ksched"

    @property
    def failover(self) -> FailoverOptions:
        """How the Redis store rides out a failover (the ``redis_*`` settings)."""
        return FailoverOptions(
            sentinel_password=self.redis_sentinel_password,
            replica_wait=self.redis_replica_wait,
            failover_timeout=self.redis_failover_timeout,
        )

    @property
    def tls(self) -> TLSFiles:
        """The TLS files both edges use for ``amqps://`` and ``rediss://``."""
        return TLSFiles(ca=self.tls_ca, cert=self.tls_cert, key=self.tls_key)


ENV = {
    "amqp_url": "KSCHED_AMQP_URL",
    "redis_url": "KSCHED_REDIS_URL",
    "redis_sentinel_password": "KSCHED_REDIS_SENTINEL_PASSWORD",
    "redis_replica_wait": "KSCHED_REDIS_REPLICA_WAIT",
    "redis_failover_timeout": "KSCHED_REDIS_FAILOVER_TIMEOUT",
    "event_log": "KSCHED_EVENT_LOG",
    "snapshot_every": "KSCHED_SNAPSHOT_EVERY",
    "snapshot_interval": "KSCHED_SNAPSHOT_INTERVAL",
    "log_retention": "KSCHED_LOG_RETENTION",
    "batch_wait": "KSCHED_INFORMER_BATCH_WAIT",
    "namespace": "KSCHED_NAMESPACE",
    "tls_ca": "KSCHED_TLS_CA",
    "tls_cert": "KSCHED_TLS_CERT",
    "tls_key": "KSCHED_TLS_KEY",
    "feature_gates": "KSCHED_FEATURE_GATES",
    "queue_type": "KSCHED_QUEUE_TYPE",
    "stream_max_age": "KSCHED_STREAM_MAX_AGE",
    "stream_max_length_bytes": "KSCHED_STREAM_MAX_LENGTH_BYTES",
    "identity": "KSCHED_LEADER_ELECT_IDENTITY",
}


def default_event_log(environ: Mapping[str, str]) -> str:
    """Where the informer keeps its event log unless told: ``ksched/events.jsonl`` in
    the XDG data directory, ``$XDG_DATA_HOME`` (when absolute, as the XDG spec requires)
    else ``~/.local/share``. Absolute, so that every working directory finds the same
    log: a relative default once made ``ksched up`` started elsewhere open a new, empty
    log against the store the old one had built."""
    data = environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(data):
        home = environ.get("HOME") or os.path.expanduser("~")
        data = os.path.join(home, ".local", "share")
    return os.path.join(data, "ksched", "events.jsonl")


def from_env(environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Settings from ``KSCHED_*`` variables, then ``overrides`` (flags) where not None;
    the event log defaults to :func:`default_event_log`."""
    environ = os.environ if environ is None else environ
    flat: dict[str, object] = {"event_log": default_event_log(environ)}
    flat.update({field: environ[var] for field, var in ENV.items() if environ.get(var)})
    flat.update({k: v for k, v in overrides.items() if v is not None})
    size = flat.get("stream_max_length_bytes")
    if isinstance(size, str):
        try:
            flat["stream_max_length_bytes"] = int(size)
        except ValueError:
            raise ValueError(
                f"stream_max_length_bytes ({ENV['stream_max_length_bytes']}): {size!r} is "
                "not a whole number of bytes"
            ) from None
    values: dict[str, object] = {}
    for field, value in flat.items():
        group = _GROUP_OF.get(field)
        if group is None:
            values[field] = value
        else:
            values.setdefault(group, {})[field] = value  # type: ignore[index]
    # Not strict: variables are strings ("50000" for an int); flags come typed.
    try:
        return msgspec.convert(values, Settings, strict=False)
    except msgspec.ValidationError as error:
        raise _named(error) from None


def _named(error: msgspec.ValidationError) -> msgspec.ValidationError:
    """``error`` naming the setting and its variable first (``queue_type
    (KSCHED_QUEUE_TYPE): Invalid enum value 'x' - at `$.queue_type```) when it is about
    one field that has one; else as msgspec said it."""
    message, _, path = str(error).rpartition(" - at `$.")
    field = path.rstrip("`").rsplit(".", 1)[-1]
    if message and field in ENV:
        return msgspec.ValidationError(f"{field} ({ENV[field]}): {error}")
    return error


_GROUP_OF: Mapping[str, str] = {
    field: group
    for group, kind in (
        ("informer", InformerSettings),
        ("queue", QueueSettings),
        ("scheduler", SchedulerSettings),
        ("binder", BinderSettings),
        ("restart", RestartSettings),
        ("descheduler", DeschedulerSettings),
        ("leader_election", LeaderElectionSettings),
    )
    for field in kind.__struct_fields__
}
"""A flat flag or variable name → the group it belongs to (field names are unique)."""
