"""Node utilization from Prometheus (descheduler's ``metricsProviders: [{source:
Prometheus}]`` and LowNodeUtilization's ``metricsUtilization.prometheus.query``).

Before a cycle, every query the policy's plugins name is sent once to the server's
instant-query API (``GET <url>/api/v1/query?query=...``, with ``Authorization: Bearer``
when there is a token); the cycle then sees each answer (:class:`PrometheusUsage`) in
its :class:`~services.descheduler.api.ClusterView`, so the plugins stay free of I/O.
An answer must be a vector whose samples name their node in the ``instance`` label,
each value in [0, 1]; it becomes the node's ``MetricResource`` usage in percent
(``int(value * 100)``, truncated as upstream). Anything else is the query's error,
in upstream's words, and the plugin ends with it.

The token: upstream reads the ``prometheusAuthToken`` key of the Secret that
``authToken.secretReference`` names, or else the pod's service-account token. ksched
ingests no Secrets, so the token comes from a file (:func:`read_token`): the one the
caller names (``ksched deschedule --prometheus-token-file``, the Secret's value),
else the service-account token where it is mounted, else none (a Prometheus that
needs no authentication).
"""

from __future__ import annotations

import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec
import numpy as np

from services.descheduler.api import PrometheusUsage
from services.descheduler.policy import Policy

TOKEN_KEY: Final = "prometheusAuthToken"
"""The Secret's key upstream reads the token from."""
SERVICE_ACCOUNT_TOKEN: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
TIMEOUT: Final = 30.0
"""Seconds a query may take (upstream's dialer timeout)."""


class PrometheusError(Exception):
    """A query whose answer cannot be used; ``str()`` is upstream's message."""


class _Data(msgspec.Struct, frozen=True, rename="camel"):
    result_type: str = ""
    result: msgspec.Raw = msgspec.Raw(b"[]")
    """Samples for a vector; a scalar's or string's ``[time, value]`` otherwise."""


class _Sample(msgspec.Struct, frozen=True):
    value: tuple[float, str]
    metric: dict[str, str] = {}


class _Answer(msgspec.Struct, frozen=True, rename="camel"):
    """``/api/v1/query``'s envelope (unknown fields, such as ``warnings``, ignored)."""

    status: str = ""
    data: _Data | None = None
    error_type: str = ""
    error: str = ""


_answer = msgspec.json.Decoder(_Answer)
_samples = msgspec.json.Decoder(list[_Sample])


def _go_float(value: float) -> str:
    """A float as Go's ``%v`` prints a Prometheus sample value (``1.5``, ``2``)."""
    return str(np.format_float_positional(value, trim="-"))


def node_usage(body: bytes) -> dict[str, int]:
    """``/api/v1/query``'s answer as node → percent. Raises PrometheusError."""
    try:
        answer = _answer.decode(body)
        if answer.status != "success" or answer.data is None:
            kind, text = answer.error_type or "error", answer.error or "no data"
            raise PrometheusError(f"unable to capture prometheus metrics: {kind}: {text}")
        if answer.data.result_type != "vector":
            raise PrometheusError(
                f'expected query results to be of type "vector", got '
                f'"{answer.data.result_type}" instead'
            )
        samples = _samples.decode(answer.data.result)
        values = [(s.metric.get("instance"), float(s.value[1])) for s in samples]
    except (msgspec.DecodeError, ValueError) as error:
        raise PrometheusError(f"unable to capture prometheus metrics: {error}") from None
    usage = {}
    for node, value in values:
        if node is None:
            raise PrometheusError("the collected metrics sample is missing 'instance' key")
        if math.isnan(value) or not 0 <= value <= 1:
            raise PrometheusError(
                f'the collected metrics sample for "{node}" has value {_go_float(value)} '
                "outside of <0; 1> interval"
            )
        usage[node] = int(value * 100)
    return usage


@dataclass(frozen=True, slots=True)
class PrometheusClient:
    url: str
    token: str | None = None
    timeout: float = TIMEOUT

    def query(self, promql: str) -> dict[str, int]:
        """One instant query, as node → percent. Raises PrometheusError."""
        address = (
            self.url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        )
        request = urllib.request.Request(address, headers={"Accept": "application/json"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            # Prometheus answers a bad query with 400/422 and its error in the body.
            body = error.read()
            if body.lstrip().startswith(b"{"):
                return node_usage(body)
            raise PrometheusError(
                f"unable to capture prometheus metrics: server returned HTTP status "
                f"{error.code} {error.reason}"
            ) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise PrometheusError(f"unable to capture prometheus metrics: {reason}") from None
        return node_usage(body)

    def collect(self, queries: Iterable[str]) -> dict[str, PrometheusUsage]:
        """Each query's answer (its error kept, not raised)."""
        out = {}
        for promql in dict.fromkeys(queries):
            try:
                out[promql] = PrometheusUsage(self.query(promql))
            except PrometheusError as error:
                out[promql] = PrometheusUsage(error=str(error))
        return out


def prometheus_usage(
    policy: Policy, token_file: str | Path | None = None
) -> tuple[dict[str, PrometheusUsage] | None, str]:
    """What the cycle sees of Prometheus: every query's answer, or None (no client:
    no Prometheus provider, or its token cannot be read, then also why)."""
    config = policy.prometheus
    if config is None or not config.url:
        return None, ""
    ref = config.auth_token.secret_reference if config.auth_token is not None else None
    token, problem = read_token((ref.namespace, ref.name) if ref is not None else None, token_file)
    if problem:
        return None, problem
    return PrometheusClient(config.url, token).collect(policy.prometheus_queries()), ""


def read_token(
    secret: tuple[str, str] | None, token_file: str | Path | None
) -> tuple[str | None, str]:
    """(the token, "") or (None, why there is no client), as upstream's controllers:
    ``secret`` is the policy's ``authToken.secretReference`` (namespace, name), whose
    value ``token_file`` holds; without a reference, ``token_file`` or the
    service-account token, else no token."""
    if token_file is not None:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as error:
            return None, f"unable to read the prometheus token file {token_file}: {error}"
        if secret is not None and not token:
            return None, (
                f'prometheus authentication token secret missing "{TOKEN_KEY}" data or empty'
            )
        return token or None, ""
    if secret is not None:
        namespace, name = secret
        return None, f"unable to get {namespace}/{name} secret"
    try:
        return SERVICE_ACCOUNT_TOKEN.read_text().strip() or None, ""
    except OSError:
        return None, ""


__all__ = [
    "SERVICE_ACCOUNT_TOKEN",
    "TOKEN_KEY",
    "PrometheusClient",
    "PrometheusError",
    "PrometheusUsage",
    "node_usage",
    "prometheus_usage",
    "read_token",
]
