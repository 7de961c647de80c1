"""The README's ``ksched capacity`` example is what the command prints, line for line,
and its table of report fields names every field ``-o json`` prints."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from services.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
COMMAND = "$ ksched capacity ops/examples/cluster.yaml --pod ops/examples/web-pod.yaml"


def section() -> str:
    found = re.search(
        r"^## How many more fit: ksched capacity\n(.*?)(?=^## )", README.read_text(), re.S | re.M
    )
    assert found is not None, 'README.md has no "How many more fit" section'
    return found.group(1)


def argv() -> list[str]:
    """The README's command, its example files found from the checkout's root."""
    words = shlex.split(COMMAND[2:])[1:]
    return [str(ROOT / w) if w.startswith("ops/") else w for w in words]


def test_the_readme_shows_what_capacity_prints(capsys: pytest.CaptureFixture[str]) -> None:
    block = re.search(re.escape(COMMAND) + r"\n(.*?)\n```", section(), re.S)
    assert block is not None, f"README.md shows no output of `{COMMAND[2:]}`"
    assert main(argv()) == 0
    assert capsys.readouterr().out.splitlines() == block.group(1).splitlines()


def test_the_readme_names_every_report_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv(), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    documented = set(re.findall(r"^\| `(\w+)` \|", section(), re.M))
    # Only with a PodGroup, only with --allow-preemption:
    assert documented == {*report, "podGroup", "preemptions"}
    words = section()
    for name in [*report["pod"], *report["failReason"]]:
        assert f"`{name}`" in words, name
