"""A test's own OTLP/HTTP trace receiver: what a service's OTLP exporter sends to Jaeger,
kept in memory (``http/protobuf`` on ``/v1/traces``, answered 200 with an empty export
response)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanProto

KINDS = {
    SpanProto.SPAN_KIND_INTERNAL: "INTERNAL",
    SpanProto.SPAN_KIND_SERVER: "SERVER",
    SpanProto.SPAN_KIND_CLIENT: "CLIENT",
    SpanProto.SPAN_KIND_PRODUCER: "PRODUCER",
    SpanProto.SPAN_KIND_CONSUMER: "CONSUMER",
}


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    kind: str
    root: bool
    attributes: dict[str, Any]

    def __repr__(self) -> str:
        return f"{self.service}:{self.name} {self.kind}"


class OTLPReceiver:
    """Serves on 127.0.0.1 (a free port) from a thread; :attr:`spans` holds every span
    received, :attr:`exports` counts the requests."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.exports = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver._received(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _received(self, request: ExportTraceServiceRequest) -> None:
        spans = []
        for resource in request.resource_spans:
            resource_attributes = {a.key: _value(a.value) for a in resource.resource.attributes}
            service = str(resource_attributes.get("service.name", ""))
            for scope in resource.scope_spans:
                for span in scope.spans:
                    spans.append(
                        ReceivedSpan(
                            service,
                            span.name,
                            KINDS.get(span.kind, "UNSPECIFIED"),
                            not span.parent_span_id,
                            {a.key: _value(a.value) for a in span.attributes},
                        )
                    )
        with self._lock:
            self.spans.extend(spans)
            self.exports += 1


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None
