"""An explanation (``ksched.io/explain``, see framework.explain) as readable tables, as
kube-scheduler-simulator shows its results: a filter table (a row per node, a column
per filter plugin) and a score table (a column per score plugin, and the totals).

In the filter table a node rejected by a plugin shows the reasons under that plugin,
``passed`` under the plugins before it and ``-`` under those after it (they did not
run). A rejection by a plugin that is not a Filter plugin (PreFilter, or a node a
PreFilterResult excluded) gets a column of its own. Score cells read
``normalized (weighted)``; rows are ordered by total, the chosen node (marked ``*``)
first among equals. A preempting attempt adds the candidates of its preemption: a row
per node with its victims (``namespace/name (priority)``) and PDB violations, the
nominated node marked ``*``, and what decided it. A pod with ResourceClaims adds the
devices it gets on its node: a row per request (``driver/pool/device``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

NOT_RUN = "-"


def render(explanation: Mapping[str, Any], out: TextIO, chosen: str | None = None) -> None:
    """Write the filter and score tables of ``explanation`` to ``out``."""
    filters: dict[str, Any] = explanation.get("filter", {})
    scores: dict[str, Any] = explanation.get("score", {})
    out.write(
        f"Filter: {explanation.get('evaluatedNodes', 0)} nodes evaluated, "
        f"{explanation.get('feasibleNodes', 0)} feasible\n"
    )
    _write(out, filter_rows(explanation.get("filterPlugins", []), filters))
    if scores:
        out.write("Score: normalized (weighted)\n")
        _write(out, score_rows(scores, chosen))
    elif explanation.get("feasibleNodes", 0):
        out.write("Score: not scored (a single candidate)\n")
    preemption = explanation.get("preemption")
    if preemption:
        out.write(
            f"Preemption: nominated {preemption['nominatedNode']} ({preemption['decidedBy']})\n"
        )
        _write(out, preemption_rows(preemption))
    details = explanation.get("nodeDetails", {}).get("DynamicResources")
    if details:
        out.write("Devices (DynamicResources):\n")
        _write(out, device_rows(details))


def device_rows(details: Mapping[str, Any]) -> list[list[str]]:
    """The devices table: a header, then one row per request of each claim."""
    rows = [["CLAIM", "REQUEST", "DEVICE", "ALLOCATED"]]
    for name, entry in details["claims"].items():
        when = "now" if entry["allocated"] else "before"
        for device in entry["devices"]:
            where = f"{device['driver']}/{device['pool']}/{device['device']}"
            rows.append([f"{name} ({entry['claim']})", device["request"], where, when])
    return rows


def preemption_rows(preemption: Mapping[str, Any]) -> list[list[str]]:
    """The candidates table: a header, then one row per candidate node."""
    rows = [["CANDIDATE", "VICTIMS", "PDB VIOLATIONS"]]
    for candidate in preemption["candidates"]:
        marker = " *" if candidate["node"] == preemption["nominatedNode"] else ""
        victims = ", ".join(f"{v['pod']} ({v['priority']})" for v in candidate["victims"])
        rows.append([candidate["node"] + marker, victims, str(candidate["pdbViolations"])])
    return rows


def filter_rows(plugins: Sequence[str], filters: Mapping[str, Any]) -> list[list[str]]:
    """The filter table: a header, then one row per node."""
    columns = list(plugins)
    for verdict in filters.values():
        if isinstance(verdict, Mapping) and verdict["plugin"] not in columns:
            columns.append(verdict["plugin"])
    rows = [["NODE", *columns]]
    for node, verdict in filters.items():
        if not isinstance(verdict, Mapping):
            rows.append([node, *(str(verdict) for _ in columns)])
            continue
        at = columns.index(verdict["plugin"])
        rejected = ", ".join(verdict["reasons"]) or verdict["status"]
        cells = ["passed"] * at + [rejected] + [NOT_RUN] * (len(columns) - at - 1)
        if verdict["plugin"] not in plugins:  # not a Filter plugin: the filters did not run
            cells = [NOT_RUN] * at + [rejected] + [NOT_RUN] * (len(columns) - at - 1)
        rows.append([node, *cells])
    return rows


def score_rows(scores: Mapping[str, Any], chosen: str | None = None) -> list[list[str]]:
    """The score table: a header, then one row per scored node, best first."""
    plugins: list[str] = []
    for entry in scores.values():
        plugins += [name for name in entry["plugins"] if name not in plugins]
    rows = [["NODE", *plugins, "TOTAL"]]
    ranked = sorted(
        scores.items(), key=lambda item: (-item[1]["total"], item[0] != chosen, item[0])
    )
    for node, entry in ranked:
        cells = []
        for name in plugins:
            score = entry["plugins"].get(name)
            cells.append(f"{score['score']} ({score['weighted']})" if score else NOT_RUN)
        marker = " *" if node == chosen else ""
        rows.append([node + marker, *cells, str(entry["total"])])
    return rows


def _write(out: TextIO, rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        out.write(line.rstrip() + "\n")
