"""Flags of ``ksched run`` / ``ksched up`` that reach the services' Settings."""

from __future__ import annotations

from services.cli.main import _service_argv, _settings, _settings_argv, parser


def test_metrics_port_is_forwarded_to_the_services_with_metrics_only() -> None:
    args = parser().parse_args(["up", "--metrics-port", "9100", "--namespace", "x"])
    assert _service_argv(args) == {
        "informer": ["--metrics-port", "9100"],
        "queue": ["--metrics-port", "9101"],
        "scheduler": ["--metrics-port", "9102"],
        "binder": ["--metrics-port", "9103"],
        "descheduler": ["--metrics-port", "9104"],
    }
    any_port = parser().parse_args(["up", "--metrics-port", "0"])
    assert all(v == ["--metrics-port", "0"] for v in _service_argv(any_port).values())
    assert "--metrics-port" not in _settings_argv(args)  # not every child's
    assert _service_argv(parser().parse_args(["up"])) == {
        "informer": ["--metrics-port", "10260"],
        "queue": ["--metrics-port", "10261"],
        "scheduler": ["--metrics-port", "10262"],
        "binder": ["--metrics-port", "10263"],
        "descheduler": ["--metrics-port", "10264"],
    }


def test_metrics_port_reaches_the_settings() -> None:
    args = parser().parse_args(["run", "queue", "--metrics-port", "0"])
    assert _settings(args).metrics_port == 0
    assert _settings(parser().parse_args(["run", "binder"])).metrics_port is None


def test_up_runs_the_descheduler_when_given_a_policy() -> None:
    args = parser().parse_args(["up", "--policy", "p.yaml", "--dry-run"])
    assert _service_argv(args)["descheduler"] == [
        "--policy",
        "p.yaml",
        "--interval",
        "5m",
        "--dry-run",
        "--metrics-port",
        "10264",
    ]
    once = parser().parse_args(["up", "--policy", "p.yaml", "--interval", "0s"])
    assert _service_argv(once)["descheduler"][:4] == ["--policy", "p.yaml", "--interval", "0s"]
    assert "--policy" not in _settings_argv(args)  # the descheduler's alone


def test_a_wrong_interval_for_up_is_refused_before_anything_starts() -> None:
    import pytest

    from services.cli.errors import InputError

    with pytest.raises(InputError, match='--interval: "soon" is not a duration'):
        _service_argv(parser().parse_args(["up", "--policy", "p.yaml", "--interval", "soon"]))


def test_lease_ttl_reaches_the_descheduler_settings() -> None:
    args = parser().parse_args(["run", "descheduler", "--policy", "p", "--lease-ttl", "2s"])
    assert _settings(args).descheduler.lease_ttl == 2.0
