"""The README's ``-o annotations`` example is what the command prints for that pod, and
its table names every annotation the command writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli import annotations as a
from services.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
EXAMPLE = ROOT / "ops" / "examples" / "cluster.yaml"


def section() -> str:
    found = re.search(
        r"^### Results in the simulator's format\n(.*?)(?=^##)", README.read_text(), re.S | re.M
    )
    assert found is not None, 'README.md has no "Results in the simulator\'s format" section'
    return found.group(1)


def printed(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["simulate", str(EXAMPLE), "-o", "annotations"]) == 0
    return {p["metadata"]["name"]: p for p in yaml.safe_load_all(capsys.readouterr().out)}


def test_the_readme_shows_what_simulate_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert "ksched simulate ops/examples/cluster.yaml -o annotations" in section()
    block = re.search(r"```yaml\n(.*?)```", section(), re.S)
    assert block is not None, "the section shows no pod"
    shown = yaml.safe_load(block.group(1))["metadata"]
    meta = dict(printed(capsys)[shown["name"]]["metadata"])
    meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k != a.HISTORY}
    assert shown == meta


def test_the_readme_names_every_annotation(capsys: pytest.CaptureFixture[str]) -> None:
    pod = printed(capsys)["batch-1"]
    written = set(pod["metadata"]["annotations"])
    table = set(re.findall(r"`([a-z-]+)`", "\n".join(re.findall(r"^\| (.*?) \|", section(), re.M))))
    assert {a.PREFIX + name for name in table} == written
