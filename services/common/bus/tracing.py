"""The bus's spans, the same on both backends: OpenTelemetry's messaging semantic
conventions as they apply to RabbitMQ.

- ``publish``: one span per exchange of the call, ``publish <exchange>`` (operation type
  ``send``). Each message travels with a creation context (``traceparent``):
  - its own header's, when a service put one there (a pod's: a Binding, a watch event);
  - else the first of :attr:`Message.traces`, the contexts of the pods whose items a
    batch message carries (``ksched.schedule``, ``ksched.bind``);
  - else a fresh one: the publish span's own when the message goes alone to its
    exchange (the span is then PRODUCER), else a ``create <exchange>`` PRODUCER span of
    its own (operation type ``create``), as the conventions recommend for batches. So
    ``ksched publish`` of many pods starts one trace per pod, not one for all.
  A publish span whose context is no message's creation context is CLIENT, as the
  conventions ask. It is a child of the first pod context its messages carry, so the
  pod's trace shows the hop; where the call joins several traces it links to every
  creation context (and to the caller's span when that is in another trace). With no
  pod context it is a child of the caller's current span.
- consume: one CONSUMER span per handler call, ``process <queue>`` (operation type
  ``process``), current while the handler runs (what the handler does nests under it),
  a child of the first delivery's creation context, so the pod's trace continues across
  the hop, and linking to each delivery's creation context (a batch joining several
  traces is reachable from each of them).
- attributes: ``messaging.system`` (``rabbitmq`` on RabbitMQ; the in-memory bus of
  ``ksched simulate`` is no RabbitMQ and says ``ksched_memory``, a custom value as the
  conventions allow, with the routing key as ``ksched.routing_key``),
  ``messaging.destination.name`` (the exchange, or the queue, as named on the broker),
  ``messaging.operation.type`` and ``.name``, the routing key (on the span when every
  message has the same one, else on each link; ``messaging.rabbitmq.destination.routing_key``
  on RabbitMQ), ``messaging.message.id`` when the message has one,
  ``messaging.batch.message_count`` for more than one message.

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
from opentelemetry.trace import Span, SpanKind, set_span_in_context

from services.common import telemetry
from services.common.bus.base import Delivery, Message
from services.common.redact import redact

SYSTEM: Final = "rabbitmq"
MEMORY_SYSTEM: Final = "ksched_memory"
"""``messaging.system`` of the in-memory bus: no broker, so no well-known value fits."""
MAX_LINKS: Final = 128
TRACEPARENT: Final = "traceparent"
_ROUTING_KEYS: Final = {SYSTEM: "messaging.rabbitmq.destination.routing_key"}

_tracer = telemetry.tracer("bus")


def routing_key_attribute(system: str) -> str:
    """The attribute naming the routing key on the spans of ``system``: RabbitMQ's own
    convention there, ``ksched.routing_key`` elsewhere."""
    return _ROUTING_KEYS.get(system, "ksched.routing_key")


@contextlib.contextmanager
def sending(
    messages: Sequence[Message], destination: Callable[[str], str] = str, *, system: str = SYSTEM
) -> Iterator[list[Message]]:
    """Spans for publishing ``messages`` while the block runs; yields the messages to
    publish: each carrying a creation context. ``destination`` names an exchange as
    it is on the broker (the namespace applied)."""
    groups: dict[str, list[int]] = {}
    for i, message in enumerate(messages):
        groups.setdefault(message.exchange, []).append(i)
    out = [_carrying(message) for message in messages]
    spans: list[Span] = []
    for exchange, indexes in groups.items():
        name = destination(exchange)
        bare: list[int] = []
        carried: list[int] = []
        for i in indexes:
            (carried if TRACEPARENT in out[i].headers else bare).append(i)
        alone = len(indexes) == 1 and bool(bare)  # its creation context: this span's
        parent = telemetry.extract(out[carried[0]].headers) if carried else None
        span = _tracer.start_span(
            f"publish {name}",
            context=parent,
            kind=SpanKind.PRODUCER if alone else SpanKind.CLIENT,
            attributes=_attributes(name, "send", "publish", system),
        )
        spans.append(span)
        if not span.get_span_context().is_valid:
            continue  # tracing is off
        if alone:
            out[indexes[0]] = _with(out[indexes[0]], telemetry.inject(set_span_in_context(span)))
        else:
            for i in bare:
                out[i] = _with(out[i], _created(name, out[i], system))
        if span.is_recording():
            _describe(span, [messages[i] for i in indexes], system)
            linked = [] if alone else [_contexts(messages[i], out[i]) for i in indexes]
            _link(span, [c for contexts in linked for c in contexts], system)
            if parent is not None:
                _link_ambient(span)
    try:
        yield out
    except Exception as error:
        for span in spans:
            _failed(span, error)
        raise
    finally:
        for span in spans:
            span.end()


def _carrying(message: Message) -> Message:
    """``message`` with the first of its :attr:`Message.traces` as its creation
    context, when it has no ``traceparent`` of its own."""
    if TRACEPARENT in message.headers:
        return message
    first = next((carrier for carrier in message.traces if TRACEPARENT in carrier), None)
    return message if first is None else _with(message, first)


def _contexts(sent: Message, out: Message) -> list[tuple[str, Mapping[str, str]]]:
    """The creation contexts ``out`` (``sent`` as published) stands for, each with its
    routing key: its header's, or every pod's of a batch."""
    if TRACEPARENT in sent.headers or not sent.traces:
        return [(out.routing_key, out.headers)]
    return [(out.routing_key, carrier) for carrier in sent.traces]


def _link_ambient(span: Span) -> None:
    """Link ``span`` (made a child of a pod's context) to the caller's current span when
    that is in another trace: the handling the publish is part of."""
    ambient = trace.get_current_span().get_span_context()
    if ambient.is_valid and ambient.trace_id != span.get_span_context().trace_id:
        span.add_link(ambient)


def _created(destination: str, message: Message, system: str) -> dict[str, str]:
    """The carrier of a ``create`` span for ``message`` (ended at once: it marks the
    message's creation)."""
    attributes = _attributes(destination, "create", "create", system)
    span = _tracer.start_span(
        f"create {destination}", kind=SpanKind.PRODUCER, attributes=attributes
    )
    if span.is_recording():
        _describe(span, [message], system)
    span.end()
    return telemetry.inject(set_span_in_context(span))


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
    system: str = SYSTEM,
) -> Iterator[Span]:
    """The span of one handler call on ``deliveries`` from ``queue`` (its name on the
    broker), current while the block runs. ``temporary``: a queue of one consumer
    (exclusive, auto-deleted), left out of the span name as the conventions ask.
    ``message_ids``: each delivery's AMQP message-id, where it has one;
    ``delivery_tag``: the broker's tag of a single delivery."""
    first = next((d for d in deliveries if TRACEPARENT in d.headers), None)
    parent = telemetry.extract(first.headers) if first is not None else None
    attributes = _attributes(queue, "process", "process", system)
    if temporary:
        attributes["messaging.destination.temporary"] = True
    span = _tracer.start_span(
        "process" if temporary else f"process {queue}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes=attributes,
    )
    if span.is_recording():
        _describe(span, deliveries, system)
        if len(deliveries) == 1 and message_ids and message_ids[0]:
            span.set_attribute("messaging.message.id", message_ids[0])
        if len(deliveries) == 1 and delivery_tag is not None:
            span.set_attribute("messaging.rabbitmq.message.delivery_tag", delivery_tag)
        ids = message_ids if len(deliveries) > 1 else ()
        _link(span, [(d.routing_key, d.headers) for d in deliveries], system, ids)
    with trace.use_span(
        span, end_on_exit=True, record_exception=False, set_status_on_exception=False
    ):
        try:
            yield span
        except Exception as error:
            _failed(span, error)
            raise


def _attributes(
    destination: str, operation_type: str, operation: str, system: str
) -> dict[str, str | bool]:
    """What a span has from its start (what a sampler may look at)."""
    return {
        "messaging.system": system,
        "messaging.destination.name": destination,
        "messaging.operation.type": operation_type,
        "messaging.operation.name": operation,
    }


def _describe(span: Span, messages: Sequence[Message] | Sequence[Delivery], system: str) -> None:
    """The routing key, when all ``messages`` have the same one, and how many there are
    when more than one (work done only for a span that records)."""
    keys = {message.routing_key for message in messages}
    if len(keys) == 1 and (key := next(iter(keys))):
        span.set_attribute(routing_key_attribute(system), key)
    if len(messages) > 1:
        span.set_attribute("messaging.batch.message_count", len(messages))


def _link(
    span: Span,
    messages: Sequence[tuple[str, Mapping[str, str]]],
    system: str,
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
            attributes[routing_key_attribute(system)] = key
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


__all__ = ["MAX_LINKS", "MEMORY_SYSTEM", "SYSTEM", "processing", "routing_key_attribute", "sending"]
