"""``--feature-gates`` on every command: parsed once and installed before anything is
built, a bad value one line and exit 2, the queue's gates reaching QueueSettings, the
flag passed through ``ksched up`` to the services, ``KSCHED_FEATURE_GATES`` too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.cli.main import _settings, _settings_argv, main, parser
from services.common import features


@pytest.fixture(autouse=True)
def default_gates() -> Iterator[None]:
    yield
    features.install(features.DEFAULTS)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--feature-gates", "NoSuchGate=true", "asyncapi"],
            'ksched asyncapi: invalid argument "NoSuchGate=true" for "--feature-gates" flag: '
            "unrecognized feature gate: NoSuchGate",
        ),
        (
            ["simulate", "-", "--feature-gates", "SchedulerPopFromBackoffQ=yes"],
            'ksched simulate: invalid argument "SchedulerPopFromBackoffQ=yes" for '
            '"--feature-gates" flag: invalid value of SchedulerPopFromBackoffQ=yes, err: '
            'strconv.ParseBool: parsing "yes": invalid syntax',
        ),
        (
            ["run", "queue", "--feature-gates", "DynamicResourceAllocation=false"],
            'ksched run queue: invalid argument "DynamicResourceAllocation=false" for '
            '"--feature-gates" flag: cannot set feature gate DynamicResourceAllocation to '
            "false, feature is locked to true",
        ),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [line]


def test_the_environment_variable_is_read_when_the_flag_is_not_given(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KSCHED_FEATURE_GATES", "Nope=true")
    assert main(["asyncapi"]) == 2
    assert capsys.readouterr().err.strip() == (
        'ksched asyncapi: invalid argument "Nope=true" in KSCHED_FEATURE_GATES: '
        "unrecognized feature gate: Nope"
    )


def test_the_gates_are_installed_before_the_command_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["asyncapi", "--feature-gates", "SchedulerPopFromBackoffQ=false"]) == 0
    assert not features.enabled("SchedulerPopFromBackoffQ")
    assert features.enabled("SchedulerPreEnqueuePodStatus")  # untouched: its default
    capsys.readouterr()


def test_the_queue_gates_set_their_settings_only_when_given() -> None:
    args = parser().parse_args(["run", "queue"])
    features.install(features.parse("SchedulerPopFromBackoffQ=false"))
    queue = _settings(args).queue
    assert queue.pop_from_backoff is False
    assert queue.pre_enqueue_pod_status is True
    features.install(features.parse("SchedulerPreEnqueuePodStatus=false"))
    queue = _settings(args).queue
    assert (queue.pop_from_backoff, queue.pre_enqueue_pod_status) == (True, False)


def test_up_passes_the_flag_to_every_service() -> None:
    args = parser().parse_args(["up", "--feature-gates", "SchedulerPopFromBackoffQ=false"])
    argv = _settings_argv(args)
    assert argv[argv.index("--feature-gates") + 1] == "SchedulerPopFromBackoffQ=false"
    assert "--feature-gates" not in _settings_argv(parser().parse_args(["up"]))
    # The root's flag reaches the children too.
    root = parser().parse_args(["--feature-gates", "SchedulerPopFromBackoffQ=true", "up"])
    assert "--feature-gates" in _settings_argv(root)


def test_the_settings_record_the_text() -> None:
    args = parser().parse_args(
        ["run", "informer", "--feature-gates", "OpportunisticBatching=false"]
    )
    assert _settings(args).feature_gates == "OpportunisticBatching=false"
