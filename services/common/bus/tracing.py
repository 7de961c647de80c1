"""The bus's spans, the same on both backends: OpenTelemetry's messaging semantic
conventions as they apply to RabbitMQ.

- ``publish``: one PRODUCER span per exchange of the call, ``publish <exchange>``
  (operation type ``send``), a child of the caller's current span, linking to the
  creation context of each message. A message that carries a trace context already
  (``traceparent``: a pod's, put there by a service) keeps it, as the conventions want
  of a custom creation context. Any other message gets one: the publish span's own when
  it is the only message to its exchange, else a ``create <exchange>`` PRODUCER span of
  its own (operation type ``create``, a child of the current span), as the conventions
  recommend for batches. So ``ksched publish`` of many pods starts one trace per pod,
  not one trace for all of them. (The conventions would make a publish span that is no
  message's creation context a CLIENT span; ksched keeps every publish a PRODUCER.)
- consume: one CONSUMER span per handler call, ``process <queue>`` (operation type
  ``process``), current while the handler runs (what the handler does nests under it),
  linking to each delivery's creation context. A batch of one delivery that carries a
  context is that context's child instead, as the conventions allow for single
  messages: a pod's watch event continues the pod's trace unbroken.
- attributes: ``messaging.system`` (``rabbitmq``), ``messaging.destination.name`` (the
  exchange, or the queue, as named on the broker), ``messaging.operation.type`` and
  ``.name``, ``messaging.rabbitmq.destination.routing_key`` (on the span when every
  message has the same one, else on each link), ``messaging.message.id`` when the
  message has one, ``messaging.batch.message_count`` for more than one message.

The latest conventions compose the destination name from exchange, routing key and
queue; one span here covers a batch of many routing keys, so the exchange (publish) and
the queue (process) name it, and the routing key is an attribute. Settle (ack) spans
are not made. Without a tracer provider no span work is done per message; at most
:data:`MAX_LINKS` messages are linked (the SDK's default link limit).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Final

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from services.common import telemetry
from services.common.bus.base import Delivery, Message
from services.common.redact import redact

SYSTEM: Final = "rabbitmq"
MAX_LINKS: Final = 128
TRACEPARENT: Final = "traceparent"

_tracer = telemetry.tracer("bus")


@contextlib.contextmanager
def sending(
    messages: Sequence[Message], destination: Callable[[str], str] = str
) -> Iterator[list[Message]]:
    """Spans for publishing ``messages`` while the block runs; yields the messages to
    publish: each carrying a creation context. ``destination`` names an exchange as
    it is on the broker (the namespace applied)."""
    groups: dict[str, list[int]] = {}
    for i, message in enumerate(messages):
        groups.setdefault(message.exchange, []).append(i)
    out = list(messages)
    spans: list[Span] = []
    for exchange, indexes in groups.items():
        name = destination(exchange)
        span = _tracer.start_span(
            f"publish {name}",
            kind=SpanKind.PRODUCER,
            attributes=_attributes(name, "send", "publish"),
        )
        spans.append(span)
        if not span.get_span_context().is_valid:
            continue  # tracing is off
        bare = [i for i in indexes if TRACEPARENT not in messages[i].headers]
        if len(indexes) == 1:
            if bare:
                own = telemetry.inject(trace.set_span_in_context(span))
                out[indexes[0]] = _with(messages[indexes[0]], own)
        else:
            for i in bare:
                out[i] = _with(messages[i], _created(name, messages[i]))
        if span.is_recording():
            _describe(span, [messages[i] for i in indexes])
            linked = [out[i] for i in indexes if len(indexes) > 1 or i not in bare]
            _link(span, [(m.routing_key, m.headers) for m in linked])
    try:
        yield out
    except Exception as error:
        for span in spans:
            _failed(span, error)
        raise
    finally:
        for span in spans:
            span.end()


def _created(destination: str, message: Message) -> dict[str, str]:
    """The carrier of a ``create`` span for ``message`` (ended at once: it marks the
    message's creation)."""
    attributes = _attributes(destination, "create", "create")
    span = _tracer.start_span(
        f"create {destination}", kind=SpanKind.PRODUCER, attributes=attributes
    )
    if span.is_recording():
        _describe(span, [message])
    span.end()
    return telemetry.inject(trace.set_span_in_context(span))


def _with(message: Message, carrier: Mapping[str, str]) -> Message:
    if not carrier:
        return message
    return dataclasses.replace(message, headers={**message.headers, **carrier})


@contextlib.contextmanager
def processing(
    queue: str,
    deliveries: Sequence[Delivery],
    *,
    temporary: bool = False,
    message_ids: Sequence[str | None] = (),
    delivery_tag: int | None = None,
) -> Iterator[Span]:
    """The span of one handler call on ``deliveries`` from ``queue`` (its name on the
    broker), current while the block runs. ``temporary``: a queue of one consumer
    (exclusive, auto-deleted), left out of the span name as the conventions ask.
    ``message_ids``: each delivery's AMQP message-id, where it has one;
    ``delivery_tag``: the broker's tag of a single delivery."""
    parent = None
    if len(deliveries) == 1 and TRACEPARENT in deliveries[0].headers:
        parent = telemetry.extract(deliveries[0].headers)
    attributes = _attributes(queue, "process", "process")
    if temporary:
        attributes["messaging.destination.temporary"] = True
    span = _tracer.start_span(
        "process" if temporary else f"process {queue}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes=attributes,
    )
    if span.is_recording():
        _describe(span, deliveries)
        if len(deliveries) == 1 and message_ids and message_ids[0]:
            span.set_attribute("messaging.message.id", message_ids[0])
        if len(deliveries) == 1 and delivery_tag is not None:
            span.set_attribute("messaging.rabbitmq.message.delivery_tag", delivery_tag)
        ids = message_ids if len(deliveries) > 1 else ()
        _link(span, [(d.routing_key, d.headers) for d in deliveries], ids)
    with trace.use_span(
        span, end_on_exit=True, record_exception=False, set_status_on_exception=False
    ):
        try:
            yield span
        except Exception as error:
            _failed(span, error)
            raise


def _attributes(destination: str, operation_type: str, operation: str) -> dict[str, str | bool]:
    """What a span has from its start (what a sampler may look at)."""
    return {
        "messaging.system": SYSTEM,
        "messaging.destination.name": destination,
        "messaging.operation.type": operation_type,
        "messaging.operation.name": operation,
    }


def _describe(span: Span, messages: Sequence[Message] | Sequence[Delivery]) -> None:
    """The routing key, when all ``messages`` have the same one, and how many there are
    when more than one (work done only for a span that records)."""
    keys = {message.routing_key for message in messages}
    if len(keys) == 1 and (key := next(iter(keys))):
        span.set_attribute("messaging.rabbitmq.destination.routing_key", key)
    if len(messages) > 1:
        span.set_attribute("messaging.batch.message_count", len(messages))


def _link(
    span: Span,
    messages: Sequence[tuple[str, Mapping[str, str]]],
    message_ids: Sequence[str | None] = (),
) -> None:
    """Link ``span`` to the creation context of each message (routing key, headers)
    that has one; the routing key (when they differ) and the message id go on the link."""
    per_message_key = len({key for key, _ in messages}) > 1
    linked = 0
    for i, (key, headers) in enumerate(messages):
        if TRACEPARENT not in headers:
            continue
        context = trace.get_current_span(telemetry.extract(headers)).get_span_context()
        if not context.is_valid:
            continue
        attributes: dict[str, str] = {}
        if per_message_key and key:
            attributes["messaging.rabbitmq.destination.routing_key"] = key
        if i < len(message_ids) and (message_id := message_ids[i]):
            attributes["messaging.message.id"] = message_id
        span.add_link(context, attributes)
        linked += 1
        if linked == MAX_LINKS:
            return


def _failed(span: Span, error: Exception) -> None:
    span.record_exception(error)
    span.set_attribute("error.type", type(error).__qualname__)
    span.set_status(trace.StatusCode.ERROR, redact(f"{type(error).__name__}: {error}"))


__all__ = ["MAX_LINKS", "SYSTEM", "processing", "sending"]
