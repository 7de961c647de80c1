"""The output of ``ksched compare`` (cli.compare): ``json`` (one line, the shape the
compare module documents) or ``table``, A and B side by side in each section:

- the counts, the utilization spread per resource (mean, standard deviation and
  max - min, as percentages), the largest free amount per resource with its node (cpu
  in cores or millicores, memory in binary units), the wall time;
- one row per node: cpu and memory utilization under A and under B;
- FailedScheduling by plugin (pods left pending): a row per plugin with the pods it
  rejected, a row per reason with the nodes it was given for;
- the pods placed differently: pod, A's node, B's node (``-``: none), or a line saying
  there are none.

``--html`` also writes the report page (cli.compare_html).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from services.cli.compare import RESOURCES, Comparison, RunResult
from services.cli.output import render_object
from services.common.resources import CPU

NONE = "-"
"""A pod's node when it has none (pending, or deleted by preemption)."""

_BINARY = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def cpu_text(millicores: int) -> str:
    """``2`` for 2000, ``1500m`` for 1500: as a manifest writes cpu."""
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def memory_text(amount: int) -> str:
    """Bytes in the largest binary unit that is at least 1, to 0.1: ``1.5Gi``, ``64Mi``."""
    for unit, size in _BINARY:
        if amount >= size:
            return f"{amount / size:.1f}".removesuffix(".0") + unit
    return str(amount)


def amount_text(resource: str, amount: int) -> str:
    return cpu_text(amount) if resource == CPU else memory_text(amount)


def percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def print_comparison(comparison: Comparison, output: str, out: TextIO) -> None:
    """``comparison`` as ``json`` (one line) or ``table``."""
    if output == "json":
        out.write(render_object(comparison.to_json(), "json"))
    else:
        out.write(table(comparison))
    out.flush()


def table(comparison: Comparison) -> str:
    """The whole table output, sections apart by a blank line."""
    a, b = comparison.a, comparison.b
    sections = [
        _rows([["", "A", "B"], *summary_rows(a, b)]),
        _rows(node_rows(a, b)),
        "FailedScheduling by plugin (pods left pending)\n" + _rejection_text(a, b),
        _placed_text(comparison),
    ]
    return "\n".join(sections)


def summary_rows(a: RunResult, b: RunResult, *, spreads: bool = True) -> list[list[str]]:
    """The summary section: counts, spreads (unless not ``spreads``), largest free
    amounts, wall time."""
    rows = [
        ["config", a.config, b.config],
        ["bound", str(a.bound), str(b.bound)],
        ["pending", str(a.pending), str(b.pending)],
        ["evicted", str(a.evicted), str(b.evicted)],
    ]
    for resource in RESOURCES if spreads else ():
        both = (a.spread(resource), b.spread(resource))
        rows.append([f"{resource} mean", *(percent(s.mean) for s in both)])
        rows.append([f"{resource} stddev", *(percent(s.stddev) for s in both)])
        rows.append([f"{resource} max-min", *(percent(s.imbalance) for s in both)])
    for resource in RESOURCES:
        cells = []
        for run in (a, b):
            node, amount = run.largest_free(resource)
            cells.append(f"{amount_text(resource, amount)} ({node or NONE})")
        rows.append([f"largest free {resource}", *cells])
    rows.append(["wall time", f"{a.wall_seconds:.2f} s", f"{b.wall_seconds:.2f} s"])
    return rows


def node_rows(a: RunResult, b: RunResult) -> list[list[str]]:
    """A header, then per node (A's order, then B's others) its utilization under each."""
    header = ["NODE"] + [f"{r.upper()} {side}" for r in RESOURCES for side in "AB"]
    loads_a = {n.name: n for n in a.nodes}
    loads_b = {n.name: n for n in b.nodes}
    names = list(loads_a) + [n for n in loads_b if n not in loads_a]
    rows = [header]
    for name in names:
        cells = [name]
        for resource in RESOURCES:
            for loads in (loads_a, loads_b):
                load = loads.get(name)
                cells.append(percent(load.utilization(resource)) if load else NONE)
        rows.append(cells)
    return rows


def rejection_rows(a: RunResult, b: RunResult) -> list[list[str]]:
    """``PLUGIN / REASON``, A, B: a plugin's pods, then its reasons' node counts."""
    plugins = sorted({*a.rejections, *b.rejections})
    rows = [["PLUGIN / REASON", "A", "B"]]
    for plugin in plugins:
        ra, rb = a.rejections.get(plugin), b.rejections.get(plugin)
        rows.append([plugin, *(f"{r.pods if r else 0} pod(s)" for r in (ra, rb))])
        reasons = list((ra.reasons if ra else {}) | (rb.reasons if rb else {}))
        for reason in reasons:
            counts = [r.reasons.get(reason, 0) if r else 0 for r in (ra, rb)]
            rows.append([f"  {reason}", *(f"{n} node(s)" for n in counts)])
    return rows


def _rejection_text(a: RunResult, b: RunResult) -> str:
    rows = rejection_rows(a, b)
    return _rows(rows) if len(rows) > 1 else "none\n"


def _placed_text(comparison: Comparison) -> str:
    placed = comparison.placed_differently
    if not placed:
        return "no pod placed differently\n"
    rows = [["POD", "A", "B"]] + [[pod, a or NONE, b or NONE] for pod, a, b in placed]
    return f"{len(placed)} pod(s) placed differently\n" + _rows(rows)


def _rows(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "".join(line.rstrip() + "\n" for line in lines)


def write_html(comparison: Comparison, path: Path) -> None:
    """The self-contained report page (cli.compare_html) at ``path``."""
    from services.cli.compare_html import render_html

    path.write_text(render_html(comparison), encoding="utf-8")


__all__ = [
    "NONE",
    "amount_text",
    "cpu_text",
    "memory_text",
    "node_rows",
    "percent",
    "print_comparison",
    "rejection_rows",
    "summary_rows",
    "table",
    "write_html",
]
