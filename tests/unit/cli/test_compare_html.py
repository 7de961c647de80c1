"""``ksched compare --html``: the page is self-contained and escapes what it shows, and a
real browser (Debian's headless ``chromium``) renders it with no console error, both
charts and their bars present."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from services.cli.main import main
from tests.unit.cli.compare_support import node, pod, scoring, write, write_cluster

CHROMIUM = "/usr/bin/chromium"
BROWSER_TIMEOUT = 60.0
"""Seconds one headless chromium run may take (it takes a few on a busy machine)."""
CLUSTER = (node("n1"), node("n2"), pod("db", "2", "4Gi", node_name="n1"), pod("web", "1", "2Gi"))


def report(tmp_path: Path, capsys: pytest.CaptureFixture[str], b_name: str = "b.yaml") -> Path:
    """The page comparing LeastAllocated (A) with MostAllocated (B) on CLUSTER."""
    cluster = write_cluster(tmp_path, *CLUSTER)
    a = write(tmp_path, "a.yaml", scoring("LeastAllocated"))
    b = write(tmp_path, b_name, scoring("MostAllocated"))
    page = tmp_path / "report.html"
    argv = ["compare", cluster, "--config", a, "--config", b, "--html", str(page)]
    assert main(argv) == 0
    assert "placed differently" in capsys.readouterr().out  # the table as usual
    return page


def test_the_page_is_self_contained_and_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = report(tmp_path, capsys, b_name="<b>&.yaml").read_text()
    assert "&lt;b&gt;&amp;.yaml" in html
    assert "<b>&.yaml" not in html
    # Nothing to fetch: no script, no stylesheet or image by URL, no link out.
    assert not re.search(r"<script|<link|<img|\bsrc=|\bhref=|url\(", html)
    assert re.findall(r"https?://[^\"' ]+", html) == ["http://www.w3.org/2000/svg"] * 2
    for chart in ("chart-cpu", "chart-memory"):
        svg = re.search(rf'<svg id="{chart}".*?</svg>', html, re.S)
        assert svg is not None, chart
        # Two nodes: a bar for each under A and under B.
        assert len(re.findall(r'<rect class="bar bar-a"', svg.group(0))) == 2
        assert len(re.findall(r'<rect class="bar bar-b"', svg.group(0))) == 2
    assert "<td>default/web</td><td>n2</td><td>n1</td>" in html


def chromium(*flags: str, page: Path, profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={profile}",
            "--window-size=1280,1600",
            *flags,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT,
        check=False,
    )


def console_errors(stderr: str) -> list[str]:
    """The page's console messages (chromium logs each as ``…:CONSOLE…``) and uncaught
    exceptions; the page has no script, so any is an error."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def test_a_browser_renders_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs the package chromium)")
    page = report(tmp_path, capsys)
    shot = tmp_path / "report.png"
    rendered = chromium(f"--screenshot={shot}", page=page, profile=tmp_path / "profile-1")
    assert rendered.returncode == 0, rendered.stderr[-2000:]
    assert console_errors(rendered.stderr) == []
    png = shot.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) > 20_000  # a blank 1280x1600 page is a few kilobytes
    dumped = chromium("--dump-dom", page=page, profile=tmp_path / "profile-2")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    assert console_errors(dumped.stderr) == []
    dom = dumped.stdout
    for chart in ("chart-cpu", "chart-memory"):
        svg = re.search(rf'<svg id="{chart}".*?</svg>', dom, re.S)
        assert svg is not None, f"{chart} is not in the rendered page"
        assert len(re.findall(r'class="bar bar-[ab]"', svg.group(0))) == 4
    assert "no pod placed differently" not in dom
    assert re.search(r"<td>default/web</td>\s*<td>n2</td>\s*<td>n1</td>", dom)
