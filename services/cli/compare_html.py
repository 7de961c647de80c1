"""The ``ksched compare --html`` page: one self-contained HTML file, readable offline
(inline CSS and SVG, no script, no external URL).

It shows, for configurations A and B side by side: the summary (cli.compare_report's
rows), the imbalance figures per resource, two grouped bar charts of utilization per
node — ``<svg id="chart-cpu">`` and ``<svg id="chart-memory">``, each node a pair of
bars, ``<rect class="bar bar-a">`` then ``<rect class="bar bar-b">``, each with a
``<title>`` giving the node, the configuration and requested / allocatable — the
FailedScheduling reasons by plugin and the table of pods placed differently. Every name
from the input (configuration paths, nodes, pods, plugins, reasons) is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from services.cli.compare import RESOURCES, Comparison, NodeLoad, RunResult
from services.cli.compare_report import (
    NONE,
    amount_text,
    percent,
    rejection_rows,
    summary_rows,
)

COLORS = {"a": "#3b6fb6", "b": "#e08a2c"}
"""Bar colour of each configuration."""
CHART_TITLES = {"cpu": "CPU utilization per node", "memory": "Memory utilization per node"}

_BAR, _GAP, _LEFT, _RIGHT = 22, 26, 52, 16
_TOP, _PLOT, _BOTTOM = 40, 200, 30
_LABEL_CHARS = 24
_CHAR_WIDTH = 6.5
"""Pixels per character of an 11 px label, about."""
_SLANT = 40
_COS, _SIN = math.cos(math.radians(_SLANT)), math.sin(math.radians(_SLANT))

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px 32px;
       color: #1d2430; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #d8dde6; padding-bottom: 4px; }
p.sub { color: #5b6573; margin: 0 0 12px; }
table { border-collapse: collapse; font-size: 14px; }
th, td { padding: 4px 12px; border-bottom: 1px solid #e6e9ef; text-align: left; }
th { background: #f3f5f8; font-weight: 600; }
th.num { text-align: right; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.sub { padding-left: 32px; color: #3a4350; }
.legend span { display: inline-block; margin-right: 18px; font-size: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 6px;
          vertical-align: -1px; border-radius: 2px; }
.charts { display: flex; flex-wrap: wrap; gap: 24px; }
.chart { overflow-x: auto; max-width: 100%; }
.chart svg { font-size: 11px; }
.none { color: #5b6573; font-style: italic; }
"""


def render_html(comparison: Comparison) -> str:
    """The whole page."""
    a, b = comparison.a, comparison.b
    seed = "none" if comparison.seed is None else str(comparison.seed)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>ksched compare</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>ksched compare</h1>",
        f'<p class="sub">The same pending pods and cluster under two configurations, '
        f"seed {escape(seed)}.</p>",
        _legend(a, b),
        "<h2>Summary</h2>",
        _table(summary_rows(a, b, spreads=False), header=["", "A", "B"]),
        "<h2>Imbalance</h2>",
        _imbalance(a, b),
        "<h2>Utilization per node (requests / allocatable)</h2>",
        '<div class="charts">',
        *(_chart(resource, a, b) for resource in RESOURCES),
        "</div>",
        "<h2>FailedScheduling by plugin (pods left pending)</h2>",
        _rejections(a, b),
        "<h2>Pods placed differently</h2>",
        _placed(comparison),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _legend(a: RunResult, b: RunResult) -> str:
    items = [
        f'<span><span class="swatch" style="background:{COLORS[side]}"></span>'
        f"{side.upper()}: {escape(run.config)}</span>"
        for side, run in (("a", a), ("b", b))
    ]
    return f'<p class="legend">{"".join(items)}</p>'


def _table(rows: Sequence[Sequence[str]], *, header: Sequence[str], numbers: int = 0) -> str:
    """A table; the last ``numbers`` columns right-aligned, a first cell indented by
    two spaces (a reason under its plugin) indented on the page."""
    first_number = len(header) - numbers if numbers else len(header)
    number = ' class="num"'
    head = "".join(
        f"<th{number if i >= first_number else ''}>{escape(h)}</th>" for i, h in enumerate(header)
    )
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            attr = number if numbers and i >= len(row) - numbers else ""
            if i == 0 and cell.startswith("  "):
                attr, cell = ' class="sub"', cell.strip()
            cells.append(f"<td{attr}>{escape(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _imbalance(a: RunResult, b: RunResult) -> str:
    rows = []
    for resource in RESOURCES:
        sa, sb = a.spread(resource), b.spread(resource)
        rows += [
            [resource, "mean", percent(sa.mean), percent(sb.mean)],
            [resource, "standard deviation", percent(sa.stddev), percent(sb.stddev)],
            [resource, "max - min", percent(sa.imbalance), percent(sb.imbalance)],
        ]
    return _table(rows, header=["resource", "figure", "A", "B"], numbers=2)


def _rejections(a: RunResult, b: RunResult) -> str:
    rows = rejection_rows(a, b)
    if len(rows) == 1:
        return '<p class="none">none</p>'
    return _table(rows[1:], header=rows[0], numbers=2)


def _placed(comparison: Comparison) -> str:
    placed = comparison.placed_differently
    if not placed:
        return '<p class="none">no pod placed differently</p>'
    rows = [[pod, a or NONE, b or NONE] for pod, a, b in placed]
    return f"<p>{len(placed)} pod(s)</p>" + _table(rows, header=["pod", "A", "B"])


def _label(name: str) -> str:
    """A node's name under its bars: its last characters when it is long (node names
    tend to differ at the end: ``worker-node-07``)."""
    return name if len(name) <= _LABEL_CHARS else "…" + name[1 - _LABEL_CHARS :]


def _chart(resource: str, a: RunResult, b: RunResult) -> str:
    """A grouped bar chart of ``resource`` utilization: per node A's bar, then B's.
    Node names wider than their pair of bars are written slanted, and the chart grows
    below and to the left to hold them."""
    loads_a = {n.name: n for n in a.nodes}
    loads_b = {n.name: n for n in b.nodes}
    names = list(loads_a) + [n for n in loads_b if n not in loads_a]
    group = 2 * _BAR + _GAP
    longest = max((len(_label(n)) * _CHAR_WIDTH for n in names), default=0.0)
    slanted = longest > group - 4
    left = max(_LEFT, int(longest * _COS - group / 2) + 8) if slanted else _LEFT
    bottom = int(longest * _SIN) + 24 if slanted else _BOTTOM
    width = max(left + len(names) * group + _RIGHT, 360)
    height = _TOP + _PLOT + bottom
    values = [n.utilization(resource) for n in (*a.nodes, *b.nodes)]
    top = max([1.0, *values])
    title = CHART_TITLES[resource]

    def y(fraction: float) -> float:
        return _TOP + _PLOT * (1 - fraction / top)

    out = [
        f'<div class="chart"><svg id="chart-{resource}" class="chart-svg" '
        f'xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="14" font-weight="600" font-size="13">{escape(title)}</text>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        ty = y(tick * top)
        out.append(
            f'<line x1="{left}" x2="{width - _RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" '
            f'stroke="{"#9aa3af" if tick == 0 else "#e6e9ef"}"/>'
            f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="#5b6573">'
            f"{tick * top * 100:.0f}%</text>"
        )
    for i, name in enumerate(names):
        x0 = left + _GAP / 2 + i * group
        for j, (side, loads) in enumerate((("a", loads_a), ("b", loads_b))):
            out.append(_bar(resource, side, loads.get(name), x0 + j * _BAR, y))
        x, ly = x0 + _BAR, _TOP + _PLOT + 16
        placed = (
            f'x="{x:.1f}" y="{ly}" text-anchor="end" transform="rotate(-{_SLANT} {x:.1f} {ly})"'
            if slanted
            else f'x="{x:.1f}" y="{ly}" text-anchor="middle"'
        )
        out.append(f"<text {placed}><title>{escape(name)}</title>{escape(_label(name))}</text>")
    out.append("</svg></div>")
    return "".join(out)


def _bar(
    resource: str, side: str, load: NodeLoad | None, x: float, y: Callable[[float], float]
) -> str:
    fraction = load.utilization(resource) if load is not None else 0.0
    top, bottom = y(fraction), y(0.0)
    tip = f"{load.name if load else NONE}, {side.upper()}: {percent(fraction)}"
    if load is not None:
        used = amount_text(resource, load.requested.get(resource, 0))
        total = amount_text(resource, load.allocatable.get(resource, 0))
        tip += f" ({used} / {total})"
    return (
        f'<rect class="bar bar-{side}" x="{x:.1f}" y="{top:.1f}" width="{_BAR - 2}" '
        f'height="{bottom - top:.1f}" fill="{COLORS[side]}"><title>{escape(tip)}</title></rect>'
        f'<text x="{x + (_BAR - 2) / 2:.1f}" y="{top - 3:.1f}" text-anchor="middle" '
        f'font-size="9" fill="#1d2430">{fraction * 100:.0f}</text>'
    )


__all__ = ["CHART_TITLES", "COLORS", "render_html"]
