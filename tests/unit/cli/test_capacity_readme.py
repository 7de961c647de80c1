"""The README's ``ksched capacity`` examples (one pod, and a mix with ``--ratio``) are
what the command prints, line for line, and its table of report fields names every
field ``-o json`` prints."""

from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path

import pytest

from services.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
COMMAND = "$ ksched capacity ops/examples/cluster.yaml --pod ops/examples/web-pod.yaml"
MIX = f"{COMMAND} --pod - --ratio 3:1 <<'EOF'"
"""The mix example's command; the db pod follows it as a here-document."""


def section() -> str:
    found = re.search(
        r"^## How many more fit: ksched capacity\n(.*?)(?=^## )", README.read_text(), re.S | re.M
    )
    assert found is not None, 'README.md has no "How many more fit" section'
    return found.group(1)


def argv(command: str = COMMAND) -> list[str]:
    """The README's ``command`` (without its here-document), its example files found
    from the checkout's root."""
    words = shlex.split(command[2:].removesuffix(" <<'EOF'"))[1:]
    return [str(ROOT / w) if w.startswith("ops/") else w for w in words]


def mix_example(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The README's mix example as argv, its here-document put on standard input, and
    the output shown (as lines)."""
    block = re.search(re.escape(MIX) + r"\n(.*?\n)EOF\n(.*?)\n```", section(), re.S)
    assert block is not None, f"README.md shows no output of `{MIX[2:]}`"
    monkeypatch.setattr("sys.stdin", io.StringIO(block.group(1)))
    return block.group(2).splitlines()


def test_the_readme_shows_what_capacity_prints(capsys: pytest.CaptureFixture[str]) -> None:
    block = re.search(re.escape(COMMAND) + r"\n(.*?)\n```", section(), re.S)
    assert block is not None, f"README.md shows no output of `{COMMAND[2:]}`"
    assert main(argv()) == 0
    assert capsys.readouterr().out.splitlines() == block.group(1).splitlines()


def test_the_readme_shows_what_a_mix_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = mix_example(monkeypatch)
    assert main(argv(MIX)) == 0
    assert capsys.readouterr().out.splitlines() == shown


def test_the_readme_names_every_report_field(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main([*argv(), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    mix_example(monkeypatch)
    assert main([*argv(MIX), "-o", "json"]) == 0
    mix = json.loads(capsys.readouterr().out)
    documented = set(re.findall(r"^\| `(\w+)` \|", section(), re.M))
    # Only with a PodGroup, only with --allow-preemption:
    assert documented == {*report, *mix, "podGroup", "preemptions"}
    words = section()
    for name in [*report["pod"], *mix["pods"][0], *report["failReason"]]:
        assert f"`{name}`" in words, name
