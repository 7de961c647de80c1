"""The README's ``ksched compare`` example is what the command prints, line for line
(but the wall times), and its table of fields names every field of a run in ``-o json``."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from services.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
COMMAND = (
    "$ ksched compare ops/examples/cluster.yaml --config ops/examples/scheduler-config.yaml "
    "--config ops/examples/binpack-config.yaml"
)
WALL_TIME = re.compile(r"\d+\.\d\d s")


def section() -> str:
    found = re.search(
        r"^## Two configurations compared: ksched compare\n(.*?)(?=^## )",
        README.read_text(),
        re.S | re.M,
    )
    assert found is not None, 'README.md has no "Two configurations compared" section'
    return found.group(1)


def argv() -> list[str]:
    """The README's command, run from the checkout's root (the table shows the paths)."""
    return shlex.split(COMMAND[2:])[1:]


@pytest.fixture(autouse=True)
def at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_the_readme_shows_what_compare_prints(capsys: pytest.CaptureFixture[str]) -> None:
    block = re.search(re.escape(COMMAND) + r"\n(.*?)\n```", section(), re.S)
    assert block is not None, f"README.md shows no output of `{COMMAND[2:]}`"
    assert main(argv()) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = block.group(1).splitlines()
    assert [WALL_TIME.sub("_ s", line) for line in printed] == [
        WALL_TIME.sub("_ s", line) for line in shown
    ]
    assert [line for line in printed if line.startswith("wall time")] != []


def test_the_readme_names_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv(), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    words = section()
    for name in [*report, *report["placedDifferently"][0]]:
        assert f'"{name}"' in words, name
    rows = re.findall(r"^\| (`\w+`(?:, `\w+`)*) \|", words, re.M)
    documented = {name for row in rows for name in re.findall(r"`(\w+)`", row)}
    assert documented == set(report["a"])
    run = report["a"]
    nested = [*run["nodes"][0], *run["nodes"][0]["cpu"], *run["utilization"]["cpu"]]
    nested += [*run["largestFree"]["cpu"], *run["failedScheduling"]["NodeResourcesFit"]]
    for name in nested:
        assert f"`{name}`" in words, name
