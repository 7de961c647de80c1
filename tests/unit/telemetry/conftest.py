"""Spans of the code under test, caught by a provider of the test's own.

The process-wide tracer provider can be set once, and other tests rely on theirs: these
tests give the bus and the store a tracer of a private provider instead."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common.bus import tracing


@pytest.fixture
def provider() -> TracerProvider:
    return TracerProvider()


@pytest.fixture
def spans(
    provider: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "_tracer", provider.get_tracer("ksched.bus"))
    yield exporter
    provider.shutdown()
