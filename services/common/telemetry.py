"""Tracing: one trace per scheduling attempt, carried across services in AMQP headers.

Configured once per process (:func:`configure`) by the standard variables, read once at
the edge into :class:`TraceSettings` (a bad value is a :class:`TelemetryError` that
names the variable; ``ksched`` exits 2 with it):

- ``OTEL_TRACES_EXPORTER``: ``otlp``, ``console`` (one line per span on stderr,
  :class:`SpanLines`), ``none``, or a comma-separated list of the first two. Default:
  ``otlp`` when ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``
  is set, else ``none`` (no provider is installed and spans cost next to nothing).
- ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``, else ``OTEL_EXPORTER_OTLP_PROTOCOL``:
  ``http/protobuf`` (default, port 4318) or ``grpc`` (4317). The exporter reads its
  endpoint, headers, timeout and certificates from the ``OTEL_EXPORTER_OTLP_*``
  variables itself.
- ``OTEL_SERVICE_NAME``: the ``service.name`` resource, default ``ksched-<service>``.
- ``OTEL_TRACES_SAMPLER``, ``OTEL_TRACES_SAMPLER_ARG``: checked here, applied by the SDK:
  the provider is built without a sampler, so nothing overrides them.

The context of one pod travels as a W3C ``traceparent``/``tracestate`` carrier: in the
AMQP headers of per-pod messages, inside each item of a batch (and the first item's in
the batch message's headers). Span kinds: the bus's spans are PRODUCER (a publish that
is its message's creation context, and ``create``), CLIENT (any other publish) and
CONSUMER (process), the store's CLIENT (only inside a trace: polling starts none),
every other INTERNAL. Attributes that no semantic convention defines start with
``ksched.``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TextIO

import msgspec
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

EXPORTERS: Final = ("otlp", "console", "none")
"""The values of ``OTEL_TRACES_EXPORTER`` ksched honours."""
PROTOCOLS: Final = ("http/protobuf", "grpc")
"""The OTLP protocols the Python exporters speak (``http/json`` has none)."""
SAMPLERS: Final = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)
"""The SDK's built-in samplers (``OTEL_TRACES_SAMPLER``)."""
_RATIO_SAMPLERS: Final = ("traceidratio", "parentbased_traceidratio")
ENDPOINT_VARIABLES: Final = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOL_VARIABLES: Final = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


class TelemetryError(ValueError):
    """A standard ``OTEL_*`` variable has a value ksched cannot honour; the message names
    the variable and what it may be."""


class TraceSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Where a process's spans go, from the standard variables (:meth:`from_env`)."""

    exporters: tuple[str, ...] = ()
    """``OTEL_TRACES_EXPORTER`` without ``none``: any of ``otlp`` and ``console``.
    Empty (the default without an OTLP endpoint variable): spans go nowhere."""
    protocol: str = "http/protobuf"
    """The OTLP transport: ``http/protobuf`` (the specification's default) or ``grpc``."""
    service_name: str = ""
    """``OTEL_SERVICE_NAME``; empty: ``ksched-<service>``, one name per service."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TraceSettings:
        """The settings the variables of ``environ`` (default: this process's) ask for.
        Also checks the sampler variables, which the SDK reads by itself. Raises
        :class:`TelemetryError` naming the first bad variable."""
        env = os.environ if environ is None else environ
        _check_sampler(env)
        return cls(
            exporters=_exporters(env),
            protocol=_protocol(env),
            service_name=env.get("OTEL_SERVICE_NAME", "").strip(),
        )

    def service(self, service: str) -> str:
        """The ``service.name`` of ksched's ``service`` (``scheduler``)."""
        return self.service_name or default_service_name(service)


def default_service_name(service: str) -> str:
    """``ksched-<service>``: the ``service.name`` without ``OTEL_SERVICE_NAME``."""
    return f"ksched-{service}"


def service_name(service: str, environ: Mapping[str, str] | None = None) -> str:
    """``OTEL_SERVICE_NAME``, else :func:`default_service_name` (without checking the
    other variables: for the logs, which are set up before anything can fail)."""
    env = os.environ if environ is None else environ
    return env.get("OTEL_SERVICE_NAME", "").strip() or default_service_name(service)


def _exporters(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("OTEL_TRACES_EXPORTER", "").strip()
    if not raw:
        return ("otlp",) if any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES) else ()
    names = [part.strip().lower() for part in raw.split(",")]
    for name in names:
        if name not in EXPORTERS:
            raise TelemetryError(
                f'OTEL_TRACES_EXPORTER="{raw}": "{name}" is not one of {", ".join(EXPORTERS)}'
            )
    if "none" in names and len(set(names)) > 1:
        raise TelemetryError(f'OTEL_TRACES_EXPORTER="{raw}": "none" goes alone')
    return tuple(dict.fromkeys(name for name in names if name != "none"))


def _protocol(env: Mapping[str, str]) -> str:
    for variable in PROTOCOL_VARIABLES:
        value = env.get(variable, "").strip()
        if not value:
            continue
        if value not in PROTOCOLS:
            raise TelemetryError(
                f'{variable}="{value}" is not one of {", ".join(PROTOCOLS)} '
                "(the protocols of the Python OTLP exporters)"
            )
        return value
    return "http/protobuf"


def _check_sampler(env: Mapping[str, str]) -> None:
    """The sampler variables, checked as the SDK will read them (it lowercases the
    name and does not strip it; on a bad value it would only log a warning)."""
    sampler = env.get("OTEL_TRACES_SAMPLER", "")
    if not sampler:
        return
    if sampler.lower() not in SAMPLERS:
        raise TelemetryError(f'OTEL_TRACES_SAMPLER="{sampler}" is not one of {", ".join(SAMPLERS)}')
    arg = env.get("OTEL_TRACES_SAMPLER_ARG", "")
    if sampler.lower() not in _RATIO_SAMPLERS or not arg:
        return  # the SDK ignores the argument of the others; a ratio defaults to 1.0
    try:
        ratio = float(arg)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        raise TelemetryError(
            f'OTEL_TRACES_SAMPLER_ARG="{arg}" is not a ratio between 0 and 1 '
            f"(the sampling probability of {sampler.lower()})"
        )


_configured = False


def configure(
    service: str,
    settings: TraceSettings | None = None,
    *,
    processors: Sequence[SpanProcessor] = (),
) -> TracerProvider | None:
    """Install the tracer provider of ``settings`` (default: from this process's
    variables), once per process; later calls do nothing and return None. Raises
    :class:`TelemetryError` on a bad variable. ``processors`` are added to the
    provider's (``ksched simulate --trace`` adds its own)."""
    global _configured
    if _configured:
        return None
    settings = TraceSettings.from_env() if settings is None else settings
    provider = tracer_provider(service, settings, processors=processors)
    _configured = True
    if provider is not None:
        trace.set_tracer_provider(provider)
    return provider


def tracer_provider(
    service: str, settings: TraceSettings, *, processors: Sequence[SpanProcessor] = ()
) -> TracerProvider | None:
    """A provider exporting where ``settings`` says, or None when spans go nowhere.
    OTLP exports in batches from a thread; ``console`` writes each span as it ends."""
    if not settings.exporters and not processors:
        return None
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.service(service)}))
    for name in settings.exporters:
        if name == "otlp":
            provider.add_span_processor(BatchSpanProcessor(otlp_exporter(settings.protocol)))
        else:
            provider.add_span_processor(SimpleSpanProcessor(SpanLines()))
    for processor in processors:
        provider.add_span_processor(processor)
    return provider


def otlp_exporter(protocol: str) -> SpanExporter:
    """The OTLP span exporter of ``protocol``; it reads the other ``OTEL_EXPORTER_OTLP_*``
    variables (endpoint, headers, timeout, certificates) itself."""
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


class SpanLines(SpanExporter):
    """The ``console`` exporter: one line per span (:func:`span_line`) on ``stream``
    (default: the process's stderr at the time of export, where its logs go)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        stream = self._stream or sys.stderr
        stream.write("".join(span_line(span) + "\n" for span in spans))
        stream.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def span_line(span: ReadableSpan) -> str:
    """``span NAME KIND DURATION trace=… id=… parent=…`` (16 hex digits, ``-`` for a
    root), ``status=ERROR:"…"`` when it failed, ``links=N`` when it has links, the
    instrumentation scope (``scope=scheduler``), then every attribute as ``key=value``
    (a value with spaces or quotes in JSON)."""
    context = span.context
    assert context is not None
    elapsed = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    kind = span.kind.name if span.kind is not None else "INTERNAL"
    parent = f"{span.parent.span_id:016x}" if span.parent is not None else "-"
    parts = [
        f"span {span.name} {kind} {elapsed:.3f}ms",
        f"trace={context.trace_id:032x} id={context.span_id:016x} parent={parent}",
    ]
    if span.status.status_code is trace.StatusCode.ERROR:
        parts.append(f"status=ERROR:{json.dumps(span.status.description or '')}")
    if span.links:
        parts.append(f"links={len(span.links)}")
    scope = span.instrumentation_scope
    if scope is not None and scope.name:
        parts.append(f"scope={scope.name.removeprefix('ksched.')}")
    for key, value in (span.attributes or {}).items():
        parts.append(f"{key}={_value(value)}")
    return " ".join(parts)


def _value(value: object) -> str:
    if isinstance(value, str):
        plain = value and not any(c.isspace() or c in "\"'=" for c in value)
        return value if plain else json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool | tuple | list):
        return json.dumps(list(value) if isinstance(value, tuple) else value)
    return str(value)


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(f"ksched.{name}")


def tracing() -> bool:
    """Whether spans go anywhere: an SDK tracer provider is installed (:func:`configure`
    found an exporter, or a caller installed its own). Without one every span is a
    no-op, and the hot path can skip making them."""
    return isinstance(trace.get_tracer_provider(), TracerProvider)


def ambient_links() -> list[trace.Link]:
    """A link to the current span, for a span that continues a pod's trace (its parent
    comes from the pod's carrier) inside the handling of a batch: from the pod's trace
    one can reach the bus span that carried it. Empty outside any span."""
    context = trace.get_current_span().get_span_context()
    return [trace.Link(context)] if context.is_valid else []


@dataclass(frozen=True, slots=True)
class Continued:
    """What :func:`continuing` gives its block: the pod's span (``INVALID_SPAN``, whose
    methods do nothing, when spans go nowhere) and the carrier for what the pod's
    handling sends on."""

    span: trace.Span
    incoming: Mapping[str, str] | None
    """The carrier the pod came with, passed on as it is when no span was made."""

    def carrier(self) -> dict[str, str]:
        """The current span's context as a carrier; without a span, the incoming trace
        passed on (as a no-op span would: it keeps its parent's context)."""
        if self.incoming is None:
            return inject()
        return inject(extract(self.incoming)) if self.incoming else {}


@contextlib.contextmanager
def continuing(
    tracer: trace.Tracer, name: str, carrier: Mapping[str, str] | None
) -> Iterator[Continued]:
    """An INTERNAL span continuing the trace in ``carrier`` (one pod's), current while
    the block runs and linked to the ambient span (:func:`ambient_links`). When spans go
    nowhere (:func:`tracing`) none is made: the binder's four no-op spans per pod, with
    their contexts and links, took about a tenth of its time."""
    if not tracing():
        yield Continued(trace.INVALID_SPAN, carrier or {})
        return
    with tracer.start_as_current_span(
        name, context=extract(carrier), kind=trace.SpanKind.INTERNAL, links=ambient_links()
    ) as span:
        yield Continued(span, None)


def step(tracer: trace.Tracer, name: str) -> contextlib.AbstractContextManager[object]:
    """An INTERNAL child span of the current one while the block runs (an extension
    point's), or nothing when spans go nowhere (:func:`tracing`)."""
    if not tracing():
        return contextlib.nullcontext()
    return tracer.start_as_current_span(name, kind=trace.SpanKind.INTERNAL)


def inject(context: Context | None = None) -> dict[str, str]:
    """The current (or given) trace context as a ``traceparent``/``tracestate`` carrier."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=context)
    return carrier


def extract(carrier: Mapping[str, str] | None) -> Context:
    """A context continuing the trace in ``carrier`` (a fresh one if it has none)."""
    return propagate.extract(dict(carrier or {}))
