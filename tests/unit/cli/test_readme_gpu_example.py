"""The README's DRA example is what ``ksched simulate ops/examples/gpu-cluster.yaml -o
json`` prints: each line it shows is printed, in that order (``...`` stands for lines
left out)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
COMMAND = "$ ksched simulate ops/examples/gpu-cluster.yaml -o json"


def readme_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(re.escape(COMMAND) + r"\n(.*?)\n```", text, re.S)
    assert block is not None, f"README.md shows no output of `{COMMAND[2:]}`"
    return [line for line in block.group(1).splitlines() if line != "..."]


def test_the_readme_shows_what_simulate_prints(capsys: pytest.CaptureFixture[str]) -> None:
    shown = readme_lines()
    assert len(shown) >= 5
    assert main(["simulate", str(ROOT / "ops/examples/gpu-cluster.yaml"), "-o", "json"]) == 0
    printed = capsys.readouterr().out.splitlines()
    positions = [printed.index(line) if line in printed else -1 for line in shown]
    assert -1 not in positions, [s for s, p in zip(shown, positions, strict=True) if p < 0]
    assert positions == sorted(positions)
