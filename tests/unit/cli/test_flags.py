"""Flags of ``ksched run`` / ``ksched up`` that reach the services' Settings."""

from __future__ import annotations

from services.cli.main import _service_argv, _settings, _settings_argv, parser


def test_metrics_port_is_forwarded_to_the_services_with_metrics_only() -> None:
    args = parser().parse_args(["up", "--metrics-port", "9100", "--namespace", "x"])
    assert _service_argv(args) == {
        "queue": ["--metrics-port", "9100"],
        "binder": ["--metrics-port", "9101"],
        "scheduler": ["--metrics-port", "9102"],
    }
    any_port = parser().parse_args(["up", "--metrics-port", "0"])
    assert _service_argv(any_port) == {
        "queue": ["--metrics-port", "0"],
        "binder": ["--metrics-port", "0"],
        "scheduler": ["--metrics-port", "0"],
    }
    assert "--metrics-port" not in _settings_argv(args)  # not every child's
    assert _service_argv(parser().parse_args(["up"])) == {}


def test_metrics_port_reaches_the_settings() -> None:
    args = parser().parse_args(["run", "queue", "--metrics-port", "0"])
    assert _settings(args).metrics_port == 0
    assert _settings(parser().parse_args(["run", "binder"])).metrics_port is None
