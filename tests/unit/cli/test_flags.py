"""Flags of ``ksched run`` / ``ksched up`` that reach the services' Settings."""

from __future__ import annotations

import pytest

from services.cli.main import _settings, _settings_argv, parser


@pytest.mark.parametrize("command", [["run", "queue"], ["up"]])
def test_metrics_port_is_forwarded_to_the_service_processes(command: list[str]) -> None:
    args = parser().parse_args([*command, "--metrics-port", "9100", "--namespace", "x"])
    argv = _settings_argv(args)
    assert argv[argv.index("--metrics-port") + 1] == "9100"
    assert "--metrics-port" not in _settings_argv(parser().parse_args(command))


def test_metrics_port_reaches_the_settings() -> None:
    args = parser().parse_args(["run", "queue", "--metrics-port", "0"])
    assert _settings(args).metrics_port == 0
    assert _settings(parser().parse_args(["run", "queue"])).metrics_port is None
