"""The bus's messaging spans on the in-memory bus: kinds, names, the semantic
conventions' attributes, creation contexts in the headers, parents and links."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from contracts import topology
from services.common.bus import Delivery, MemoryBus, Message, Rejection, tracing

EXCHANGE = topology.DECISIONS.name
USER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
USER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{USER_TRACE}-{USER_SPAN}-01"
OTHER_TRACE = "6cf92f3577b34da6a3ce929d0e0e4738"
OTHER_SPAN = "20f067aa0ba902b9"
OTHER_TRACEPARENT = f"00-{OTHER_TRACE}-{OTHER_SPAN}-01"
ROUTING_KEY = "ksched.routing_key"
"""The in-memory bus is no RabbitMQ: its spans say so (``messaging.system``)."""


def queue(name: str = "test.decisions", *, exclusive: bool = False) -> topology.QueueSpec:
    return topology.QueueSpec(
        name,
        (topology.QueueBinding(EXCHANGE, "#"),),
        durable=False,
        exclusive=exclusive,
        auto_delete=exclusive,
        dead_letter=False,
    )


class Sink:
    """A handler keeping every delivery, and the span current while it ran."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.current: list[trace.SpanContext] = []

    async def __call__(self, deliveries: Sequence[Delivery]) -> Sequence[Rejection]:
        self.deliveries.extend(deliveries)
        self.current.append(trace.get_current_span().get_span_context())
        return ()


async def run(messages: Sequence[Message], spec: topology.QueueSpec | None = None) -> Sink:
    bus = MemoryBus()
    sink = Sink()
    await bus.consume_raw(spec or queue(), sink, max_batch=16)
    await bus.publish(messages)
    await bus.wait_idle()
    await bus.close()
    return sink


def only(spans: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = [s for s in spans.get_finished_spans() if s.name == name]
    assert len(found) == 1, [s.name for s in spans.get_finished_spans()]
    return found[0]


def hex_trace(span: ReadableSpan) -> str:
    assert span.context is not None
    return trace.format_trace_id(span.context.trace_id)


def traceparent_of(span: ReadableSpan) -> str:
    assert span.context is not None
    span_id, flags = trace.format_span_id(span.context.span_id), span.context.trace_flags
    return f"00-{hex_trace(span)}-{span_id}-{flags:02x}"


async def test_one_message_is_a_producer_span_and_the_consumers_parent(
    spans: InMemorySpanExporter,
) -> None:
    sink = await run([Message(EXCHANGE, "binding.default", b"{}")])
    publish = only(spans, f"publish {EXCHANGE}")
    process = only(spans, "process test.decisions")
    assert publish.kind is SpanKind.PRODUCER
    assert dict(publish.attributes or {}) == {
        "messaging.system": "ksched_memory",
        "messaging.destination.name": EXCHANGE,
        "messaging.operation.type": "send",
        "messaging.operation.name": "publish",
        ROUTING_KEY: "binding.default",
    }
    (delivery,) = sink.deliveries
    assert delivery.headers["traceparent"] == traceparent_of(publish)  # its creation context
    assert process.kind is SpanKind.CONSUMER
    assert process.parent is not None and publish.context is not None
    assert process.parent.span_id == publish.context.span_id
    assert dict(process.attributes or {}) == {
        "messaging.system": "ksched_memory",
        "messaging.destination.name": "test.decisions",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        ROUTING_KEY: "binding.default",
    }
    assert [link.context.span_id for link in process.links] == [publish.context.span_id]


async def test_a_batch_gets_a_create_span_per_message_and_one_trace_each(
    spans: InMemorySpanExporter,
) -> None:
    keys = ["binding.a", "binding.b", "event.a"]
    sink = await run([Message(EXCHANGE, key, b"{}") for key in keys])
    publish = only(spans, f"publish {EXCHANGE}")
    creates = [s for s in spans.get_finished_spans() if s.name == f"create {EXCHANGE}"]
    assert len(creates) == 3
    assert all(s.kind is SpanKind.PRODUCER for s in creates)
    assert all((s.attributes or {})["messaging.operation.type"] == "create" for s in creates)
    assert len({hex_trace(s) for s in creates}) == 3  # one trace per message
    attributes = publish.attributes or {}
    assert attributes["messaging.batch.message_count"] == 3
    assert ROUTING_KEY not in attributes  # they differ
    assert [d.headers["traceparent"] for d in sink.deliveries] == [
        traceparent_of(s) for s in creates
    ]
    assert [dict(link.attributes or {}) for link in publish.links] == [
        {ROUTING_KEY: key} for key in keys
    ]
    process = only(spans, "process test.decisions")
    assert publish.kind is SpanKind.CLIENT  # the create spans are the creation contexts
    assert process.parent is not None and creates[0].context is not None
    assert process.parent.span_id == creates[0].context.span_id  # the first message's
    assert (process.attributes or {})["messaging.batch.message_count"] == 3
    assert [link.context.span_id for link in process.links] == [
        s.context.span_id for s in creates if s.context is not None
    ]


async def test_a_context_the_message_carries_is_kept_and_linked(
    spans: InMemorySpanExporter,
) -> None:
    sink = await run([Message(EXCHANGE, "binding.default", b"{}", {"traceparent": TRACEPARENT})])
    (delivery,) = sink.deliveries
    assert delivery.headers["traceparent"] == TRACEPARENT
    publish = only(spans, f"publish {EXCHANGE}")
    assert [trace.format_span_id(link.context.span_id) for link in publish.links] == [USER_SPAN]
    assert not [s for s in spans.get_finished_spans() if s.name.startswith("create")]
    process = only(spans, "process test.decisions")
    assert hex_trace(process) == USER_TRACE  # continues the pod's trace
    assert process.parent is not None
    assert trace.format_span_id(process.parent.span_id) == USER_SPAN


async def test_the_handler_runs_inside_the_process_span(spans: InMemorySpanExporter) -> None:
    sink = await run([Message(EXCHANGE, "binding.default", b"{}")])
    process = only(spans, "process test.decisions")
    assert process.context is not None
    assert [c.span_id for c in sink.current] == [process.context.span_id]


async def test_a_failing_handler_marks_the_process_span(spans: InMemorySpanExporter) -> None:
    bus = MemoryBus()
    calls = 0

    async def fail(deliveries: Sequence[Delivery]) -> None:
        nonlocal calls
        calls += 1
        raise ValueError("bad message")

    await bus.consume_raw(queue(), fail)
    await bus.publish([Message(EXCHANGE, "binding.default", b"{}")])
    await bus.wait_idle()
    await bus.close()
    failed = [s for s in spans.get_finished_spans() if s.name == "process test.decisions"]
    assert len(failed) == calls == 2  # requeued once, then dead-lettered
    for span in failed:
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "ValueError"
        assert [event.name for event in span.events] == ["exception"]


async def test_a_temporary_queue_is_left_out_of_the_name(spans: InMemorySpanExporter) -> None:
    await run([Message(EXCHANGE, "binding.default", b"{}")], queue("mine.1234", exclusive=True))
    process = only(spans, "process")
    assert (process.attributes or {})["messaging.destination.name"] == "mine.1234"
    assert (process.attributes or {})["messaging.destination.temporary"] is True


async def test_every_exchange_of_a_publish_has_its_own_span(spans: InMemorySpanExporter) -> None:
    bus = MemoryBus()
    await bus.publish(
        [
            Message(EXCHANGE, "binding.default", b"{}"),
            Message(topology.ERRORS.name, "error.pod", b"{}"),
        ]
    )
    await bus.close()
    names = sorted(s.name for s in spans.get_finished_spans())
    assert names == [f"publish {EXCHANGE}", f"publish {topology.ERRORS.name}"]


async def test_without_tracing_messages_are_left_alone(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tracing, "_tracer", trace.NoOpTracer())
    sink = await run([Message(EXCHANGE, "binding.default", b"{}", {"x": "1"})] * 2)
    assert [dict(d.headers) for d in sink.deliveries] == [{"x": "1"}, {"x": "1"}]
    assert spans.get_finished_spans() == ()


async def test_a_sampled_out_publish_records_nothing_and_keeps_its_decision(
    spans: InMemorySpanExporter, provider: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    quiet = TracerProvider(sampler=ALWAYS_OFF)
    monkeypatch.setattr(tracing, "_tracer", quiet.get_tracer("ksched.bus"))
    sink = await run([Message(EXCHANGE, "binding.default", b"{}")])
    (delivery,) = sink.deliveries
    flags = int(delivery.headers["traceparent"].rsplit("-", 1)[1], 16)
    assert not flags & trace.TraceFlags.SAMPLED  # not sampled: nor will the consumer be
    assert spans.get_finished_spans() == ()


async def test_a_publish_of_messages_with_their_own_contexts_is_a_client_span(
    spans: InMemorySpanExporter,
) -> None:
    await run(
        [
            Message(EXCHANGE, "binding.a", b"{}", {"traceparent": TRACEPARENT}),
            Message(EXCHANGE, "binding.b", b"{}", {"traceparent": OTHER_TRACEPARENT}),
        ]
    )
    publish = only(spans, f"publish {EXCHANGE}")
    assert publish.kind is SpanKind.CLIENT  # no message's creation context
    assert hex_trace(publish) == USER_TRACE  # a child of the first pod's trace
    assert publish.parent is not None
    assert trace.format_span_id(publish.parent.span_id) == USER_SPAN
    assert [trace.format_span_id(link.context.span_id) for link in publish.links] == [
        USER_SPAN,
        OTHER_SPAN,
    ]


async def test_a_single_message_with_its_own_context_is_a_client_span_in_its_trace(
    spans: InMemorySpanExporter,
) -> None:
    await run([Message(EXCHANGE, "binding.default", b"{}", {"traceparent": TRACEPARENT})])
    publish = only(spans, f"publish {EXCHANGE}")
    assert publish.kind is SpanKind.CLIENT
    assert publish.parent is not None
    assert trace.format_span_id(publish.parent.span_id) == USER_SPAN


async def test_a_batch_message_continues_the_trace_of_the_pods_it_carries(
    spans: InMemorySpanExporter,
) -> None:
    carriers = [{"traceparent": TRACEPARENT}, {"traceparent": OTHER_TRACEPARENT}]
    sink = await run([Message(EXCHANGE, "binding.default", b"{}", traces=carriers)])
    (delivery,) = sink.deliveries
    assert delivery.headers["traceparent"] == TRACEPARENT  # the first pod's context
    publish = only(spans, f"publish {EXCHANGE}")
    assert publish.kind is SpanKind.CLIENT
    assert hex_trace(publish) == USER_TRACE
    assert [trace.format_span_id(link.context.span_id) for link in publish.links] == [
        USER_SPAN,
        OTHER_SPAN,
    ]  # the batch joins both pods' traces
    assert not [s for s in spans.get_finished_spans() if s.name.startswith("create")]
    process = only(spans, "process test.decisions")
    assert hex_trace(process) == USER_TRACE
    assert process.parent is not None
    assert trace.format_span_id(process.parent.span_id) == USER_SPAN


async def test_a_batch_of_deliveries_is_a_child_of_the_first_and_links_every_one(
    spans: InMemorySpanExporter,
) -> None:
    await run(
        [
            Message(EXCHANGE, "binding.a", b"{}", {"traceparent": TRACEPARENT}),
            Message(EXCHANGE, "binding.b", b"{}", {"traceparent": OTHER_TRACEPARENT}),
        ]
    )
    process = only(spans, "process test.decisions")
    assert hex_trace(process) == USER_TRACE
    assert [trace.format_span_id(link.context.span_id) for link in process.links] == [
        USER_SPAN,
        OTHER_SPAN,
    ]


async def test_a_publish_inside_another_trace_links_the_callers_span(
    spans: InMemorySpanExporter, provider: TracerProvider
) -> None:
    caller = provider.get_tracer("test")
    with caller.start_as_current_span("handling") as handling:
        await run([Message(EXCHANGE, "binding.default", b"{}", {"traceparent": TRACEPARENT})])
    publish = only(spans, f"publish {EXCHANGE}")
    assert hex_trace(publish) == USER_TRACE
    ambient = handling.get_span_context().span_id
    assert ambient in [link.context.span_id for link in publish.links]
