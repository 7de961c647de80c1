"""One trace per scheduling attempt: ingest → queue → scheduling cycle → binding, joined
through the trace context the messages carry, and handed on in the Binding's headers."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from contracts import topology
from services.cli.embedded import EmbeddedCluster
from services.common.bus import Delivery, Message

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"

_exporter = InMemorySpanExporter()


def exporter() -> InMemorySpanExporter:
    """The process-wide provider can be set once; later calls reuse it."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    _exporter.clear()
    return _exporter


def event(obj: dict[str, object]) -> bytes:
    return msgspec.json.encode({"type": "ADDED", "object": obj})


NODE = {
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
}
POD = {
    "kind": "Pod",
    "metadata": {"name": "traced", "namespace": "t"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
}


async def test_one_trace_from_ingest_to_binding() -> None:
    spans = exporter()
    cluster = EmbeddedCluster(hold=False)
    headers: list[dict[str, str]] = []

    async def keep_headers(deliveries: Sequence[Delivery]) -> None:
        headers.extend(dict(d.headers) for d in deliveries if d.routing_key.startswith("binding."))

    await cluster.start()
    try:
        spec = topology.QueueSpec(
            "test.bindings",
            (topology.QueueBinding(topology.DECISIONS.name, "binding.*"),),
            durable=False,
            exclusive=True,
            auto_delete=True,
            dead_letter=False,
        )
        await cluster.bus.consume_raw(spec, keep_headers)
        await cluster.bus.publish([Message(topology.EVENTS.name, "node.added", event(NODE))])
        await cluster.settle()
        await cluster.bus.publish(
            [Message(topology.EVENTS.name, "pod.added", event(POD), {"traceparent": TRACEPARENT})]
        )
        await cluster.settle()
    finally:
        await cluster.stop()
    assert [d.pod for d in cluster.decisions] == ["t/traced"]
    in_trace = {
        s.name for s in spans.get_finished_spans() if f"{s.context.trace_id:032x}" == TRACE_ID
    }
    for name in ("ingest", "scheduling_queue.pop", "scheduling_cycle", "binding_cycle"):
        assert name in in_trace, f"{name} not in the pod's trace: {sorted(in_trace)}"
    assert len(headers) == 1 and headers[0]["traceparent"].split("-")[1] == TRACE_ID
