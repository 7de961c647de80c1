"""The README's "Two commands" are what CI runs, verbatim and in the README's order, and
ops/test counts every failing step, pytest's "no tests collected" included."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
OPS_TEST = ROOT / "ops" / "test"


def two_commands(readme: str) -> list[str]:
    """The ```sh blocks of the README's "## Two commands" section, one command each."""
    section = re.search(r"^## Two commands\n(.*?)(?=^## )", readme, flags=re.S | re.M)
    assert section is not None, 'README.md has no "## Two commands" section'
    blocks = re.findall(r"```sh\n(.*?)```", section.group(1), flags=re.S)
    return [block.strip() for block in blocks]


def test_the_readme_gives_two_one_line_commands() -> None:
    commands = two_commands(README.read_text())
    assert len(commands) == 2
    assert all("\n" not in command for command in commands)
    first, second = commands
    assert "python3 -m venv .venv" in first and "ksched simulate" in first
    assert second == "ops/test"


def test_ci_runs_the_readme_commands_verbatim_in_the_readme_order() -> None:
    lines = [line.strip() for line in CI_RUN.read_text().splitlines()]
    where = []
    for command in two_commands(README.read_text()):
        assert command in lines, f".ci/run does not run the README's command: {command}"
        where.append(lines.index(command))
    assert where == sorted(where), ".ci/run runs the README's commands out of order"
    called = [line for line in lines if re.fullmatch(r"readme_command_\d \|\| die .*", line)]
    assert [c.split()[0] for c in called] == ["readme_command_1", "readme_command_2"]


def step_function() -> str:
    """ops/test's ``step`` function, as written there."""
    match = re.search(r"^step\(\) \{\n.*?^\}\n", OPS_TEST.read_text(), flags=re.S | re.M)
    assert match is not None, "ops/test has no step() function"
    return match.group(0)


@pytest.mark.parametrize(
    ("command", "counted_as_failed"),
    [("return 0", False), ("return 1", True), ("return 5", True)],
    ids=["passes", "fails", "no-tests-collected"],
)
def test_ops_test_counts_a_failing_step(command: str, counted_as_failed: bool) -> None:
    script = (
        f"set -euo pipefail\nsteps_run=0\nfailed=()\n{step_function()}"
        f'pytest() {{ {command}; }}\nstep pytest pytest\necho "failed=${{#failed[@]}}"\n'
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"failed={int(counted_as_failed)}"
    if command == "return 5":
        assert "no tests were collected" in done.stdout


def ops_test_function(name: str) -> str:
    match = re.search(rf"^{name}\(\) \{{\n.*?^\}}\n", OPS_TEST.read_text(), flags=re.S | re.M)
    assert match is not None, f"ops/test has no {name}() function"
    return match.group(0)


@pytest.mark.parametrize(
    ("dev_extra", "installs"),
    [('["pytest>=8"]', False), ('["pytest>=8", "no-such-dev-tool-h1>=1"]', True)],
    ids=["all-present", "a-dev-tool-missing"],
)
def test_ops_test_installs_the_dev_tools_into_an_existing_venv(
    dev_extra: str, installs: bool, tmp_path: Path
) -> None:
    """The README's first command leaves a venv without the dev tools: ops/test must
    install them there (and install nothing when they are all present)."""
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "ksched"\ndependencies = ["msgspec>=0.18"]\n'
        f"[project.optional-dependencies]\ndev = {dev_extra}\n"
    )
    script = (
        f"set -euo pipefail\ncd {tmp_path}\nexport VIRTUAL_ENV=active-venv\n"
        # The real interpreter, except that pip only says what it was asked.
        f'python() {{ if [[ $1 == -m && $2 == pip ]]; then echo "PIP $*"; '
        f'else {sys.executable} "$@"; fi; }}\n'
        f"{ops_test_function('missing_packages')}{ops_test_function('ensure_venv')}"
        "ensure_venv\n"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    pip = [line for line in done.stdout.splitlines() if line.startswith("PIP ")]
    if installs:
        assert "missing: no-such-dev-tool-h1" in done.stdout
        assert len(pip) == 1 and pip[0].endswith("-e .[dev]")
    else:
        assert pip == []
