"""The README's DRAExtendedResource example is what ``ksched simulate
ops/examples/gpu-extended-resource.yaml -o json`` prints, line for line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
COMMAND = "$ ksched simulate ops/examples/gpu-extended-resource.yaml -o json"


def test_the_readme_shows_what_simulate_prints(capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "README.md").read_text()
    block = re.search(re.escape(COMMAND) + r"\n(.*?)\n```", text, re.S)
    assert block is not None, f"README.md shows no output of `{COMMAND[2:]}`"
    shown = block.group(1).splitlines()
    assert len(shown) == 6
    example = ROOT / "ops/examples/gpu-extended-resource.yaml"
    assert main(["simulate", str(example), "-o", "json"]) == 0
    assert capsys.readouterr().out.splitlines() == shown
