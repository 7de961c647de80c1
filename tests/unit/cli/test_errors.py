"""One error style: every ``ksched`` failure is one line on stderr naming what failed and
how to fix it, with the exit code ``ksched --help`` documents; ``-v`` adds the traceback.

The broker-down and Redis-down cases point at 127.0.0.1:1, where nothing listens, so a
connection is refused at once (each test is bounded by its timeout)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from services.cli import main as cli_main
from services.cli.errors import EXIT_CODES
from services.cli.main import main
from services.cli.up import service_argv
from services.framework.api.registry import ConfigError
from services.framework.config import load_config

NO_BROKER = "amqp://guest:s3cret@127.0.0.1:1/"
NO_REDIS = "redis://:s3cret@127.0.0.1:1/0"
NODE = "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', pods: '5'}}\n"


def failure(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a failure printed on stderr (and nothing on stdout)."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    return lines[0]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("argv", "stdin"),
    [
        (["watch", "--amqp-url", NO_BROKER], ""),
        (["publish", "-", "--amqp-url", NO_BROKER], NODE),
    ],
    ids=["watch", "publish"],
)
def test_the_broker_down_is_one_line_naming_it_and_the_fix(
    argv: list[str],
    stdin: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    assert main([*argv, "--namespace", "h1errors"]) == 3
    line = failure(capsys)
    command = argv[0]
    assert line == (
        f"ksched {command}: cannot connect to RabbitMQ at amqp://guest:***@127.0.0.1:1/: "
        "connection refused (is it running? see --amqp-url / KSCHED_AMQP_URL)"
    )


@pytest.mark.timeout(30)
def test_redis_down_is_one_line_naming_it_and_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["queue", "--redis-url", NO_REDIS]) == 3
    assert failure(capsys) == (
        "ksched queue: cannot connect to Redis at redis://:***@127.0.0.1:1/0: "
        "connection refused (is it running? see --redis-url / KSCHED_REDIS_URL)"
    )


@pytest.mark.timeout(30)
def test_watch_with_the_broker_down_prints_one_line_as_a_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "watch", "--amqp-url", NO_BROKER],
        capture_output=True,
        text=True,
        timeout=25,
        cwd=tmp_path,
    )
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [
        "ksched watch: cannot connect to RabbitMQ at amqp://guest:***@127.0.0.1:1/: "
        "connection refused (is it running? see --amqp-url / KSCHED_AMQP_URL)"
    ]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["simulate", "missing.yaml"], "ksched simulate: cannot open missing.yaml: "),
        (["publish", "missing.yaml"], "ksched publish: cannot open missing.yaml: "),
        (["replay", "missing.log"], "ksched replay: cannot open missing.log: "),
        (["simulate", "-", "--config", "missing.yaml"], "missing.yaml"),
    ],
    ids=["simulate", "publish", "replay", "config"],
)
def test_a_missing_file_is_named(
    argv: list[str],
    expected: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO(NODE))
    assert main(argv) == 2
    line = failure(capsys)
    assert line.startswith("ksched") and expected in line
    assert not (tmp_path / "missing.log").exists()  # replay must not create the log


def test_a_corrupt_event_log_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text('{"seq": 1, "not": "an event"}\n{"seq": 2}\n')
    assert main(["replay", str(log)]) == 2
    line = failure(capsys)
    assert line.startswith(f"ksched replay: {log}:1: ")


def test_a_bad_manifest_is_one_line_with_the_document_and_field(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("kind: Pod\nmetadata: [unclosed\n"))
    assert main(["publish", "-", "--amqp-url", NO_BROKER]) == 2  # refused before connecting
    assert failure(capsys).startswith("ksched publish: <stdin>:3:1: not valid YAML")


def test_a_yaml_syntax_error_names_the_file_line_and_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """PyYAML names its input ``"<unicode string>"``: the line names the file instead."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("kind: Pod\nmetadata: {name: a\n  x: [\n")
    assert main(["simulate", str(cluster)]) == 2
    assert failure(capsys) == (
        f"ksched simulate: {cluster}:3:4: not valid YAML: expected ',' or '}}', but got ':'"
    )


def test_publish_refuses_what_the_informer_would_before_connecting(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The informer's own validation, locally: exit 2 naming the document and the field,
    and nothing published (the broker, unreachable here, is never asked)."""
    pod = "kind: Pod\nmetadata: {name: Bad_Name, namespace: d}\nspec: {containers: [{name: c}]}\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(NODE + "---\n" + pod))
    assert main(["publish", "-", "--amqp-url", NO_BROKER]) == 2
    assert failure(capsys).startswith(
        "ksched publish: <stdin>: document 2 (pod d/Bad_Name): field metadata.name: "
        "Invalid value: 'Bad_Name': a lowercase RFC 1123 subdomain"
    )


@pytest.mark.timeout(30)
def test_publish_no_validate_leaves_the_check_to_the_informer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--no-validate publishes as before: here it gets as far as the (absent) broker."""
    pod = "kind: Pod\nmetadata: {name: Bad_Name, namespace: d}\nspec: {containers: [{name: c}]}\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(pod))
    assert main(["publish", "-", "--no-validate", "--amqp-url", NO_BROKER]) == 3
    assert failure(capsys).startswith("ksched publish: cannot connect to RabbitMQ")


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["simulate", "cluster.yaml", "--nodez"], "simulate"),
        (["run", "binder", "--nodez"], "run"),
        (["publish", "-", "--nodez", "x"], "publish"),
    ],
)
def test_a_flag_typo_prints_the_commands_usage_and_one_error_line(
    argv: list[str], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: ksched {command} "), err
    extras = " ".join(argv[argv.index("--nodez") :])
    assert err.splitlines()[-1] == f"ksched {command}: error: unrecognized arguments: {extras}"


def test_a_bad_config_prints_its_own_message_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles: [{schedulerName: s, plugins: {filter: {enabled: [{name: NoSuchPlugin}]}}}]\n"
    )
    with pytest.raises(ConfigError) as error:
        load_config(str(config))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(NODE)
    assert main(["simulate", str(cluster), "--config", str(config)]) == 2
    assert failure(capsys) == f"ksched: {error.value}"


def test_verbose_adds_the_traceback_before_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["-v", "queue", "--redis-url", NO_REDIS],
        ["queue", "-v", "--redis-url", NO_REDIS],
    ):
        assert main(argv) == 3
        err = capsys.readouterr().err
        assert err.startswith("Traceback (most recent call last)")
        assert err.splitlines()[-1].startswith("ksched queue: cannot connect to Redis")
        assert "s3cret" not in err


def test_a_bug_shows_its_traceback_and_exit_code_70(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(args: object) -> int:
        raise TypeError("unexpected None")

    monkeypatch.setattr(cli_main, "_dispatch", broken)
    assert main(["asyncapi"]) == 70
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.splitlines()[-1] == (
        "ksched asyncapi: internal error: TypeError: unexpected None (a bug: please report it)"
    )


def test_an_interrupt_exits_130_quietly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main, "_dispatch", interrupted)
    assert main(["asyncapi"]) == 130
    assert capsys.readouterr().err == ""


def test_help_documents_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out
    documented = {int(line.split()[0]) for line in out.split("exit codes:")[1].splitlines()[1:8]}
    assert documented == {code for code, _ in EXIT_CODES} == {0, 1, 2, 3, 70, 130, 143}


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["watch", "--limit", "-1"],
         "ksched watch: error: argument --limit: '-1': a whole number, 1 or more"),
        (["watch", "--limit", "0"],
         "ksched watch: error: argument --limit: '0': a whole number, 1 or more"),
        (["queue", "--limit", "-5"],
         "ksched queue: error: argument --limit: '-5': a whole number, 0 or more"),
        (["dead-letters", "list", "--limit", "-2"],
         "ksched dead-letters: error: argument --limit: '-2': a whole number, 1 or more"),
        (["bench", "SchedulingBasic", "--nodes", "-3"],
         "ksched bench: error: argument --nodes: '-3': a whole number, 1 or more"),
        (["bench", "SchedulingBasic", "--pods", "0"],
         "ksched bench: error: argument --pods: '0': a whole number, 1 or more"),
        (["bench", "SchedulingBasic", "--init-pods", "-1"],
         "ksched bench: error: argument --init-pods: '-1': a whole number, 0 or more"),
        (["bench", "QueueOps", "--pods", "many"],
         "ksched bench: error: argument --pods: 'many': not a whole number"),
        (["run", "scheduler", "--metrics-port", "99999"],
         "ksched run: error: argument --metrics-port: '99999': a whole number, 0 to 65535"),
        (["up", "--metrics-port", "-1"],
         "ksched up: error: argument --metrics-port: '-1': a whole number, 0 to 65535"),
    ],
)  # fmt: skip
def test_a_count_out_of_range_is_a_usage_error(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A negative count once made ``watch --limit -1`` wait forever and ``bench --nodes
    -3`` report a run of nothing; argparse refuses them, naming the flag."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == error


@pytest.mark.parametrize(
    ("argv", "attribute", "value"),
    [
        (["queue", "--limit", "0"], "limit", 0),
        (["bench", "SchedulingBasic", "--init-pods", "0"], "init_pods", 0),
        (["bench", "SchedulingBasic", "--nodes", "1"], "nodes", 1),
        (["run", "binder", "--metrics-port", "0"], "metrics_port", 0),
        (["run", "binder", "--metrics-port", "65535"], "metrics_port", 65535),
    ],
)
def test_the_smallest_count_is_taken(argv: list[str], attribute: str, value: int) -> None:
    assert getattr(cli_main.parser().parse_args(argv), attribute) == value


def test_up_refuses_a_metrics_port_whose_last_service_port_is_out_of_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``up --metrics-port P`` gives P to P+4 to its five services: 65531 is the last P."""
    assert main(["up", "--metrics-port", "65533", "--amqp-url", NO_BROKER]) == 2
    assert failure(capsys) == (
        "ksched up: --metrics-port 65533: up numbers 5 ports from it, and the last, 65537, "
        "is above 65535"
    )
    ports = service_argv(cli_main.parser().parse_args(["up", "--metrics-port", "65531"]))
    assert ports["descheduler"][-2:] == ["--metrics-port", "65535"]
