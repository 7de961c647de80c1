"""Flags of ``ksched run`` / ``ksched up`` that reach the services' Settings, and those a
service would ignore, which `run` refuses and `up` keeps from it."""

from __future__ import annotations

import os

import pytest

from services.cli.errors import InputError
from services.cli.main import _settings, _settings_argv, main, parser
from services.cli.serviceflags import argv_for
from services.cli.up import service_argv


def test_metrics_port_is_forwarded_to_the_services_with_metrics_only() -> None:
    args = parser().parse_args(["up", "--metrics-port", "9100", "--namespace", "x"])
    assert service_argv(args) == {
        "informer": ["--metrics-port", "9100"],
        "queue": ["--metrics-port", "9101"],
        "scheduler": ["--metrics-port", "9102"],
        "binder": ["--metrics-port", "9103"],
        "descheduler": ["--metrics-port", "9104"],
    }
    any_port = parser().parse_args(["up", "--metrics-port", "0"])
    assert all(v == ["--metrics-port", "0"] for v in service_argv(any_port).values())
    assert "--metrics-port" not in _settings_argv(args)  # not every child's
    assert service_argv(parser().parse_args(["up"])) == {
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
    assert service_argv(args)["descheduler"] == [
        "--policy",
        "p.yaml",
        "--interval",
        "5m",
        "--dry-run",
        "--metrics-port",
        "10264",
    ]
    once = parser().parse_args(["up", "--policy", "p.yaml", "--interval", "0s"])
    assert service_argv(once)["descheduler"][:4] == ["--policy", "p.yaml", "--interval", "0s"]
    assert "--policy" not in _settings_argv(args)  # the descheduler's alone


def test_a_wrong_interval_for_up_is_refused_before_anything_starts() -> None:
    with pytest.raises(InputError, match='--interval: "soon" is not a duration'):
        service_argv(parser().parse_args(["up", "--policy", "p.yaml", "--interval", "soon"]))


@pytest.mark.parametrize("service", ["informer", "queue", "descheduler"])
def test_the_leader_election_flags_reach_the_single_writer_roles(service: str) -> None:
    argv = ["run", service, "--leader-elect=false", "--leader-elect-lease-duration", "1m"]
    argv += ["--leader-elect-renew-deadline", "40s", "--leader-elect-retry-period", "5s"]
    election = _settings(parser().parse_args(argv)).leader_election
    assert (election.leader_elect, election.lease_duration) == (False, 60.0)
    assert (election.renew_deadline, election.retry_period) == (40.0, 5.0)
    defaults = _settings(parser().parse_args(["run", service])).leader_election
    assert (defaults.leader_elect, defaults.lease_duration) == (True, 15.0)
    assert (defaults.renew_deadline, defaults.retry_period) == (10.0, 2.0)


def test_the_leader_election_durations_come_from_the_environment_under_their_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KSCHED_LEADER_ELECT_LEASE_DURATION", "30s")
    monkeypatch.setenv("KSCHED_LEADER_ELECT_RETRY_PERIOD", "1s")
    argv = ["run", "queue", "--leader-elect-retry-period", "3s"]
    election = _settings(parser().parse_args(argv)).leader_election
    assert (election.lease_duration, election.retry_period) == (30.0, 3.0)


def test_up_gives_the_leader_election_flags_to_the_single_writer_roles_only() -> None:
    args = parser().parse_args(["up", "--leader-elect=false", "--leader-elect-retry-period", "1s"])
    given = _settings_argv(args)
    for service in ("informer", "queue", "descheduler"):
        kept = argv_for(service, given)
        assert "--leader-elect=false" in kept and "--leader-elect-retry-period" in kept
    for service in ("scheduler", "binder"):
        assert not any(w.startswith("--leader-elect") for w in argv_for(service, given))


def test_the_prometheus_token_file_reaches_the_descheduler_service() -> None:
    """`deschedule` had the flag and the service did not: its Prometheus provider could
    only use a mounted service-account token."""
    argv = ["run", "descheduler", "--policy", "p", "--prometheus-token-file", "t"]
    assert _settings(parser().parse_args(argv)).descheduler.prometheus_token_file == "t"
    up = parser().parse_args(["up", "--policy", "p", "--prometheus-token-file", "t"])
    given = service_argv(up)["descheduler"]
    assert given[given.index("--prometheus-token-file") + 1] == os.path.abspath("t")


NO_BROKER = "amqp://guest:guest@127.0.0.1:1/"
ONLY = "is for the descheduler only"


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["informer", "--policy", "p.yaml"], f"--policy {ONLY}: the informer does not use it"),
        (["scheduler", "--interval", "5m"], f"--interval {ONLY}: the scheduler does not use it"),
        (["binder", "--dry-run"], f"--dry-run {ONLY}: the binder does not use it"),
        (
            ["scheduler", "--leader-elect=false"],
            "--leader-elect is for the informer, the queue and the descheduler only: the "
            "scheduler does not use it",
        ),
        (
            ["binder", "--leader-elect-lease-duration", "1m"],
            "--leader-elect-lease-duration is for the informer, the queue and the descheduler",
        ),
        (
            ["scheduler", "--prometheus-token-file", "t"],
            f"--prometheus-token-file {ONLY}: the scheduler does not use it",
        ),
        (
            ["informer", "--config", "c.yaml"],
            "--config is for the queue, the scheduler, the binder and the descheduler only: "
            "the informer does not use it",
        ),
        (["queue", "--seed", "1"], "--seed is for the scheduler only: the queue does not use it"),
        (["binder", "--explain"], "--explain is for the scheduler only: the binder does not"),
        (["informer", "--replica", "r"], "--replica is for the scheduler only: the informer"),
        (["descheduler", "--no-scheduled-events"], "--no-scheduled-events is for the binder only"),
        (["scheduler", "--event-log", "e.jsonl"], "--event-log is for the informer only"),
    ],
)
def test_run_refuses_a_flag_its_service_would_ignore(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once, `run scheduler --interval 5m` started a scheduler that ignored the interval.
    Refused before connecting: the broker here is unreachable."""
    assert main(["run", *argv, "--amqp-url", NO_BROKER]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"ksched run {argv[0]}: {line}"), err


@pytest.mark.parametrize(
    "flags", [["--interval", "5m"], ["--dry-run"], ["--prometheus-token-file", "t"]]
)
def test_up_refuses_the_descheduler_flags_without_a_policy(flags: list[str]) -> None:
    with pytest.raises(InputError, match=f"{flags[0]} is the descheduler's"):
        service_argv(parser().parse_args(["up", *flags]))


def test_up_gives_each_service_only_the_flags_it_honours() -> None:
    given = ["--namespace", "n", "--event-log=e.jsonl", "--config", "c.yaml", "--seed", "1"]
    given += ["--explain", "--no-scheduled-events"]
    assert argv_for("informer", given) == ["--namespace", "n", "--event-log=e.jsonl"]
    assert argv_for("queue", given) == ["--namespace", "n", "--config", "c.yaml"]
    assert argv_for("scheduler", given) == [
        *("--namespace", "n", "--config", "c.yaml", "--seed", "1", "--explain")
    ]
    assert argv_for("binder", given) == [
        *("--namespace", "n", "--config", "c.yaml", "--no-scheduled-events")
    ]
