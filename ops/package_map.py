"""The README's package map, rendered from the packages' opening docstrings.

    python3 ops/package_map.py            # print the map
    python3 ops/package_map.py --write    # rewrite the block under README's "### Package map"
    python3 ops/package_map.py --check    # exit 1 when README.md and the docstrings differ

A package's ``__init__.py`` opens with what belongs in it (the first paragraph) and a
paragraph that starts ``Not here:`` (what does not, and where it lives instead). The map
shows both, one entry per package, in the order of :data:`ROOTS`, subpackages
alphabetically. It stops three levels down: a package below ``services/framework/plugins/``
is one plugin named after upstream's, and its parent's entry says so.

The script sits beside the other repository tools, not in a package: it describes the
repository and ships with none of it (nothing of ksched reads the README). It needs only
the standard library and reads the docstrings with :mod:`ast`, so nothing is imported and
it runs without the venv. tests/unit/ops/test_package_map.py keeps README.md in step.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ROOTS: tuple[tuple[str, int], ...] = (
    ("contracts", 2),
    ("services", 3),
    ("bench", 1),
    ("tests", 1),
)
"""The packages mapped, each with how many levels down the map goes from it."""

NOT_PACKAGES: tuple[tuple[str, str], ...] = (
    (
        "ops/",
        "examples, test and CI scripts, Dockerfile, requirements.lock, prometheus/ (scrape "
        "config), grafana/ (provisioning, dashboard), ha/ (the local HA deployment: "
        "ops/ha/up, status, down), this map's generator (package_map.py)",
    ),
    (
        "compose.yaml",
        "rabbitmq, redis, jaeger, prometheus, grafana and each service; the ha profile: "
        "3 RabbitMQ nodes, Redis with Sentinels, two replicas of each service",
    ),
)
"""Entries without a docstring to read: they are written here, once."""

NOT_HERE = "Not here:"
NAME_WIDTH = 22
WIDTH = 90
SECTION = re.compile(r"(^### Package map\n\n```\n)(.*?)(^```\n)", flags=re.S | re.M)
ROLE = re.compile(r":[a-z]+:`(~?)\.*([^`]+)`")


def docstring(package: Path) -> str:
    """The opening docstring of ``package/__init__.py``, or "" when it has none."""
    tree = ast.parse((package / "__init__.py").read_text(), filename=str(package))
    return ast.get_docstring(tree) or ""


def paragraphs(text: str) -> list[str]:
    """The docstring's paragraphs, each on one line."""
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def belongs(text: str) -> tuple[str, str | None]:
    """(what belongs, what does not or None): the first paragraph and the ``Not here:`` one."""
    found = paragraphs(text)
    summary = found[0] if found else ""
    not_here = next((p for p in found[1:] if p.startswith(NOT_HERE)), None)
    return summary, not_here


def plain(text: str) -> str:
    """Sphinx roles and literals as plain text (a ``~`` role keeps its last name)."""
    text = ROLE.sub(lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], text)
    return text.replace("``", "")


def packages(root: Path) -> list[tuple[Path, int]]:
    """(package, depth) in map order; depth 0 is a root of :data:`ROOTS`."""
    found: list[tuple[Path, int]] = []

    def walk(package: Path, depth: int, levels: int) -> None:
        found.append((package, depth))
        if depth + 1 >= levels:
            return
        for child in sorted(package.iterdir()):
            if (child / "__init__.py").is_file():
                walk(child, depth + 1, levels)

    for name, levels in ROOTS:
        walk(root / name, 0, levels)
    return found


def entry(name: str, depth: int, lines: list[str]) -> list[str]:
    """One map entry: the name in its column, each line wrapped beside or under it."""
    first = ("  " * depth + name).ljust(NAME_WIDTH)
    rest = " " * NAME_WIDTH
    out: list[str] = []
    for text in lines:
        lead = rest if out else first
        out.extend(
            textwrap.wrap(
                text,
                WIDTH,
                initial_indent=lead,
                subsequent_indent=rest,
                break_on_hyphens=False,
            )
        )
    return out


def render(root: Path = ROOT) -> str:
    """The map, as the README's code block holds it."""
    lines: list[str] = []
    for package, depth in packages(root):
        summary, not_here = belongs(docstring(package))
        texts = [plain(summary)] + ([plain(not_here)] if not_here else [])
        lines.extend(entry(package.name + "/", depth, texts))
    for name, text in NOT_PACKAGES:
        lines.extend(entry(name, 0, [text]))
    return "\n".join(lines) + "\n"


def readme_map(readme: str) -> str:
    """The block under the README's "### Package map" heading."""
    match = SECTION.search(readme)
    if match is None:
        raise ValueError('README.md has no "### Package map" heading followed by a ``` block')
    return match[2]


def rewrite(readme: str, rendered: str) -> str:
    """The README with the package map's block replaced by ``rendered``."""
    readme_map(readme)
    return SECTION.sub(lambda m: m[1] + rendered + m[3], readme, count=1)


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite README.md's package map")
    mode.add_argument("--check", action="store_true", help="exit 1 when README.md differs")
    args = parser.parse_args(argv)
    readme_path = root / "README.md"
    rendered = render(root)
    if args.write:
        readme_path.write_text(rewrite(readme_path.read_text(), rendered))
    elif args.check:
        if readme_map(readme_path.read_text()) != rendered:
            print("README.md's package map differs: run python3 ops/package_map.py --write")
            return 1
    else:
        sys.stdout.write(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
