"""``telemetry.continuing`` and ``telemetry.step``: a pod's spans in the binder, the
queue and the informer, made only when spans go somewhere, and the pod's trace carried
on either way."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common import telemetry

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE}-00f067aa0ba902b7-01"


def carrier_through_noop(carrier: dict[str, str]) -> dict[str, str]:
    """What a pod's carrier became before: a no-op span continuing it, injected."""
    tracer = trace.NoOpTracer()
    with tracer.start_as_current_span("x", context=telemetry.extract(carrier)):
        return telemetry.inject()


@pytest.fixture
def recorded() -> tuple[InMemorySpanExporter, trace.Tracer]:
    """A tracer of a private provider and the exporter its finished spans go to."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider.get_tracer("test")


CARRIERS = [
    pytest.param({}, id="none"),
    pytest.param({"traceparent": PARENT}, id="traceparent"),
    pytest.param({"traceparent": PARENT, "tracestate": "vendor=1"}, id="with-tracestate"),
    pytest.param({"traceparent": "00-garbage"}, id="malformed"),
    pytest.param({"x-attempt": "2", "content": "json"}, id="other-headers-only"),
    pytest.param({"traceparent": PARENT, "x-attempt": "2"}, id="traceparent-and-others"),
]


@pytest.mark.parametrize("carrier", CARRIERS)
def test_without_a_provider_no_span_and_the_trace_passes_on(monkeypatch, recorded, carrier):
    monkeypatch.setattr(telemetry, "tracing", lambda: False)
    exporter, tracer = recorded
    with telemetry.continuing(tracer, "binding_cycle", carrier) as continued:
        continued.span.set_attribute("ksched.pod", "default/p")
        with telemetry.step(tracer, "Bind"):
            pass
        out = continued.carrier()
    assert continued.span is trace.INVALID_SPAN
    assert exporter.get_finished_spans() == ()
    assert out == carrier_through_noop(carrier)


@pytest.mark.parametrize("carrier", CARRIERS)
def test_with_a_provider_the_span_continues_the_carrier(monkeypatch, recorded, carrier):
    monkeypatch.setattr(telemetry, "tracing", lambda: True)
    exporter, tracer = recorded
    with tracer.start_as_current_span("process q") as ambient:
        with telemetry.continuing(tracer, "binding_cycle", carrier) as continued:
            continued.span.set_attribute("ksched.pod", "default/p")
            with telemetry.step(tracer, "Bind"):
                pass
            out = continued.carrier()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    cycle, step = spans["binding_cycle"], spans["Bind"]
    assert cycle.kind is trace.SpanKind.INTERNAL
    assert cycle.attributes == {"ksched.pod": "default/p"}
    assert step.parent is not None and step.parent.span_id == cycle.context.span_id
    assert [link.context for link in cycle.links] == [ambient.get_span_context()]
    continues = carrier.get("traceparent") == PARENT
    assert (f"{cycle.context.trace_id:032x}" == TRACE) is continues
    if not continues:  # a new trace, not the ambient span's
        assert cycle.parent is None
    assert out["traceparent"].split("-")[1:3] == [
        f"{cycle.context.trace_id:032x}",
        f"{cycle.context.span_id:016x}",
    ]


def test_the_choice_is_made_per_pod(monkeypatch, recorded):
    """A provider installed after the service started (``configure`` runs late in
    some embeddings) takes effect from the next pod on."""
    exporter, tracer = recorded
    installed = False
    monkeypatch.setattr(telemetry, "tracing", lambda: installed)
    for _ in range(2):
        with telemetry.continuing(tracer, "ingest", {"traceparent": PARENT}):
            pass
        installed = True
    assert [s.name for s in exporter.get_finished_spans()] == ["ingest"]
