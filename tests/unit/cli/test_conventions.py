"""CLI conventions: ``-`` for standard input, ``-o`` for every ``--output``, ``-o yaml``
where the output is objects, ``--version``, and no option that is accepted but does
nothing (bench --namespace; --metrics-port of a service that exports no metrics)."""

from __future__ import annotations

import argparse
import io
import json
import sys
from importlib import metadata

import pytest
import yaml

from services.cli.main import main, parser
from services.cli.output import render_object
from tests.unit.cli.support import EXAMPLE, EXPECTED_BINDINGS, EXPECTED_FAILURE

NO_BROKER = "amqp://guest:guest@127.0.0.1:1/"


def subcommands() -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices)


def test_simulate_reads_the_cluster_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(EXAMPLE.read_text()))
    assert main(["simulate", "-", "-o", "json"]) == 0
    decisions = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    bindings = {d["pod"]: d["node"] for d in decisions if d["kind"] == "Binding"}
    assert bindings == EXPECTED_BINDINGS
    assert [d["message"] for d in decisions if d["kind"] == "FailedScheduling"] == [
        EXPECTED_FAILURE
    ]


def test_a_bad_document_on_stdin_is_named_as_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = "kind: Pod\nmetadata: {name: p}\nspec: {overhead: {cpu: -1}}\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(bad))
    assert main(["simulate", "-"]) == 2
    assert capsys.readouterr().err.startswith("ksched simulate: <stdin>: document 1 (pod ")


def test_every_output_option_has_the_short_form() -> None:
    with_output = {
        name: action.option_strings
        for name, sub in subcommands().items()
        for action in sub._actions
        if "--output" in action.option_strings
    }
    assert set(with_output) == {
        "queue",
        "waiting",
        "leases",
        "simulate",
        "deschedule",
        "replay",
        "watch",
        "dead-letters",
        "capacity",
        "compare",
    }
    assert all(options == ["-o", "--output"] for options in with_output.values())


@pytest.mark.parametrize(
    ("command", "formats"),
    [
        ("watch", ["json", "yaml"]),  # decision objects (Binding, Event)
        ("queue", ["table", "json"]),
        ("simulate", ["json", "table", "annotations"]),
        ("deschedule", ["json", "table"]),
        ("replay", ["json", "table"]),
        ("capacity", ["table", "json", "yaml"]),  # a report object, as cluster-capacity's
        ("compare", ["table", "json"]),
    ],
)
def test_output_formats(command: str, formats: list[str]) -> None:
    sub = subcommands()[command]
    (action,) = [a for a in sub._actions if "--output" in a.option_strings]
    assert list(action.choices or []) == formats


def test_watch_output_yaml_reaches_watch() -> None:
    args = parser().parse_args(["watch", "-o", "yaml"])
    assert args.output == "yaml"
    assert parser().parse_args(["watch"]).output == "json"


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_objects_render_one_per_line_or_document_and_read_back(output: str) -> None:
    objects = [
        {"kind": "Binding", "metadata": {"name": "a", "namespace": "d"}, "target": {"name": "n"}},
        {"kind": "Event", "message": "0/3 nodes are available: …", "count": 1},
    ]
    text = "".join(render_object(obj, output) for obj in objects)
    if output == "json":
        assert [json.loads(line) for line in text.splitlines()] == objects
    else:
        assert text.startswith("---\n")
        assert list(yaml.safe_load_all(text)) == objects


def test_version_comes_from_the_package_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"ksched {metadata.version('ksched')}\n"


def test_bench_takes_no_namespace(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "SchedulingBasic", "--mode", "cycle", "--nodes", "5", "--pods", "1"]
    with pytest.raises(SystemExit) as done:
        main([*argv, "--namespace", "mine"])
    assert done.value.code == 2
    assert "unrecognized arguments: --namespace mine" in capsys.readouterr().err


def test_a_metrics_port_in_use_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["run", "informer", "--metrics-port", str(port), "--amqp-url", "memory://"]
        assert main([*argv, "--redis-url", "memory://", "--event-log", "memory://"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        f"ksched run informer: --metrics-port {port}: cannot listen: Address already in use"
    ), err
