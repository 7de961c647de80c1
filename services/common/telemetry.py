"""Tracing: one trace per scheduling attempt, carried across services in AMQP headers.

Exporting is configured only by the standard ``OTEL_*`` variables and is off when none
is set (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` turn
on the OTLP/HTTP exporter; ``OTEL_SERVICE_NAME`` names the service). The context of
one pod travels as a W3C ``traceparent``/``tracestate`` carrier: in the AMQP headers of
per-pod messages, inside each item of a batch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

_configured = False


def configure(service: str, exporter: SpanExporter | None = None) -> None:
    """Install the tracer provider once per process. ``exporter`` is for tests."""
    global _configured
    if _configured:
        return
    _configured = True
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if exporter is None and not endpoint:
        return
    name = os.environ.get("OTEL_SERVICE_NAME", f"ksched-{service}")
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(f"ksched.{name}")


def inject(context: Context | None = None) -> dict[str, str]:
    """The current (or given) trace context as a ``traceparent``/``tracestate`` carrier."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=context)
    return carrier


def extract(carrier: Mapping[str, str] | None) -> Context:
    """A context continuing the trace in ``carrier`` (a fresh one if it has none)."""
    return propagate.extract(dict(carrier or {}))
