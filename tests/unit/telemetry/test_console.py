"""The console exporter's one line per span, and ``ksched simulate --trace``."""

from __future__ import annotations

import io
import itertools
import re
import subprocess
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from services.common.telemetry import SpanLines

LINE = re.compile(
    r"^ *span (?P<name>.+?) (?P<kind>INTERNAL|PRODUCER|CONSUMER|CLIENT|SERVER) "
    r"(?P<ms>\d+\.\d{3})ms trace=(?P<trace>[0-9a-f]{32}) id=(?P<id>[0-9a-f]{16}) "
    r"parent=(?P<parent>[0-9a-f]{16}|-)(?P<rest>.*)$"
)
EXAMPLE = Path(__file__).parents[3] / "ops" / "examples" / "cluster.yaml"


def test_one_line_per_span_with_its_ids_and_attributes() -> None:
    out = io.StringIO()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(SpanLines(out)))
    tracer = provider.get_tracer("ksched.scheduler")
    with tracer.start_as_current_span("scheduling_cycle") as parent:
        with tracer.start_as_current_span(
            "publish ksched.bind",
            kind=trace.SpanKind.PRODUCER,
            attributes={"messaging.system": "rabbitmq", "ksched.plugins": ["A", "B"]},
        ) as child:
            child.set_attribute("ksched.message", 'two words "quoted"')
            child.set_status(trace.StatusCode.ERROR, "refused")
    first, second = out.getvalue().splitlines()
    match = LINE.match(first)
    assert match is not None, first
    assert match["name"] == "publish ksched.bind" and match["kind"] == "PRODUCER"
    assert match["trace"] == trace.format_trace_id(child.get_span_context().trace_id)
    assert match["id"] == trace.format_span_id(child.get_span_context().span_id)
    assert match["parent"] == trace.format_span_id(parent.get_span_context().span_id)
    assert match["rest"] == (
        ' status=ERROR:"refused" scope=scheduler messaging.system=rabbitmq'
        ' ksched.plugins=["A", "B"] ksched.message="two words \\"quoted\\""'
    )
    root = LINE.match(second)
    assert root is not None and root["name"] == "scheduling_cycle"
    assert root["kind"] == "INTERNAL" and root["parent"] == "-"


def test_simulate_trace_prints_each_pods_trace_on_stderr() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "simulate", str(EXAMPLE), "--trace"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "span " not in done.stdout  # the decisions alone
    headings = [line for line in done.stderr.splitlines() if line.startswith("trace ")]
    pods = [h for h in headings if ": pod demo/trainer" in h]
    assert len(pods) == 1, headings
    trace_id = pods[0].split()[1].rstrip(":")
    spans = [
        m for line in done.stderr.splitlines() if (m := LINE.match(line)) and m["trace"] == trace_id
    ]
    by_name = {m["name"]: m for m in spans}
    chain = ["ingest", "scheduling_queue.pop", "scheduling_cycle", "binding_cycle"]
    for parent, child in itertools.pairwise(chain):
        assert by_name[child]["parent"] == by_name[parent]["id"], (child, parent)
    assert by_name["create ksched.events"]["kind"] == "PRODUCER"  # where the trace starts
    assert by_name["ingest"]["parent"] == by_name["create ksched.events"]["id"]
    assert "ksched.pod=demo/trainer" in by_name["scheduling_cycle"]["rest"]
    processes = [
        m
        for line in done.stderr.splitlines()
        if (m := LINE.match(line)) and m["kind"] == "CONSUMER"
    ]
    assert any("messaging.destination.name=ksched.informer.events" in m["rest"] for m in processes)
