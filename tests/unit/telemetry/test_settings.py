"""The standard OTEL_* variables: what each value means, and a bad value is one line
naming the variable and exit code 2."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBasedTraceIdRatio

from services.cli.main import main
from services.common.telemetry import (
    SpanLines,
    TelemetryError,
    TraceSettings,
    otlp_exporter,
    tracer_provider,
)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, TraceSettings()),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, TraceSettings(exporters=("otlp",))),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://j:4318/v1/traces"},
            TraceSettings(exporters=("otlp",)),
        ),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, TraceSettings()),
        ({"OTEL_TRACES_EXPORTER": "console"}, TraceSettings(exporters=("console",))),
        ({"OTEL_TRACES_EXPORTER": "otlp, Console"}, TraceSettings(exporters=("otlp", "console"))),
        (
            {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://j:4318"},
            TraceSettings(),
        ),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, TraceSettings(protocol="grpc")),
        (
            {
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
            },
            TraceSettings(protocol="http/protobuf"),
        ),
        ({"OTEL_SERVICE_NAME": "sched-eu"}, TraceSettings(service_name="sched-eu")),
        (
            {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
            TraceSettings(),
        ),
        (
            {"OTEL_TRACES_SAMPLER": "always_on", "OTEL_TRACES_SAMPLER_ARG": "ignored"},
            TraceSettings(),
        ),
        ({"OTEL_TRACES_SAMPLER": "traceidratio"}, TraceSettings()),
    ],
)
def test_values(environ: dict[str, str], expected: TraceSettings) -> None:
    assert TraceSettings.from_env(environ) == expected


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"OTEL_TRACES_EXPORTER": "zipkin"},
            'OTEL_TRACES_EXPORTER="zipkin": "zipkin" is not one of otlp, console, none',
        ),
        (
            {"OTEL_TRACES_EXPORTER": "otlp,"},
            'OTEL_TRACES_EXPORTER="otlp,": "" is not one of otlp, console, none',
        ),
        (
            {"OTEL_TRACES_EXPORTER": "none,console"},
            'OTEL_TRACES_EXPORTER="none,console": "none" goes alone',
        ),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            'OTEL_EXPORTER_OTLP_PROTOCOL="http/json" is not one of http/protobuf, grpc',
        ),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"},
            'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="udp" is not one of http/protobuf, grpc',
        ),
        (
            {"OTEL_TRACES_SAMPLER": "sometimes"},
            'OTEL_TRACES_SAMPLER="sometimes" is not one of always_on',
        ),
        (
            {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"},
            'OTEL_TRACES_SAMPLER_ARG="half" is not a ratio between 0 and 1',
        ),
        (
            {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"},
            'OTEL_TRACES_SAMPLER_ARG="1.5" is not a ratio between 0 and 1',
        ),
    ],
)
def test_bad_values_name_the_variable(environ: dict[str, str], message: str) -> None:
    with pytest.raises(TelemetryError) as raised:
        TraceSettings.from_env(environ)
    assert str(raised.value).startswith(message)


def test_no_exporter_no_provider() -> None:
    assert tracer_provider("queue", TraceSettings()) is None


def test_console_writes_each_span_as_it_ends() -> None:
    provider = tracer_provider("queue", TraceSettings(exporters=("console",)))
    assert provider is not None
    (processor,) = provider._active_span_processor._span_processors
    assert isinstance(processor, SimpleSpanProcessor)
    assert isinstance(processor.span_exporter, SpanLines)
    assert provider.resource.attributes["service.name"] == "ksched-queue"
    provider.shutdown()


def test_otlp_exports_in_batches_under_the_service_name() -> None:
    settings = TraceSettings(exporters=("otlp",), service_name="sched-eu")
    provider = tracer_provider("scheduler", settings)
    assert provider is not None
    (processor,) = provider._active_span_processor._span_processors
    assert isinstance(processor, BatchSpanProcessor)
    assert provider.resource.attributes["service.name"] == "sched-eu"
    provider.shutdown()


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_each_protocol_has_its_exporter(protocol: str) -> None:
    exporter = otlp_exporter(protocol)
    kind = "grpc" if protocol == "grpc" else "http"
    assert type(exporter).__module__ == f"opentelemetry.exporter.otlp.proto.{kind}.trace_exporter"
    exporter.shutdown()


def test_the_sdk_applies_the_sampler_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = TraceSettings(exporters=("console",))
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    provider = tracer_provider("binder", settings)
    assert provider is not None and provider.sampler is ALWAYS_OFF
    provider.shutdown()
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.1")
    provider = tracer_provider("binder", settings)
    assert provider is not None and isinstance(provider.sampler, ParentBasedTraceIdRatio)
    assert "0.1" in provider.sampler.get_description()
    provider.shutdown()


@pytest.mark.parametrize("argv", [["run", "informer"], ["up"], ["simulate", "-"]])
def test_a_bad_variable_is_one_line_and_exit_2(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "jaeger")
    assert main(argv) == 2
    err = capsys.readouterr().err
    command = "run informer" if argv[0] == "run" else argv[0]
    assert err == (
        f'ksched {command}: OTEL_TRACES_EXPORTER="jaeger": "jaeger" is not one of '
        "otlp, console, none\n"
    )
